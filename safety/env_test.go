package safety

import (
	"slices"
	"testing"
)

func TestCommandEnv(t *testing.T) {
	daemon := []string{
		"PATH=/usr/bin", "HOME=/home/u", "LANG=C", "LC_TIME=de_DE.UTF-8", "TZ=UTC", "TERM=dumb", "USER=u",
		"GH_PAT=ghp_x", "DATABASE_URL=postgres://u:pw@h/db", "OPENAI_APIKEY=sk-x", "PGPASS=p", "SLACK_WEBHOOK=https://h/x",
		"AWS_SECRET_ACCESS_KEY=s", "FOO_TOKEN=t", "QUUX=innocuous", "GOPATH=/go", "NOTE=holds sk-live-1234 inside",
		"LISTED_CARRIER=sk-live-1234", "PWD=/somewhere/else",
	}
	secrets := []string{"sk-live-1234"}
	base := []string{"PATH=/usr/bin", "HOME=/home/u", "LANG=C", "LC_TIME=de_DE.UTF-8", "TZ=UTC", "TERM=dumb", "USER=u"}
	tests := []struct {
		name string
		pass []string
		want []string
	}{
		{"base only", nil, base},
		{"a listed name", []string{"GOPATH"}, append(slices.Clone(base), "GOPATH=/go")},
		{"a listed credential is the owner's choice", []string{"GH_PAT"}, append(slices.Clone(base), "GH_PAT=ghp_x")},
		{"a listed name holding a configured secret", []string{"LISTED_CARRIER", "NOTE"}, base},
		{"a listed name that is not set", []string{"ABSENT"}, base},
		{"a fixed value", []string{"PAGER=cat"}, append(slices.Clone(base), "PAGER=cat")},
		{"a fixed value replaces the daemon's", []string{"PATH=/opt/bin"}, append(slices.Clone(base[1:]), "PATH=/opt/bin")},
		{"a fixed value holding a configured secret", []string{"X=pre-sk-live-1234"}, base},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := CommandEnv(daemon, tc.pass, secrets)
			if !slices.Equal(got, tc.want) {
				t.Errorf("CommandEnv(%v) = %v, want %v", tc.pass, got, tc.want)
			}
		})
	}
}
