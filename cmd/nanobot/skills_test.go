package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/openai/openaitest"
)

func writeWorkspaceFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestOnboardWritesStarterFiles(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "workspace")
	writeWorkspaceFile(t, filepath.Join(ws, "USER.md"), "my own notes about me")
	r := runCLI(t.Context(), "", "onboard", "--non-interactive", "--dir", dir, "--owner", "12345")
	if r.code != 0 {
		t.Fatalf("onboard = %d\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "AGENTS.md, HEARTBEAT.md") {
		t.Errorf("onboard output does not name the starter files:\n%s", r.stdout)
	}
	for _, name := range []string{"AGENTS.md", "HEARTBEAT.md"} {
		if b, err := os.ReadFile(filepath.Join(ws, name)); err != nil || len(b) == 0 {
			t.Errorf("%s: %q, %v", name, b, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "USER.md")); string(b) != "my own notes about me" {
		t.Errorf("USER.md was overwritten: %q", b)
	}
	writeWorkspaceFile(t, filepath.Join(ws, "AGENTS.md"), "edited")
	if r := runCLI(t.Context(), "", "onboard", "--non-interactive", "--dir", dir, "--force"); r.code != 0 {
		t.Fatalf("onboard --force = %d\n%s", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "AGENTS.md")); string(b) != "edited" {
		t.Errorf("onboard --force overwrote AGENTS.md: %q", b)
	}
}

func TestSkillsList(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "workspace")
	writeWorkspaceFile(t, filepath.Join(ws, "skills/deploy/SKILL.md"),
		"---\nname: deploy\ndescription: Deploy the site.\nmetadata: {\"openclaw\": {\"requires\": {\"bins\": [\"nanobot-test-missing-tool\"], \"env\": [\"NANOBOT_TEST_UNSET_VAR\"]}}}\n---\nsteps")
	writeWorkspaceFile(t, filepath.Join(ws, "skills/notes/SKILL.md"), "---\nname: notes\ndescription: Keep notes tidy.\n---\nsteps")
	writeWorkspaceFile(t, filepath.Join(ws, "skills/broken/SKILL.md"), "---\nname: broken\ndescription: x\nalways: [yes\n---\n")
	writeWorkspaceFile(t, filepath.Join(ws, "skills/heartbeat/SKILL.md"), "---\nname: heartbeat\ndescription: My own heartbeat notes.\n---\nmine")
	cfg := writeConfig(t, dir, "http://127.0.0.1:1/v1", nil)

	r := runCLI(t.Context(), "", "-c", cfg, "skills", "list")
	if r.code != 0 {
		t.Fatalf("skills list = %d\n%s", r.code, r.stderr)
	}
	rows := map[string]string{}
	for _, line := range strings.Split(r.stdout, "\n")[1:] {
		f := strings.Fields(line)
		if len(f) >= 3 {
			rows[f[0]+" "+f[2]] = line
		}
	}
	want := map[string][]string{
		"deploy skills/deploy/SKILL.md":       {"unavailable", "missing bin nanobot-test-missing-tool, env NANOBOT_TEST_UNSET_VAR"},
		"notes skills/notes/SKILL.md":         {"available", "Keep notes tidy."},
		"broken skills/broken/SKILL.md":       {"invalid", "skills/broken/SKILL.md:"},
		"heartbeat skills/heartbeat/SKILL.md": {"available", "My own heartbeat notes."},
		"heartbeat built-in":                  {"overridden", "replaced by skills/heartbeat"},
		"history-search built-in":             {"available"},
	}
	for key, parts := range want {
		line, ok := rows[key]
		if !ok {
			t.Errorf("skills list has no row for %s:\n%s", key, r.stdout)
			continue
		}
		for _, p := range parts {
			if !strings.Contains(line, p) {
				t.Errorf("row %q lacks %q", line, p)
			}
		}
	}

	if st := runCLI(t.Context(), "", "-c", cfg, "status"); !strings.Contains(st.stdout, "3 in the prompt, 2 left out (see nanobot skills list)") {
		t.Errorf("status does not count the skills:\n%s", st.stdout)
	}

	// The daemon starts all the same, and the model gets the usable skills only.
	stub := openaitest.NewServer(t)
	stub.Script(openaitest.Reply{Text: "ok"})
	cfg = writeConfig(t, dir, stub.URL(), nil)
	if r := runCLI(t.Context(), "", "-c", cfg, "agent", "-m", "hi"); r.code != 0 {
		t.Fatalf("agent = %d\n%s", r.code, r.stderr)
	}
	req, _ := stub.LastRequest()
	sys := req.Messages[0].Content
	for _, s := range []string{"- notes: Keep notes tidy. [skills/notes/SKILL.md]", "- heartbeat: My own heartbeat notes.", "[builtin:skills/history-search/SKILL.md]"} {
		if !strings.Contains(sys, s) {
			t.Errorf("system prompt lacks %q:\n%s", s, sys)
		}
	}
	for _, s := range []string{"deploy", "broken", "HEARTBEAT.md, the checklist"} {
		if strings.Contains(sys, s) {
			t.Errorf("system prompt holds %q", s)
		}
	}
}

func TestBuiltinSkillIsReadable(t *testing.T) {
	stub := openaitest.NewServer(t)
	stub.Script(
		openaitest.Reply{ToolCalls: []agent.ToolCall{{ID: "r", Name: "read_file", Arguments: `{"path":"builtin:skills/history-search/SKILL.md"}`}}},
		openaitest.Reply{Text: "read it"},
	)
	cfg := writeConfig(t, t.TempDir(), stub.URL(), nil)
	if r := runCLI(t.Context(), "", "-c", cfg, "agent", "-m", "what did we say in March?"); r.code != 0 {
		t.Fatalf("agent = %d\n%s", r.code, r.stderr)
	}
	if got := toolResult(t, stub, "r"); !strings.Contains(got, "# Searching HISTORY") {
		t.Errorf("read_file of the built-in skill = %q", got)
	}
}
