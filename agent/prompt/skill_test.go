package prompt

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestParseSkill(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		want     Skill // Name, Description, Always, Requires, Body
		problem  string
		wantLine int
	}{
		{
			name: "plain",
			in:   "---\nname: gh\ndescription: Work with GitHub\n  issues.\nalways: true\nrequires:\n  bins: [gh]\n  env: [GH_TOKEN]\n---\n# Use gh\n\nRun gh.\n",
			want: Skill{Name: "gh", Description: "Work with GitHub issues.", Always: true,
				Requires: Requires{Bins: []string{"gh"}, Env: []string{"GH_TOKEN"}}, Body: "# Use gh\n\nRun gh."},
		},
		{
			name: "name from the folder",
			in:   "---\ndescription: d\n---\nbody",
			want: Skill{Name: "dir", Description: "d", Body: "body"},
		},
		{
			name: "nanobot metadata as JSON",
			in:   "---\nname: weather\ndescription: Weather.\nmetadata: {\"nanobot\": {\"emoji\": \"☀\", \"requires\": {\"bins\": [\"curl\"]}, \"always\": false}}\n---\nx",
			want: Skill{Name: "weather", Description: "Weather.", Requires: Requires{Bins: []string{"curl"}}, Body: "x"},
		},
		{
			name: "openclaw metadata as YAML",
			in:   "---\nname: todo\ndescription: Tasks.\nmetadata:\n  openclaw:\n    requires:\n      env:\n        - TODOIST_API_KEY\n      anyBins: [docker, podman]\n    os: [linux, darwin]\n    primaryEnv: TODOIST_API_KEY\n---\n",
			want: Skill{Name: "todo", Description: "Tasks.", Requires: Requires{Env: []string{"TODOIST_API_KEY"}, AnyBins: []string{"docker", "podman"}, OS: []string{"linux", "darwin"}}},
		},
		{
			name: "openclaw metadata as a JSON string with a trailing comma",
			in:   "---\nname: bill\ndescription: Bills.\nmetadata: '{\"openclaw\": {\"always\": true, \"requires\": {\"bins\": [\"jq\"],},},}'\n---\n",
			want: Skill{Name: "bill", Description: "Bills.", Always: true, Requires: Requires{Bins: []string{"jq"}}},
		},
		{
			name: "clawdbot alias and unknown keys",
			in:   "---\nname: a\ndescription: b\nversion: 1.0.0\nlicense: MIT\nallowed-tools: [Bash]\nmetadata:\n  clawdbot: {requires: {bins: [x]}}\n  other: {requires: {bins: [y]}}\n---\n",
			want: Skill{Name: "a", Description: "b", Requires: Requires{Bins: []string{"x"}}},
		},
		{
			name: "windows line ends and a byte order mark",
			in:   "\ufeff---\r\nname: w\r\ndescription: d\r\n---\r\nbody\r\n",
			want: Skill{Name: "w", Description: "d", Body: "body"},
		},
		{name: "no front matter", in: "# Just markdown\n", problem: "no front matter", wantLine: 1},
		{name: "unclosed front matter", in: "---\nname: a\ndescription: b\n", problem: "no front matter", wantLine: 1},
		{
			name: "colons in a plain description, as many published skills write it",
			in:   "---\nname: pdf\ndescription: Use when: the user sends a PDF: read it\n  page by page.\nmetadata: {\"nanobot\": {\"requires\": {\"bins\": [\"pdftotext\"]}}}\n---\nbody",
			want: Skill{Name: "pdf", Description: "Use when: the user sends a PDF: read it page by page.", Requires: Requires{Bins: []string{"pdftotext"}}, Body: "body"},
		},
		{name: "bad YAML", in: "---\nname: a\ndescription: b\nx: : y\n[oops\n---\n", problem: "front matter: mapping values are not allowed", wantLine: 4},
		{name: "wrong type", in: "---\nname: a\ndescription: b\nalways: sometimes\n---\n", problem: "cannot unmarshal", wantLine: 4},
		{name: "not a mapping", in: "---\n- a\n- b\n---\n", problem: "must be keys and values", wantLine: 2},
		{name: "no description", in: "---\nname: a\n---\nbody", problem: "description is missing", wantLine: 2},
		{name: "bad metadata JSON", in: "---\nname: a\ndescription: b\nmetadata: '{\"nanobot\": [}'\n---\n", problem: "metadata: not valid JSON or YAML", wantLine: 4},
		{name: "bad metadata type", in: "---\nname: a\ndescription: b\nmetadata:\n  nanobot:\n    requires:\n      bins: {a: b}\n---\n", problem: "metadata: nanobot:", wantLine: 7},
		{name: "two-line name", in: "---\nname: \"a\\nb\"\ndescription: b\n---\n", problem: "name must be one line", wantLine: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := parseSkill([]byte(tt.in), "dir", "skills/dir/SKILL.md")
			if tt.problem != "" {
				if got.Problem == nil || !strings.Contains(got.Problem.Msg, tt.problem) || got.Problem.Line != tt.wantLine {
					t.Fatalf("parseSkill() problem = %v, want line %d containing %q", got.Problem, tt.wantLine, tt.problem)
				}
				if !strings.HasPrefix(got.Problem.Error(), "skills/dir/SKILL.md:") {
					t.Errorf("problem %q does not name the file", got.Problem)
				}
				return
			}
			if got.Problem != nil {
				t.Fatalf("parseSkill() problem = %v", got.Problem)
			}
			got.File = ""
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("parseSkill() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSkillCheck(t *testing.T) {
	look := func(name string) (string, error) {
		if name == "git" || name == "podman" {
			return "/usr/bin/" + name, nil
		}
		return "", errNotFound
	}
	env := func(name string) string { return map[string]string{"SET": "1"}[name] }
	sk := Skill{Requires: Requires{Bins: []string{"git", "gh"}, AnyBins: []string{"docker", "podman"}, Env: []string{"SET", "UNSET"}}}
	sk.check(look, env)
	if want := []string{"bin gh", "env UNSET"}; !cmp.Equal(sk.Missing, want) {
		t.Errorf("Missing = %q, want %q", sk.Missing, want)
	}
	sk = Skill{Requires: Requires{AnyBins: []string{"docker", "nerdctl"}, OS: []string{"plan9"}}}
	sk.check(look, env)
	if len(sk.Missing) != 2 || sk.Missing[0] != "one of bins docker, nerdctl" || !strings.HasPrefix(sk.Missing[1], "os plan9") {
		t.Errorf("Missing = %q", sk.Missing)
	}
}

func FuzzParseSkill(f *testing.F) {
	for _, seed := range []string{
		"---\nname: a\ndescription: b\n---\nbody",
		"---\nmetadata: '{\"nanobot\": {\"always\": true}}'\ndescription: x\n---\n",
		"---\nmetadata:\n  openclaw:\n    requires: {bins: [a]}\n---\n",
		"---\n---\n", "---\n: :\n---", "---\n&a [*a]\n---\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		sk := parseSkill([]byte(in), "dir", "f")
		if sk.Problem == nil {
			if sk.Description == "" || strings.ContainsAny(sk.Name, "\r\n") {
				t.Fatalf("parseSkill(%q) = %+v: accepted without a description or with a broken name", in, sk)
			}
			if !utf8.ValidString(sk.Body) {
				t.Fatalf("parseSkill(%q): body is not UTF-8", in)
			}
		}
	})
}

var errNotFound = errors.New("not found")
