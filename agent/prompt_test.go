package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/prompt"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

type fixedMemory string

func (m fixedMemory) Memory(context.Context, agent.Turn) (string, error) { return string(m), nil }

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// promptWorkspace is a workspace with two prompt files and two skills, one
// of them always included, and one skill whose binary is missing.
func promptWorkspace(t *testing.T) string {
	t.Helper()
	ws := t.TempDir()
	writeFile(t, filepath.Join(ws, "AGENTS.md"), "Answer in short paragraphs.\nAsk before deleting anything.")
	writeFile(t, filepath.Join(ws, "USER.md"), "The user is Ada, a mathematician in London.")
	writeFile(t, filepath.Join(ws, "skills/release/SKILL.md"),
		"---\nname: release\ndescription: Cut a release of the user's projects: tag, changelog,\n  announcement.\n---\n# Releasing\nRun the tests first.")
	writeFile(t, filepath.Join(ws, "skills/tone/SKILL.md"),
		"---\nname: tone\ndescription: How to write to the user.\nmetadata: {\"openclaw\": {\"always\": true}}\n---\nUse British spelling. Never use exclamation marks.")
	writeFile(t, filepath.Join(ws, "skills/cloud/SKILL.md"),
		"---\nname: cloud\ndescription: Manage cloud servers.\nrequires:\n  bins: [nanobot-test-no-such-binary]\n---\nbody")
	return ws
}

func systemOf(t *testing.T, req agent.Request) string {
	t.Helper()
	if len(req.Messages) == 0 || req.Messages[0].Role != agent.RoleSystem {
		t.Fatalf("request without a system message: %+v", req.Messages)
	}
	return req.Messages[0].Content
}

func TestSystemPromptGolden(t *testing.T) {
	ws := promptWorkspace(t)
	src := prompt.New(ws, 4000, true, prompt.WithBuiltin(os.DirFS(t.TempDir())))
	p := &script{}
	clock := func() time.Time { return time.Date(2025, 3, 14, 9, 26, 0, 0, time.UTC) }
	l := agent.New(p, newHistory(), []agent.Tool{&echoTool{}}, agent.Config{Workspace: ws},
		agent.WithPromptSource(src), agent.WithMemory(fixedMemory("- Ada prefers tea.")), agent.WithClock(clock))
	if _, err := l.Run(t.Context(), turn, agent.Message{Content: "hi"}); err != nil {
		t.Fatal(err)
	}
	got := strings.ReplaceAll(systemOf(t, p.reqs()[0]), ws, "$WORKSPACE")
	golden := filepath.Join("testdata", "system_prompt.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("system prompt (-golden +got):\n%s", diff)
	}
	for _, s := range []string{"Use British spelling.", "- release: Cut a release of the user's projects: tag, changelog, announcement. [skills/release/SKILL.md]"} {
		if !strings.Contains(got, s) {
			t.Errorf("system prompt lacks %q", s)
		}
	}
	for _, s := range []string{"cloud", "Run the tests first."} {
		if strings.Contains(got, s) {
			t.Errorf("system prompt holds %q: an unavailable skill, or a listed skill's body", s)
		}
	}
}

func TestPromptFileEditReachesNextRequest(t *testing.T) {
	ws := promptWorkspace(t)
	p := &script{}
	l := agent.New(p, newHistory(), nil, agent.Config{Workspace: ws}, agent.WithPromptSource(prompt.New(ws, 0, true)))
	if _, err := l.Run(t.Context(), turn, agent.Message{Content: "who am I?"}); err != nil {
		t.Fatal(err)
	}
	user := filepath.Join(ws, "USER.md")
	writeFile(t, user, "The user is Grace, an admiral.")
	later := time.Now().Add(time.Minute) // apart from the first write on a coarse clock
	if err := os.Chtimes(user, later, later); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Run(t.Context(), turn, agent.Message{Content: "and now?"}); err != nil {
		t.Fatal(err)
	}
	reqs := p.reqs()
	if first := systemOf(t, reqs[0]); !strings.Contains(first, "Ada") {
		t.Errorf("first request lacks the first USER.md:\n%s", first)
	}
	if second := systemOf(t, reqs[1]); !strings.Contains(second, "Grace") || strings.Contains(second, "Ada") {
		t.Errorf("second request does not carry the edited USER.md:\n%s", second)
	}
}

// requestTokens is the estimate the loop budgets with.
func requestTokens(req agent.Request) int {
	n := 0
	for _, m := range req.Messages {
		n += agent.EstimateTokens(m)
	}
	for _, s := range req.Tools {
		n += (len(s.Name)+3)/4 + (len(s.Description)+3)/4 + len(s.Parameters)/4 + 4
	}
	return n
}

func TestOversizedPromptPartsStayInBudget(t *testing.T) {
	ws := promptWorkspace(t)
	writeFile(t, filepath.Join(ws, "USER.md"), strings.Repeat("The user likes long files. ", 4000))
	writeFile(t, filepath.Join(ws, "SOUL.md"), strings.Repeat("Be kind. ", 400))
	writeFile(t, filepath.Join(ws, "skills/tone/SKILL.md"),
		"---\nname: tone\ndescription: d\nalways: true\n---\n"+strings.Repeat("A long always skill. ", 2000))
	var logs bytes.Buffer
	p := &script{}
	cfg := agent.Config{Workspace: ws, ContextTokens: 3000, ReserveTokens: 500}
	l := agent.New(p, newHistory(), []agent.Tool{&echoTool{}}, cfg,
		agent.WithPromptSource(prompt.New(ws, 4000, true)),
		agent.WithMemory(fixedMemory(strings.Repeat("A fact. ", 800))),
		agent.WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))))
	for range 3 {
		if _, err := l.Run(t.Context(), turn, agent.Message{Content: "hello"}); err != nil {
			t.Fatal(err)
		}
	}
	for i, req := range p.reqs() {
		if n := requestTokens(req); n > cfg.ContextTokens-cfg.ReserveTokens {
			t.Errorf("request %d: %d tokens, over the budget of %d", i, n, cfg.ContextTokens-cfg.ReserveTokens)
		}
	}
	sys := systemOf(t, p.reqs()[0])
	for _, s := range []string{"## AGENTS.md\nAnswer in short paragraphs.", "## USER.md\nThe user likes long files.", "… [cut to fit the context budget]", "[skill tone left out"} {
		if !strings.Contains(sys, s) {
			t.Errorf("system prompt lacks %q:\n%s", s, sys)
		}
	}
	if strings.Count(logs.String(), "system prompt parts cut") != 1 {
		t.Errorf("want one warning over three turns, logs:\n%s", logs.String())
	}
	var rec struct{ Cut string }
	for line := range strings.SplitSeq(strings.TrimSpace(logs.String()), "\n") {
		if strings.Contains(line, "system prompt parts cut") {
			_ = json.Unmarshal([]byte(line), &rec)
		}
	}
	if !strings.Contains(rec.Cut, "USER.md (capped)") || !strings.Contains(rec.Cut, "skill tone") {
		t.Errorf("warning names %q, want the capped USER.md and the cut skill", rec.Cut)
	}
}
