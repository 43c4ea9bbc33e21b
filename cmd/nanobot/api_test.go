package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/openai/openaitest"
	"github.com/nanobot-go/nanobot/channels/telegram/telegramtest"
	"github.com/nanobot-go/nanobot/memory"
)

const apiKey = "phone-key-0123456789abcdef"

// apiValues are the config keys that serve the API on addr; withAPIKey
// adds the key.
func apiValues(addr string) map[string]string {
	return map[string]string{"api.listen": addr}
}

// withAPIKey gives the config at path one API key, for the phone.
func withAPIKey(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(data), "\n  keys: []", "\n  keys: [{key: \""+apiKey+"\", name: phone}]", 1)
	if edited == string(data) {
		t.Fatal("the example config has no api.keys line")
	}
	if err := os.WriteFile(path, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func apiClient(addr, key string) *goopenai.Client {
	cfg := goopenai.DefaultConfig(key)
	cfg.BaseURL = "http://" + addr + "/v1"
	return goopenai.NewClientWithConfig(cfg)
}

// rememberFact writes MEMORY before the gateway opens the database.
func rememberFact(t *testing.T, dir, fact string) {
	t.Helper()
	store, err := memory.Open(t.Context(), filepath.Join(dir, "data", "nanobot.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if err := store.SetMemory(t.Context(), memory.GlobalScope, fact); err != nil {
		t.Fatal(err)
	}
}

// TestAPIAnswersWithMemoryAndTools: an OpenAI client gets the
// assistant's answer, made with its memory and its own tools, and the
// conversation continues on the daemon's side.
func TestAPIAnswersWithMemoryAndTools(t *testing.T) {
	addr := freeAddr(t)
	tg := telegramtest.NewServer(t, botToken)
	model := openaitest.NewServer(t)
	dir := t.TempDir()
	rememberFact(t, dir, "- The owner's cat is called Miso.")
	h := &gatewayHarness{t: t, tg: tg, model: model, dir: dir, logs: &syncBuffer{}}
	h.cfg = withAPIKey(t, gatewayConfig(t, dir, tg, model, apiValues(addr)))
	if err := os.MkdirAll(filepath.Join(dir, "workspace"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "workspace", "notes.txt"), []byte("buy cat food"), 0o644); err != nil {
		t.Fatal(err)
	}
	h.start()
	t.Cleanup(func() { h.stop() })
	waitLogged(t, h.logs, "API listening")

	model.Script(
		openaitest.Reply{ToolCalls: []agent.ToolCall{{ID: "c1", Name: "list_dir", Arguments: `{"path":"."}`}}},
		openaitest.Reply{Text: "Miso needs cat food.", Usage: agent.Usage{PromptTokens: 900, CompletionTokens: 12}},
	)
	c := apiClient(addr, apiKey)
	resp, err := c.CreateChatCompletion(t.Context(), goopenai.ChatCompletionRequest{Model: "nanobot", Messages: []goopenai.ChatCompletionMessage{
		{Role: "system", Content: "You are a pirate."},
		{Role: "user", Content: "What does my cat need?"},
	}, Tools: []goopenai.Tool{{Type: "function", Function: &goopenai.FunctionDefinition{Name: "client_tool"}}}})
	if err != nil {
		t.Fatalf("%v\n%s", err, h.logs.String())
	}
	if got := resp.Choices[0].Message.Content; got != "Miso needs cat food." {
		t.Errorf("answer %q", got)
	}
	if resp.Usage.PromptTokens < 900 || resp.Usage.CompletionTokens < 12 {
		t.Errorf("usage %+v, want the turn's (both model calls)", resp.Usage)
	}
	reqs := model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls, want 2", len(reqs))
	}
	first := reqs[0]
	if !strings.Contains(first.Messages[0].Content, "Miso") {
		t.Error("the system prompt does not carry MEMORY")
	}
	var names []string
	for _, tool := range first.Tools {
		names = append(names, tool.Function.Name)
	}
	if all := strings.Join(names, ","); !strings.Contains(all, "list_dir") || strings.Contains(all, "client_tool") {
		t.Errorf("tools offered %s: want the assistant's own, not the client's", all)
	}
	for _, m := range first.Messages {
		if strings.Contains(m.Content, "pirate") {
			t.Error("the client's system prompt reached the model")
		}
	}
	if !mentions(reqs[1].Messages, "notes.txt") {
		t.Errorf("the tool result is not in the second call: %+v", reqs[1].Messages)
	}

	// The next request of the conversation continues it: the daemon's
	// history, not the client's, is what the model reads.
	model.Script(openaitest.Reply{Text: "You asked about Miso."})
	resp, err = c.CreateChatCompletion(t.Context(), goopenai.ChatCompletionRequest{Model: "nanobot",
		Messages: []goopenai.ChatCompletionMessage{{Role: "user", Content: "What did I ask?"}}})
	if err != nil {
		t.Fatal(err)
	}
	last, _ := model.LastRequest()
	if !mentions(last.Messages, "What does my cat need?") || !mentions(last.Messages, "Miso needs cat food.") {
		t.Errorf("the second turn does not see the first: %+v", last.Messages)
	}

	// `nanobot status` says where the API listens, for whom, and that it answers.
	st := runCLI(t.Context(), "", "-c", h.cfg, "status")
	if !strings.Contains(st.stdout, " "+addr+", 1 keys (phone), answering\n") {
		t.Errorf("status:\n%s", st.stdout)
	}

	// A stranger costs nothing.
	before := model.RequestCount()
	_, err = apiClient(addr, "sk-stranger-0123456789abcdef").CreateChatCompletion(t.Context(), goopenai.ChatCompletionRequest{
		Model: "nanobot", Messages: []goopenai.ChatCompletionMessage{{Role: "user", Content: "hi"}}})
	var apiErr *goopenai.APIError
	if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != 401 {
		t.Errorf("stranger: %v", err)
	}
	if model.RequestCount() != before {
		t.Error("a stranger's request reached the model")
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(h.logs.String(), apiKey) {
		t.Error("the API key appears in the logs")
	}
}

func mentions(msgs []goopenai.ChatCompletionMessage, s string) bool {
	for _, m := range msgs {
		if strings.Contains(m.Content, s) {
			return true
		}
	}
	return false
}

// TestAPIStreamsToolProgress: a streaming client sees the tool being
// called as it happens, then the answer and [DONE].
func TestAPIStreamsToolProgress(t *testing.T) {
	addr, admin := freeAddr(t), freeAddr(t)
	values := apiValues(addr)
	values["gateway.listen"] = admin
	h := startGatewayEdited(t, values, func(path string) { withAPIKey(t, path) })
	waitLogged(t, h.logs, "API listening")
	_, details, _ := httpGet(t.Context(), "http://"+admin+"/readyz")
	if !strings.Contains(details, "api: listening on "+addr+", 1 keys") {
		t.Errorf("/readyz details:\n%s", details)
	}
	release := make(chan struct{})
	h.model.Script(
		openaitest.Reply{ToolCalls: []agent.ToolCall{{ID: "c1", Name: "list_dir", Arguments: `{"path":"."}`}}},
		openaitest.Reply{Text: "Done looking.", Hold: release},
	)
	body := `{"model":"nanobot","stream":true,"messages":[{"role":"user","content":"look around"}]}`
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+addr+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+apiKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// The progress arrives while the turn still works (the answer is held).
	buf := make([]byte, 0, 4096)
	for !strings.Contains(string(buf), "list_dir done") {
		chunk := make([]byte, 1024)
		n, err := resp.Body.Read(chunk)
		buf = append(buf, chunk[:n]...)
		if err != nil {
			t.Fatalf("stream ended before the progress: %v\n%s", err, buf)
		}
	}
	if !strings.Contains(string(buf), ": calling list_dir") || strings.Contains(string(buf), "Done looking") {
		t.Errorf("before the answer: %s", buf)
	}
	close(release)
	rest, _ := io.ReadAll(resp.Body)
	all := string(buf) + string(rest)
	if !strings.Contains(all, `"content":"Done looking."`) || !strings.HasSuffix(all, "data: [DONE]\n\n") {
		t.Errorf("stream:\n%s", all)
	}
}

// TestAPIKillMidTurn: kill -9 while an API turn waits for the model; the
// next start finishes the turn once, and the conversation holds the
// answer once.
func TestAPIKillMidTurn(t *testing.T) {
	tg := telegramtest.NewServer(t, botToken)
	model := openaitest.NewServer(t)
	hold := make(chan struct{})
	defer close(hold)
	model.Script(openaitest.Reply{Hold: hold}, openaitest.Reply{Text: "answer after the crash"}, openaitest.Reply{Text: "second answer"})
	addr := freeAddr(t)
	cfg := withAPIKey(t, gatewayConfig(t, t.TempDir(), tg, model, apiValues(addr)))

	first := startDaemon(t, cfg)
	waitLogged(t, first.logs, "API listening")
	errs := make(chan error, 1)
	go func() {
		_, err := apiClient(addr, apiKey).CreateChatCompletion(context.WithoutCancel(t.Context()), goopenai.ChatCompletionRequest{
			Model: "nanobot", Messages: []goopenai.ChatCompletionMessage{{Role: "user", Content: "answer despite the crash"}}})
		errs <- err
	}()
	if _, err := model.WaitRequests(waitCtx(t), 1); err != nil {
		t.Fatalf("the model was not asked: %v\n%s", err, first.logs.String())
	}
	first.kill()
	if err := <-errs; err == nil {
		t.Error("the client of the killed daemon got an answer")
	}

	second := startDaemon(t, cfg)
	waitLogged(t, second.logs, "API listening")
	if _, err := model.WaitRequests(waitCtx(t), 2); err != nil {
		t.Fatal(err)
	}
	// The client asks again in the same conversation: the resumed turn
	// comes first, and its answer is in the history the model reads.
	resp, err := apiClient(addr, apiKey).CreateChatCompletion(t.Context(), goopenai.ChatCompletionRequest{
		Model: "nanobot", Messages: []goopenai.ChatCompletionMessage{{Role: "user", Content: "and now?"}}})
	if err != nil {
		t.Fatalf("%v\n%s", err, second.logs.String())
	}
	if got := resp.Choices[0].Message.Content; got != "second answer" {
		t.Errorf("answer %q", got)
	}
	second.terminate(t)
	reqs := model.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model calls, want 3 (held, resumed, next)", len(reqs))
	}
	count := func(msgs []goopenai.ChatCompletionMessage, s string) (n int) {
		for _, m := range msgs {
			if strings.Contains(m.Content, s) {
				n++
			}
		}
		return n
	}
	last := reqs[2].Messages
	if count(last, "answer despite the crash") != 1 || count(last, "answer after the crash") != 1 {
		t.Errorf("the conversation after the crash: %+v", last)
	}
}

// TestAPIBackgroundTaskReportsToTheConversation: a task spawned through
// the API reports in that conversation, and the client's next request
// reads the report in its history; nothing goes to Telegram.
func TestAPIBackgroundTaskReportsToTheConversation(t *testing.T) {
	addr := freeAddr(t)
	h := startGatewayEdited(t, apiValues(addr), func(path string) { withAPIKey(t, path) })
	waitLogged(t, h.logs, "API listening")
	m := lyonResearch()
	h.model.SetFunc(m.reply)
	ask := func(text string) string {
		resp, err := apiClient(addr, apiKey).CreateChatCompletion(t.Context(), goopenai.ChatCompletionRequest{
			Model: "nanobot", Messages: []goopenai.ChatCompletionMessage{{Role: "user", Content: text}}})
		if err != nil {
			t.Fatalf("%v\n%s", err, h.logs.String())
		}
		return resp.Choices[0].Message.Content
	}
	if got := ask("research Lyon"); got != "Started the research." {
		t.Fatalf("answer %q", got)
	}
	waitLoggedTimes(t, h.logs, 2, "turn finished", "session=api:phone")
	ask("thanks")
	req, _ := h.model.LastRequest()
	if !mentions(req.Messages, "The research is done") {
		t.Errorf("the next request's history lacks the report: %+v", req.Messages)
	}
	for _, sent := range h.tg.Sent() {
		if strings.Contains(sent.Text, "research") {
			t.Errorf("Telegram got %q", sent.Text)
		}
	}
}
