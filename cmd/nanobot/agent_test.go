package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/nanobot-go/nanobot"
	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/openai/openaitest"
	"github.com/nanobot-go/nanobot/config"
)

const testKey = "sk-test-very-secret-key-1234567890"

// writeConfig writes a config.yaml in a fresh directory from the example,
// pointed at the stub model, with extra keys set.
func writeConfig(t *testing.T, dir, modelURL string, extra map[string]string) string {
	t.Helper()
	values := map[string]string{
		"provider.base_url":    modelURL,
		"provider.api_key":     testKey,
		"provider.max_retries": "2",
		"provider.timeout":     "20s",
		"gateway.listen":       "",
		"web.listen":           "",
		"log.level":            "debug",
	}
	for k, v := range extra {
		values[k] = v
	}
	out, err := config.SetKeys(nanobot.ExampleConfig, values)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

type result struct {
	err            error
	code           int
	stdout, stderr string
}

// runCLI runs the program as main would, with stdin.
func runCLI(ctx context.Context, stdin string, args ...string) result {
	var out, errb bytes.Buffer
	a := &app{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
	err := a.run(ctx, args)
	code := exitCode(err, &errb)
	return result{err, code, out.String(), errb.String()}
}

func (r result) assertNoSecret(t *testing.T) {
	t.Helper()
	if strings.Contains(r.stdout+r.stderr, testKey) {
		t.Errorf("the API key appears in the output:\n%s\n%s", r.stdout, r.stderr)
	}
}

func TestAgentPlainAnswer(t *testing.T) {
	stub := openaitest.NewServer(t)
	stub.Script(openaitest.Reply{Text: "Hello! How can I help?"})
	cfg := writeConfig(t, t.TempDir(), stub.URL(), nil)

	r := runCLI(t.Context(), "", "-c", cfg, "agent", "-m", "hello")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "Hello! How can I help?" {
		t.Fatalf("agent -m = %d %q, stderr:\n%s", r.code, r.stdout, r.stderr)
	}
	r.assertNoSecret(t)
	req, _ := stub.LastRequest()
	if last := req.Messages[len(req.Messages)-1]; last.Role != "user" || said(last) != "hello" || !sentAt.MatchString(last.Content) {
		t.Errorf("last message sent = %+v", last)
	}
	if req.Stream {
		t.Error("request was streaming")
	}
	if auth := stub.Authorizations(); len(auth) != 1 || auth[0] != "Bearer "+testKey {
		t.Errorf("authorization = %q", auth)
	}
}

func TestAgentToolRound(t *testing.T) {
	stub := openaitest.NewServer(t)
	stub.Script(
		openaitest.Reply{ToolCalls: []agent.ToolCall{{ID: "call_w", Name: "write_file", Arguments: `{"path":"notes/todo.txt","content":"buy milk"}`}}},
		openaitest.Reply{Text: "Saved your note."},
	)
	dir := t.TempDir()
	cfg := writeConfig(t, dir, stub.URL(), nil)
	r := runCLI(t.Context(), "", "-c", cfg, "agent", "-m", "note: buy milk")
	if r.code != 0 || !strings.Contains(r.stdout, "Saved your note.") {
		t.Fatalf("agent = %d %q\n%s", r.code, r.stdout, r.stderr)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "workspace", "notes", "todo.txt")); err != nil || string(b) != "buy milk" {
		t.Errorf("file = %q, %v", b, err)
	}
	reqs := stub.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	m := reqs[1].Messages
	n := len(m)
	if m[n-2].Role != "assistant" || len(m[n-2].ToolCalls) != 1 || m[n-2].ToolCalls[0].ID != "call_w" ||
		m[n-2].ToolCalls[0].Function.Arguments != `{"path":"notes/todo.txt","content":"buy milk"}` {
		t.Errorf("assistant message = %+v", m[n-2])
	}
	// The reflection prompt follows the result, in the same message: no
	// user message after a tool message, which some providers refuse.
	if m[n-1].Role != "tool" || m[n-1].ToolCallID != "call_w" || !strings.HasSuffix(m[n-1].Content, "\n\n"+reflection) {
		t.Errorf("tool message = %+v, want the result and the reflection prompt", m[n-1])
	}
	names := map[string]bool{}
	for _, tool := range reqs[0].Tools {
		names[tool.Function.Name] = true
	}
	for _, want := range []string{"read_file", "write_file", "edit_file", "list_dir", "exec", "save_memory", "search_history", "read_history"} {
		if !names[want] {
			t.Errorf("tool %s not offered; offered %v", want, names)
		}
	}
}

func TestAgentMaxIterations(t *testing.T) {
	stub := openaitest.NewServer(t)
	var replies []openaitest.Reply
	for i := range 20 {
		replies = append(replies, openaitest.Reply{ToolCalls: []agent.ToolCall{{
			ID: fmt.Sprintf("c%d", i), Name: "write_file", Arguments: fmt.Sprintf(`{"path":"n.txt","content":"%d"}`, i)}}})
	}
	replies = append(replies, openaitest.Reply{Text: "I wrote n.txt twenty times; the rest is not done."})
	stub.Script(replies...)
	// A window larger than the turn keeps consolidation out of the count.
	cfg := writeConfig(t, t.TempDir(), stub.URL(), map[string]string{"memory.window": "200"})

	r := runCLI(t.Context(), "", "-c", cfg, "agent", "-m", "keep going")
	if r.code != 0 || !strings.Contains(r.stdout, "the rest is not done") {
		t.Fatalf("agent = %d %q\n%s", r.code, r.stdout, r.stderr)
	}
	reqs := stub.Requests()
	if len(reqs) != 21 {
		t.Fatalf("%d requests, want 21", len(reqs))
	}
	for i, req := range reqs[:20] {
		if len(req.Tools) == 0 {
			t.Errorf("request %d has no tools", i)
		}
	}
	// The wrap-up keeps the tools (the prefix the provider's cache holds;
	// some providers refuse tool calls in a history without tools) and
	// rules calls out.
	if len(reqs[20].Tools) != len(reqs[0].Tools) || reqs[20].ToolChoice != "none" {
		t.Errorf("the wrap-up request offers %d tools with tool_choice %v, want the same %d and none", len(reqs[20].Tools), reqs[20].ToolChoice, len(reqs[0].Tools))
	}
}

func TestAgentBrokenToolCalls(t *testing.T) {
	stub := openaitest.NewServer(t)
	stub.Script(
		openaitest.Reply{ToolCalls: []agent.ToolCall{
			{ID: "bad", Name: "read_file", Arguments: `{"path": `},
			{ID: "unknown", Name: "launch_rockets", Arguments: `{}`},
		}},
		openaitest.Reply{Text: "Recovered."},
	)
	cfg := writeConfig(t, t.TempDir(), stub.URL(), nil)
	r := runCLI(t.Context(), "", "-c", cfg, "agent", "-m", "try")
	if r.code != 0 || !strings.Contains(r.stdout, "Recovered.") {
		t.Fatalf("agent = %d %q\n%s", r.code, r.stdout, r.stderr)
	}
	m := stub.Requests()[1].Messages
	got := map[string]string{}
	for _, msg := range m {
		if msg.Role == "tool" {
			got[msg.ToolCallID] = msg.Content
		}
	}
	if !strings.HasPrefix(got["bad"], "Error: the arguments are not valid JSON") {
		t.Errorf("invalid JSON result = %q", got["bad"])
	}
	if !strings.HasPrefix(got["unknown"], `Error: unknown tool "launch_rockets"`) {
		t.Errorf("unknown tool result = %q", got["unknown"])
	}
}

func TestAgentRetriesThenAnswers(t *testing.T) {
	stub := openaitest.NewServer(t)
	stub.Script(
		openaitest.Reply{Status: 429, RetryAfter: "0"},
		openaitest.Reply{Status: 500},
		openaitest.Reply{Text: "third time lucky"},
	)
	cfg := writeConfig(t, t.TempDir(), stub.URL(), nil)
	r := runCLI(t.Context(), "", "-c", cfg, "agent", "-m", "hi")
	if r.code != 0 || !strings.Contains(r.stdout, "third time lucky") || stub.RequestCount() != 3 {
		t.Fatalf("agent = %d %q after %d requests\n%s", r.code, r.stdout, stub.RequestCount(), r.stderr)
	}
	for _, line := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
		if strings.Contains(line, "retrying") && !strings.Contains(line, "turn_id=") {
			t.Errorf("retry log line without the turn id: %s", line)
		}
	}
	if !strings.Contains(r.stderr, "retrying") {
		t.Errorf("no retry was logged:\n%s", r.stderr)
	}
	r.assertNoSecret(t)
}

