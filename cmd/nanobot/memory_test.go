package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/openai/openaitest"
	"github.com/nanobot-go/nanobot/memory"
)

func saveMemory(args string) openaitest.Reply {
	return openaitest.Reply{ToolCalls: []agent.ToolCall{{ID: "mem", Name: "save_memory", Arguments: args}}}
}

func TestSavedMemoryReachesTheNextRun(t *testing.T) {
	stub := openaitest.NewServer(t)
	stub.Script(
		saveMemory(`{"memory_update":"- The user's name is Ada.\n- Lives in Lisbon.","history_entry":"Ada introduced herself; she moved to Lisbon."}`),
		openaitest.Reply{Text: "Noted."},
		openaitest.Reply{Text: "You are Ada."},
	)
	dir := t.TempDir()
	cfg := writeConfig(t, dir, stub.URL(), nil)
	if r := runCLI(t.Context(), "", "-c", cfg, "agent", "-m", "I am Ada and I moved to Lisbon", "--session", "a"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	// A different session, after a restart: global memory follows the owner.
	if r := runCLI(t.Context(), "", "-c", cfg, "agent", "-m", "who am I?", "--session", "b"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	sys := stub.Requests()[2].Messages[0].Content
	if !strings.Contains(sys, "## Long-term memory") || !strings.Contains(sys, "The user's name is Ada.") {
		t.Errorf("system prompt lacks the saved memory:\n%s", sys)
	}
	r := runCLI(t.Context(), "", "-c", cfg, "memory", "history", "--search", "Lisbon")
	if r.code != 0 || !strings.Contains(r.stdout, "she moved to Lisbon") || !strings.HasPrefix(r.stdout, "[") {
		t.Errorf("memory history --search = %d %q %s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t.Context(), "", "-c", cfg, "memory", "show")
	if !strings.Contains(r.stdout, "Lives in Lisbon.") {
		t.Errorf("memory show = %q", r.stdout)
	}
}

func TestSearchHistoryToolSurvivesHostileQueries(t *testing.T) {
	stub := openaitest.NewServer(t)
	stub.Script(
		saveMemory(`{"history_entry":"Booked the dentist for Friday."}`),
		openaitest.Reply{ToolCalls: []agent.ToolCall{
			{ID: "q1", Name: "search_history", Arguments: `{"query":"dentist"}`},
			{ID: "q2", Name: "search_history", Arguments: `{"query":"\"dentist\" AND (NEAR* OR -\"x:y"}`},
			{ID: "q3", Name: "search_history", Arguments: `{"query":"volcano"}`},
		}},
		openaitest.Reply{Text: "Friday."},
	)
	cfg := writeConfig(t, t.TempDir(), stub.URL(), nil)
	if r := runCLI(t.Context(), "", "-c", cfg, "agent", "-m", "when is the dentist?"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	got := map[string]string{}
	for _, m := range stub.Requests()[2].Messages {
		if m.Role == "tool" {
			got[m.ToolCallID] = m.Content
		}
	}
	if !strings.Contains(got["q1"], "Booked the dentist for Friday.") || !strings.Contains(got["q1"], "[20") {
		t.Errorf("search by a word = %q", got["q1"])
	}
	if strings.HasPrefix(got["q2"], "Error") {
		t.Errorf("a query full of FTS operators failed: %q", got["q2"])
	}
	if strings.HasPrefix(got["q3"], "Error") || strings.Contains(got["q3"], "dentist") {
		t.Errorf("a query without matches = %q", got["q3"])
	}
}

func TestChatScopeKeepsMemoriesApart(t *testing.T) {
	stub := openaitest.NewServer(t)
	stub.Script(
		saveMemory(`{"memory_update":"- Secret plan of chat A: surprise party."}`),
		openaitest.Reply{Text: "Saved."},
		openaitest.Reply{Text: "Hello B."},
	)
	cfg := writeConfig(t, t.TempDir(), stub.URL(), map[string]string{"memory.scope": "chat"})
	if r := runCLI(t.Context(), "", "-c", cfg, "agent", "-m", "remember the plan", "--session", "a"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	if r := runCLI(t.Context(), "", "-c", cfg, "agent", "-m", "hi", "--session", "b"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	for _, m := range stub.Requests()[2].Messages {
		if strings.Contains(m.Content, "surprise party") {
			t.Fatalf("chat B's request contains chat A's memory: %q", m.Content)
		}
	}
	r := runCLI(t.Context(), "", "-c", cfg, "memory", "show", "--chat", "cli:a")
	if !strings.Contains(r.stdout, "surprise party") {
		t.Errorf("memory show --chat cli:a = %q %s", r.stdout, r.stderr)
	}
	if r := runCLI(t.Context(), "", "-c", cfg, "memory", "show"); r.code != exitUsage {
		t.Errorf("memory show without --chat under scope chat: exit %d, want %d", r.code, exitUsage)
	}
}

func TestConsolidationAtWindowShrinksRequests(t *testing.T) {
	stub := openaitest.NewServer(t)
	stub.Script(
		openaitest.Reply{Text: "a1"}, openaitest.Reply{Text: "a2"}, openaitest.Reply{Text: "a3"},
		saveMemory(`{"history_entry":"Talked about three things.","memory_update":"- Talks in threes"}`),
		openaitest.Reply{Text: "a4"},
	)
	cfg := writeConfig(t, t.TempDir(), stub.URL(), map[string]string{"memory.window": "4"})
	for _, m := range []string{"first topic", "second topic", "third topic", "fourth topic"} {
		if r := runCLI(t.Context(), "", "-c", cfg, "agent", "-m", m); r.code != 0 {
			t.Fatal(r.stderr)
		}
	}
	reqs := stub.Requests()
	if len(reqs) != 5 {
		t.Fatalf("%d requests, want 5 (three turns, consolidation, a turn)", len(reqs))
	}
	cons := reqs[3]
	if cons.ToolChoice == nil || len(cons.Tools) != 1 || cons.Tools[0].Function.Name != "save_memory" {
		t.Errorf("consolidation request: tool_choice %v, tools %v", cons.ToolChoice, cons.Tools)
	}
	if !strings.Contains(cons.Messages[1].Content, "first topic") {
		t.Errorf("consolidation request lacks the old messages:\n%s", cons.Messages[1].Content)
	}
	last := reqs[4]
	for _, m := range last.Messages[1:] {
		if strings.Contains(m.Content, "first topic") {
			t.Errorf("a consolidated message was still sent: %q", m.Content)
		}
	}
	if !strings.Contains(last.Messages[0].Content, "Talks in threes") {
		t.Errorf("the new MEMORY is not in the next prompt")
	}
	if len(last.Messages) >= len(reqs[2].Messages)+2 {
		t.Errorf("the request after consolidation has %d messages, the one before %d: it did not shrink", len(last.Messages), len(reqs[2].Messages))
	}
	// The consolidation call counts in the session's usage like the turns.
	r := runCLI(t.Context(), "", "-c", cfg, "usage")
	calls := ""
	for _, line := range strings.Split(r.stdout, "\n") {
		if f := strings.Fields(line); len(f) > 3 && f[1] == "cli:default" {
			calls = f[3] // DAY CHAT MODEL CALLS ...
		}
	}
	if calls != "5" {
		t.Errorf("usage shows %q calls for cli:default, want 5 (4 turns and the consolidation):\n%s", calls, r.stdout)
	}
}

func TestMemoryExportImport(t *testing.T) {
	stub := openaitest.NewServer(t)
	dir := t.TempDir()
	cfg := writeConfig(t, dir, stub.URL(), nil)

	// A nanobot workspace, as the Python assistant writes it.
	ws := filepath.Join(dir, "nanobot-workspace")
	os.MkdirAll(filepath.Join(ws, "memory"), 0o755)
	os.WriteFile(filepath.Join(ws, "memory", "MEMORY.md"), []byte("# Memory\n\n- Prefers tea.\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "memory", "HISTORY.md"), []byte(
		"[2026-01-02 10:00] Planned a trip to Porto.\nBooked the train.\n\n[2026-02-03 11:30] Bought a kettle.\n\n"), 0o644)
	r := runCLI(t.Context(), "", "-c", cfg, "memory", "import", ws)
	if r.code != 0 || !strings.Contains(r.stdout, "2 HISTORY entries") {
		t.Fatalf("import = %d %q %s", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(t.Context(), "", "-c", cfg, "memory", "import", ws); !strings.Contains(r.stdout, "0 HISTORY entries") {
		t.Errorf("second import added entries: %q", r.stdout)
	}
	out := filepath.Join(dir, "export")
	if r := runCLI(t.Context(), "", "-c", cfg, "memory", "export", out); r.code != 0 {
		t.Fatal(r.stderr)
	}
	mem, _ := os.ReadFile(filepath.Join(out, "MEMORY.md"))
	hist, _ := os.ReadFile(filepath.Join(out, "HISTORY.md"))
	if string(mem) != "# Memory\n\n- Prefers tea.\n" {
		t.Errorf("MEMORY.md = %q", mem)
	}
	want := "[2026-01-02 10:00] Planned a trip to Porto.\nBooked the train.\n\n[2026-02-03 11:30] Bought a kettle.\n\n"
	if string(hist) != want {
		t.Errorf("HISTORY.md = %q, want %q", hist, want)
	}
}

func TestMemoryEdit(t *testing.T) {
	stub := openaitest.NewServer(t)
	cfg := writeConfig(t, t.TempDir(), stub.URL(), nil)
	var out, errb syncBuffer
	a := &app{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: func(k string) string {
		if k == "EDITOR" {
			return `sh -c 'printf "%s" "- Edited by hand" > "$1"' editor`
		}
		return ""
	}}
	if err := a.run(t.Context(), []string{"-c", cfg, "memory", "edit"}); err != nil {
		t.Fatalf("memory edit: %v %s", err, errb.String())
	}
	r := runCLI(t.Context(), "", "-c", cfg, "memory", "show")
	if strings.TrimSpace(r.stdout) != "- Edited by hand" {
		t.Errorf("after edit: %q", r.stdout)
	}
}

func TestLongStoredSessionStaysInBudget(t *testing.T) {
	stub := openaitest.NewServer(t)
	dir := t.TempDir()
	cfg := writeConfig(t, dir, stub.URL(), map[string]string{"agent.context_tokens": "4000", "memory.window": "100000"})
	st, err := memory.Open(t.Context(), filepath.Join(dir, "data", "nanobot.db"))
	if err != nil {
		t.Fatal(err)
	}
	var msgs []agent.Message
	for i := range 5000 {
		switch i % 4 {
		case 0:
			msgs = append(msgs, agent.Message{Role: agent.RoleUser, Content: fmt.Sprintf("question %d %s", i, strings.Repeat("words ", 30))})
		case 1:
			msgs = append(msgs, agent.Message{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: fmt.Sprint(i), Name: "list_dir", Arguments: `{"path":"."}`}}})
		case 2:
			msgs = append(msgs, agent.Message{Role: agent.RoleTool, ToolCallID: fmt.Sprint(i - 1), Name: "list_dir", Content: strings.Repeat("file.txt\n", 40)})
		case 3:
			msgs = append(msgs, agent.Message{Role: agent.RoleAssistant, Content: fmt.Sprintf("answer %d", i)})
		}
	}
	if err := st.Append(t.Context(), "cli:default", msgs...); err != nil {
		t.Fatal(err)
	}
	st.Close()
	stub.Script(
		openaitest.Reply{ToolCalls: []agent.ToolCall{{ID: "l", Name: "list_dir", Arguments: `{"path":"."}`}}},
		openaitest.Reply{Text: "done"},
	)
	// Then the session is over budget: consolidation folds it in chunks
	// that each fit a request.
	stub.SetDefault(saveMemory(`{"history_entry":"Asked many questions.","memory_update":"- Asks a lot"}`))
	if r := runCLI(t.Context(), "", "-c", cfg, "agent", "-m", "and now?"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	if n := stub.RequestCount(); n < 4 {
		t.Errorf("%d requests; want the turn's two and chunked consolidation calls", n)
	}
	for i, req := range stub.Requests() {
		total := 0
		for _, m := range req.Messages {
			total += len(m.Content)/4 + len(m.ToolCalls)*20 + 4
		}
		if total > 4000 {
			t.Errorf("request %d is about %d tokens, over the 4000 budget", i, total)
		}
		if req.Messages[1].Role != "user" {
			t.Errorf("request %d starts its history with %s, want user", i, req.Messages[1].Role)
		}
	}
}
