package main

import (
	"fmt"
	"os"
	"strings"
	"testing"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/nanobot-go/nanobot/agent/openai/openaitest"
)

// The configured endpoint is down: its fallback answers, /status and the
// usage name it, and the log says a fallback answered.
func TestGatewayFallsBack(t *testing.T) {
	backup := openaitest.NewServer(t)
	backup.SetDefault(openaitest.Reply{Text: "answered by the backup"})
	h := startGateway(t, map[string]string{"provider.max_retries": "1"})
	h.model.SetDefault(openaitest.Reply{Status: 503})
	h.stop()
	setFallback(t, h.cfg, backup.URL(), "sk-backup-key-123", "backup-model")
	h.start()

	h.tg.SendText(owner, owner, "ada", "hello")
	waitSentContaining(t, h.tg, owner, "answered by the backup")
	if n := h.model.RequestCount(); n != 2 {
		t.Errorf("the primary got %d requests, want 2 (one retry, then the fallback)", n)
	}
	h.tg.SendText(owner, owner, "ada", "/status")
	status := waitSentContaining(t, h.tg, owner, "Model:")
	if !strings.Contains(status.Text, "fallback backup-model@127.0.0.1") {
		t.Errorf("/status = %q, want it to name the fallback that answered", status.Text)
	}
	waitLogged(t, h.logs, "a fallback model endpoint answered", "backup-model@")
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(h.logs.String(), "sk-backup-key-123") {
		t.Error("the fallback's API key appears in the log")
	}
	r := runCLI(t.Context(), "", "usage", "-c", h.cfg)
	if len(linesWith(r.stdout, "telegram:111", "backup-model")) != 1 {
		t.Errorf("usage has no row for the backup model:\n%s%s", r.stdout, r.stderr)
	}
}

// An endpoint whose window is smaller than agent.context_tokens refuses a
// long conversation; the user still gets an answer, and the log says which
// budget worked.
func TestContextOverflowNeverReachesTheUser(t *testing.T) {
	stub := openaitest.NewServer(t)
	// A window no consolidation reaches, so every request is the turn's.
	cfg := writeConfig(t, t.TempDir(), stub.URL(), map[string]string{"agent.context_tokens": "32000", "memory.window": "1000"})
	for i := range 30 {
		stub.Script(openaitest.Reply{Text: strings.Repeat("a long answer ", 300)})
		if r := runCLI(t.Context(), "", "agent", "-c", cfg, "-m", "question "+strings.Repeat("x", 3000)); r.code != 0 {
			t.Fatalf("turn %d: %d %s", i, r.code, r.stderr)
		}
	}
	refuse := `{"error":{"message":"This model's maximum context length is 16384 tokens. However, your messages resulted in 30000 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}`
	stub.Script(openaitest.Reply{Status: 400, Body: refuse}, openaitest.Reply{Text: "short enough now"})
	r := runCLI(t.Context(), "", "agent", "-c", cfg, "-m", "and now?")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "short enough now" {
		t.Fatalf("agent = %d %q, want the answer after the refit; stderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "a smaller budget worked") || !strings.Contains(r.stderr, "worked=12288") {
		t.Errorf("the log does not say which budget worked:\n%s", r.stderr)
	}
	// The turn's requests, not the background consolidation's (one forced tool).
	var reqs []goopenai.ChatCompletionRequest
	for _, q := range stub.Requests() {
		if len(q.Tools) > 1 {
			reqs = append(reqs, q)
		}
	}
	if a, b := requestSize(reqs[len(reqs)-2]), requestSize(reqs[len(reqs)-1]); b >= a || b > 12288*4 {
		t.Errorf("the refitted request is %d bytes of text after %d, want smaller and within the window", b, a)
	}
}

// requestSize is the text a request carries, in bytes.
func requestSize(req goopenai.ChatCompletionRequest) int {
	n := 0
	for _, m := range req.Messages {
		n += len(m.Content)
	}
	return n
}

// setFallback gives the config file one fallback endpoint.
func setFallback(t *testing.T, cfg, baseURL, key, model string) {
	t.Helper()
	data, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	list := fmt.Sprintf("fallbacks:\n    - base_url: %q\n      api_key: %q\n      model: %q", baseURL, key, model)
	out := strings.Replace(string(data), "fallbacks: []", list, 1)
	if out == string(data) {
		t.Fatal("the config has no fallbacks: [] line to replace")
	}
	if err := os.WriteFile(cfg, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
}
