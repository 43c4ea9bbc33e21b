package schedule

import (
	"errors"
	"testing"
	"time"
)

func TestLocalName(t *testing.T) {
	noLink := func(string) (string, error) { return "", errors.New("no link") }
	link := func(target string) func(string) (string, error) {
		return func(string) (string, error) { return target, nil }
	}
	cet := time.FixedZone("CET", 3600)
	at := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		tz       string
		readlink func(string) (string, error)
		now      time.Time
		want     string
	}{
		{"TZ", "Europe/Berlin", noLink, at, "Europe/Berlin"},
		{"TZ with colon", ":Asia/Tokyo", noLink, at, "Asia/Tokyo"},
		{"TZ unknown, link", "Mars/Olympus", link("/usr/share/zoneinfo/America/New_York"), at, "America/New_York"},
		{"link", "", link("../usr/share/zoneinfo/Etc/UTC"), at, "Etc/UTC"},
		{"offset", "", noLink, at.In(cet), "CET, UTC+01:00"},
		{"negative offset", "", noLink, at.In(time.FixedZone("", -(3*3600 + 1800))), "UTC-03:30"},
		{"UTC", "", link("/somewhere/else"), at, "UTC"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := localName(tc.tz, tc.readlink, tc.now); got != tc.want {
				t.Errorf("localName(%q) = %q, want %q", tc.tz, got, tc.want)
			}
		})
	}
}
