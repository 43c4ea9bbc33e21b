package prompt

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/nanobot-go/nanobot/agent"
)

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// noBins is a PATH on which nothing is found but git.
func noBins(name string) (string, error) {
	if name == "git" {
		return "/usr/bin/git", nil
	}
	return "", errNotFound
}

func newSource(t *testing.T, ws string, maxChars int) *Source {
	t.Helper()
	builtin := fstest.MapFS{
		"skills/history-search/SKILL.md": {Data: []byte("---\nname: history-search\ndescription: built-in search help\n---\nbuilt-in body")},
		"skills/heartbeat/SKILL.md":      {Data: []byte("---\nname: heartbeat\ndescription: built-in heartbeat help\n---\nbody")},
	}
	return New(ws, maxChars, true, WithBuiltin(builtin), WithEnv(func(string) string { return "" }, noBins))
}

func TestPromptFiles(t *testing.T) {
	ws := t.TempDir()
	write(t, filepath.Join(ws, "USER.md"), "I am Ada.")
	write(t, filepath.Join(ws, "AGENTS.md"), "Be brief.")
	write(t, filepath.Join(ws, "TOOLS.md"), strings.Repeat("é", 150))
	write(t, filepath.Join(ws, "NOTES.md"), "not a prompt file")
	src := newSource(t, ws, 100)

	parts, err := src.PromptParts(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range parts.Files {
		names = append(names, f.Name)
	}
	if got := strings.Join(names, " "); got != "AGENTS.md USER.md TOOLS.md" {
		t.Errorf("files = %s, want AGENTS.md USER.md TOOLS.md in that order", got)
	}
	tools := parts.Files[2]
	if !tools.Cut || !strings.HasPrefix(tools.Text, strings.Repeat("é", 100)+"\n… [cut: TOOLS.md is longer than the 100 characters") {
		t.Errorf("TOOLS.md = %+v, want its first 100 characters and the marker", tools)
	}

	// An edit shows on the next call; the file's time is set apart in case
	// the file system's clock is coarse.
	path := filepath.Join(ws, "USER.md")
	write(t, path, "I am Grace.")
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
	parts, _ = src.PromptParts(t.Context())
	if parts.Files[1].Text != "I am Grace." {
		t.Errorf("USER.md after the edit = %q", parts.Files[1].Text)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	parts, _ = src.PromptParts(t.Context())
	if len(parts.Files) != 2 {
		t.Errorf("after USER.md was removed: %+v", parts.Files)
	}
}

func TestPromptFileLinkOutsideWorkspace(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	write(t, filepath.Join(outside, "secret"), "root:x:0:0")
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(ws, "USER.md")); err != nil {
		t.Fatal(err)
	}
	parts, err := newSource(t, ws, 0).PromptParts(t.Context())
	if err == nil || len(parts.Files) != 0 {
		t.Errorf("PromptParts() = %+v, %v; want the link refused", parts.Files, err)
	}
	parts, err = New(ws, 0, false).PromptParts(t.Context())
	if err != nil || len(parts.Files) != 1 {
		t.Errorf("unrestricted: PromptParts() = %+v, %v; want the file", parts.Files, err)
	}
}

func TestSkills(t *testing.T) {
	ws := t.TempDir()
	write(t, filepath.Join(ws, "skills/github/SKILL.md"), "---\nname: github\ndescription: GitHub via gh\nmetadata: {\"nanobot\": {\"requires\": {\"bins\": [\"gh\"]}}}\n---\nuse gh")
	write(t, filepath.Join(ws, "skills/git/SKILL.md"), "---\nname: git\ndescription: Git\nrequires: {bins: [git]}\n---\nuse git")
	write(t, filepath.Join(ws, "skills/rules/SKILL.md"), "---\nname: rules\ndescription: House rules\nalways: true\n---\nNever push on Fridays.")
	write(t, filepath.Join(ws, "skills/history-search/SKILL.md"), "---\nname: history-search\ndescription: my own search help\n---\nmine")
	write(t, filepath.Join(ws, "skills/broken/SKILL.md"), "---\nname: broken\ndescription: b\nalways: maybe\n---\n")
	write(t, filepath.Join(ws, "skills/empty/README.md"), "no SKILL.md here")
	src := newSource(t, ws, 0)

	states := map[string]Skill{}
	for _, sk := range src.Skills() {
		key := sk.Name
		if sk.Builtin {
			key = "builtin " + sk.Name
		}
		states[key] = sk
	}
	want := map[string]string{
		"github": StateUnavailable, "git": StateAvailable, "rules": StateAlways, "history-search": StateAvailable,
		"broken": StateInvalid, "builtin history-search": StateOverridden, "builtin heartbeat": StateAvailable,
	}
	if len(states) != len(want) {
		t.Errorf("Skills() = %v, want %d skills", states, len(want))
	}
	for name, st := range want {
		if got := states[name].State(); got != st {
			t.Errorf("%s: state %q, want %q", name, got, st)
		}
	}
	if m := states["github"].Missing; len(m) != 1 || m[0] != "bin gh" {
		t.Errorf("github: missing %q, want [bin gh]", m)
	}
	if p := states["broken"].Problem; p == nil || !strings.HasPrefix(p.Error(), "skills/broken/SKILL.md:4: ") {
		t.Errorf("broken: problem %v, want one at skills/broken/SKILL.md:4", p)
	}

	parts, err := src.PromptParts(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]agent.SkillEntry{}
	for _, sk := range parts.Skills {
		got[sk.Name] = sk
	}
	if _, ok := got["github"]; ok {
		t.Error("a skill with a missing binary reached the prompt")
	}
	if _, ok := got["broken"]; ok {
		t.Error("a malformed skill reached the prompt")
	}
	if h := got["history-search"]; h.Description != "my own search help" || h.Path != "skills/history-search/SKILL.md" {
		t.Errorf("history-search = %+v, want the workspace's", h)
	}
	if hb := got["heartbeat"]; hb.Path != "builtin:skills/heartbeat/SKILL.md" {
		t.Errorf("heartbeat = %+v, want the built-in path", hb)
	}
	if r := got["rules"]; !r.Always || r.Body != "Never push on Fridays." {
		t.Errorf("rules = %+v, want always with its body", r)
	}
}

func TestBuiltinSkillsParse(t *testing.T) {
	src := New(t.TempDir(), 0, true)
	n := 0
	for _, sk := range src.Skills() {
		if sk.Problem != nil {
			t.Errorf("built-in %s: %v", sk.Name, sk.Problem)
		}
		n++
	}
	if n == 0 {
		t.Error("no built-in skills")
	}
}

func TestWriteStarters(t *testing.T) {
	ws := t.TempDir()
	write(t, filepath.Join(ws, "USER.md"), "mine")
	written, err := WriteStarters(ws)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(written, " ") != "AGENTS.md HEARTBEAT.md" {
		t.Errorf("written = %v, want AGENTS.md HEARTBEAT.md", written)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "USER.md")); string(b) != "mine" {
		t.Errorf("USER.md was overwritten: %q", b)
	}
	again, err := WriteStarters(ws)
	if err != nil || len(again) != 0 {
		t.Errorf("second run wrote %v, %v", again, err)
	}
}

// BenchmarkPromptParts is the per-turn cost of the workspace's prompt
// files and 20 skills when nothing changed: a stat of each file.
func BenchmarkPromptParts(b *testing.B) {
	ws := b.TempDir()
	for _, name := range FileNames {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(strings.Repeat("Some guidance. ", 100)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 20 {
		dir := filepath.Join(ws, "skills", fmt.Sprintf("s%02d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		skill := fmt.Sprintf("---\nname: s%02d\ndescription: Skill %d.\nmetadata: {\"nanobot\": {\"requires\": {\"bins\": [\"sh\"]}}}\n---\nbody", i, i)
		if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(skill), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	src := New(ws, 0, true)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := src.PromptParts(b.Context()); err != nil {
			b.Fatal(err)
		}
	}
}