func TestAgentPersistentOutageIsHonest(t *testing.T) {
	stub := openaitest.NewServer(t)
	stub.SetDefault(openaitest.Reply{Status: 503, RetryAfter: "0", Body: `{"error":{"message":"overloaded, key ` + testKey + `"}}`})
	cfg := writeConfig(t, t.TempDir(), stub.URL(), map[string]string{"provider.max_retries": "1"})
	r := runCLI(t.Context(), "", "-c", cfg, "agent", "-m", "hi")
	if r.code != 1 {
		t.Errorf("exit code %d, want 1", r.code)
	}
	if !strings.Contains(r.stdout, "Sorry, I cannot answer right now") || !strings.Contains(r.stdout, "503") {
		t.Errorf("stdout = %q, want an honest sentence naming the failure", r.stdout)
	}
	r.assertNoSecret(t)
}

func TestAgentRestartKeepsHistory(t *testing.T) {
	stub := openaitest.NewServer(t)
	stub.Script(openaitest.Reply{Text: "Nice to meet you, Ada."}, openaitest.Reply{Text: "You are Ada."})
	cfg := writeConfig(t, t.TempDir(), stub.URL(), nil)
	if r := runCLI(t.Context(), "", "-c", cfg, "agent", "-m", "I am Ada"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	if r := runCLI(t.Context(), "", "-c", cfg, "agent", "-m", "who am I?"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	var contents []string
	for _, m := range stub.Requests()[1].Messages[1:] {
		contents = append(contents, m.Role+": "+said(m))
	}
	want := []string{"user: I am Ada", "assistant: Nice to meet you, Ada.", "user: who am I?"}
	if strings.Join(contents, "|") != strings.Join(want, "|") {
		t.Errorf("second run sent %q, want %q", contents, want)
	}
}

func TestAgentInteractive(t *testing.T) {
	stub := openaitest.NewServer(t)
	stub.Script(openaitest.Reply{Text: "one"}, openaitest.Reply{Text: "two"})
	cfg := writeConfig(t, t.TempDir(), stub.URL(), nil)
	r := runCLI(t.Context(), "first\nsecond\n", "-c", cfg, "agent", "--session", "work")
	if r.code != 0 || !strings.Contains(r.stdout, "one") || !strings.Contains(r.stdout, "two") {
		t.Fatalf("interactive = %d %q\n%s", r.code, r.stdout, r.stderr)
	}
}

// The terminal's commands are answered by the chat: /status and /help
// never reach the model, and /new folds the session into memory and
// starts over, so the next request carries none of what was said before.
func TestAgentCommands(t *testing.T) {
	stub := openaitest.NewServer(t)
	stub.Script(
		openaitest.Reply{Text: "Noted, you like sailing."},
		openaitest.Reply{ToolCalls: []agent.ToolCall{{ID: "s", Name: "save_memory",
			Arguments: `{"history_entry":"Talked about sailing.","memory_update":"- Likes sailing"}`}}},
		openaitest.Reply{Text: "Fresh start."},
	)
	cfg := writeConfig(t, t.TempDir(), stub.URL(), nil)
	r := runCLI(t.Context(), "I like sailing\n/status\n/help\n/new\nhello again\n", "-c", cfg, "agent")
	if r.code != 0 {
		t.Fatalf("agent = %d %q\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"Noted, you like sailing.\nModel: ", "\nThis session: idle, 0 waiting\nAll chats: 0 running, 0 waiting\n",
		"\n/new: start a fresh conversation\n", "\nStarted a new conversation. What's next?\nFresh start.\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("agent printed %q, want it to hold %q", r.stdout, want)
		}
	}
	reqs := stub.Requests()
	if len(reqs) != 3 {
		t.Fatalf("the model got %d requests, want the first message, the consolidation of /new and the next message", len(reqs))
	}
	if reqs[1].ToolChoice == nil || !strings.Contains(reqs[1].Messages[1].Content, "I like sailing") {
		t.Errorf("/new did not consolidate the session first: %+v", reqs[1])
	}
	var sent []string
	for _, m := range reqs[2].Messages[1:] {
		sent = append(sent, m.Role+": "+said(m))
	}
	if want := []string{"user: hello again"}; !slices.Equal(sent, want) {
		t.Errorf("after /new the model got %q, want %q", sent, want)
	}
	if !strings.Contains(reqs[2].Messages[0].Content, "- Likes sailing") {
		t.Error("the fresh session's prompt lacks the consolidated memory")
	}

	r = runCLI(t.Context(), "", "-c", cfg, "agent", "-m", "/status")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "Model: ") || !strings.Contains(r.stdout, "\nThis session: idle") {
		t.Errorf("agent -m /status = %d %q\n%s", r.code, r.stdout, r.stderr)
	}
	for _, m := range stub.Requests()[3:] {
		t.Errorf("agent -m /status reached the model: %+v", m)
	}
}

func TestConfigErrorsExit78(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	os.WriteFile(path, []byte("agent:\n  max_iterations: 500\n"), 0o600)
	r := runCLI(t.Context(), "", "-c", path, "agent", "-m", "hi")
	if r.code != exitConfig || !strings.Contains(r.stderr, path+":2: agent.max_iterations: must be between 1 and 200") {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
	r = runCLI(t.Context(), "", "-c", filepath.Join(dir, "missing.yaml"), "config", "check")
	if r.code != exitConfig {
		t.Errorf("missing file: exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestConfigCheckRedactsSecrets(t *testing.T) {
	cfg := writeConfig(t, t.TempDir(), "http://127.0.0.1:1/v1", nil)
	r := runCLI(t.Context(), "", "config", "check", cfg)
	if r.code != 0 || !strings.Contains(r.stdout, "is valid") || !strings.Contains(r.stdout, "REDACTED") {
		t.Fatalf("config check = %d %q %q", r.code, r.stdout, r.stderr)
	}
	r.assertNoSecret(t)
}

// A budget the system prompt and the tool schemas nearly fill is valid
// but warned about, with the figure that would do; the default is not.
func TestConfigCheckWarnsOfASmallBudget(t *testing.T) {
	for _, tt := range []struct {
		budget string
		warned bool
	}{{"2000", true}, {"32000", false}} {
		cfg := writeConfig(t, t.TempDir(), "http://127.0.0.1:1/v1", map[string]string{"agent.context_tokens": tt.budget})
		r := runCLI(t.Context(), "", "config", "check", cfg)
		if r.code != 0 || !strings.Contains(r.stdout, "is valid") {
			t.Fatalf("config check = %d %q %q", r.code, r.stdout, r.stderr)
		}
		warning := regexp.MustCompile(`# warning: agent.context_tokens: ` + tt.budget + ` leaves about \d+ tokens for the conversation .* set it to at least (\d+)`).FindStringSubmatch(r.stdout)
		if (warning != nil) != tt.warned {
			t.Errorf("budget %s: warned %v, want %v:\n%s", tt.budget, warning != nil, tt.warned, r.stdout)
		}
		if warning == nil {
			continue
		}
		// The figure it names is enough: checked with it, no warning.
		cfg = writeConfig(t, t.TempDir(), "http://127.0.0.1:1/v1", map[string]string{"agent.context_tokens": warning[1]})
		if r := runCLI(t.Context(), "", "config", "check", cfg); strings.Contains(r.stdout, "# warning: agent.context_tokens") {
			t.Errorf("budget %s, as advised: still warned:\n%s", warning[1], r.stdout)
		}
	}
}

func TestUnknownCommand(t *testing.T) {
	if r := runCLI(t.Context(), "", "fly"); r.code != exitUsage {
		t.Errorf("exit %d, want %d", r.code, exitUsage)
	}
	if r := runCLI(t.Context(), "", "version"); r.code != 0 || !strings.HasPrefix(r.stdout, "nanobot ") {
		t.Errorf("version = %d %q", r.code, r.stdout)
	}
}

// An empty -m is a mistake, not a request for the interactive chat.
func TestAgentEmptyMessage(t *testing.T) {
	stub := openaitest.NewServer(t)
	cfg := writeConfig(t, t.TempDir(), stub.URL(), nil)
	for _, args := range [][]string{{"-m", ""}, {"--message="}, {"-m", "  "}} {
		r := runCLI(t.Context(), "hello\n", append([]string{"-c", cfg, "agent"}, args...)...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "-m: the message is empty") || r.stdout != "" {
			t.Errorf("agent %q = %d %q %q, want exit %d and the empty message named", args, r.code, r.stdout, r.stderr, exitUsage)
		}
	}
	if n := stub.RequestCount(); n != 0 {
		t.Errorf("an empty -m made %d model requests", n)
	}
}

// Input that is not a terminal is read line by line and only the answers
// are printed: no banner, no prompts.
func TestAgentPipedInput(t *testing.T) {
	stub := openaitest.NewServer(t)
	stub.Script(openaitest.Reply{Text: "one"}, openaitest.Reply{Text: "two"})
	cfg := writeConfig(t, t.TempDir(), stub.URL(), nil)
	r := runCLI(t.Context(), "first\n\nsecond\n", "-c", cfg, "agent")
	if r.code != 0 || r.stdout != "one\ntwo\n" {
		t.Errorf("piped agent = %d %q, want %q\n%s", r.code, r.stdout, "one\ntwo\n", r.stderr)
	}
}

// A pipe and /dev/null are no terminal, though /dev/null is a character
// device.
func TestIsTerminal(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	for name, in := range map[string]io.Reader{"pipe": r, "/dev/null": null, "reader": strings.NewReader("x")} {
		if isTerminal(in) {
			t.Errorf("isTerminal(%s) = true, want false", name)
		}
	}
}

// The far side of a pseudo-terminal is a terminal.
func TestIsTerminalPTY(t *testing.T) {
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	defer ptmx.Close()
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Skipf("unlock the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Skipf("name the pseudo-terminal: %v", err)
	}
	pts, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("open the pseudo-terminal: %v", err)
	}
	defer pts.Close()
	if !isTerminal(pts) {
		t.Error("isTerminal(pseudo-terminal) = false, want true")
	}
}
