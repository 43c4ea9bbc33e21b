package main

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/openai/openaitest"
	"github.com/nanobot-go/nanobot/channels/telegram/telegramtest"
	"github.com/nanobot-go/nanobot/schedule"
)

const (
	botToken = "123456:TEST-token-that-must-stay-secret"
	owner    = 111
	stranger = 222
)

// syncBuffer is a bytes.Buffer safe for the daemon's log writes while the
// test reads it.
type syncBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	changed chan struct{} // closed and replaced on every write
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
	return s.b.Write(p)
}

// next returns a channel closed by the next write.
func (s *syncBuffer) next() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.changed == nil {
		s.changed = make(chan struct{})
	}
	return s.changed
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// gatewayHarness runs `nanobot gateway` in-process against the Bot API fake
// and the model stub.
type gatewayHarness struct {
	t      *testing.T
	tg     *telegramtest.Server
	model  *openaitest.Server
	dir    string
	cfg    string
	flags  []string // extra gateway flags
	logs   *syncBuffer
	clock  schedule.Clock // of scheduled work; nil: the system's
	cancel context.CancelFunc
	done   chan error
	abi    func() int // the Landlock ABI the gateway sees; the kernel's when nil
	// progressEvery is the least time between two status message
	// updates; the channel's default when zero.
	progressEvery time.Duration
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// telegramValues are the config keys that point a gateway at the Bot API
// fake tg, with the owner allowed. Status messages are off: the tests of
// other behaviours count what is sent; progress_test.go turns them on.
func telegramValues(tg *telegramtest.Server) map[string]string {
	return map[string]string{
		"channels.telegram.enabled":    "true",
		"channels.telegram.token":      tg.Token(),
		"channels.telegram.api_url":    tg.URL(),
		"channels.telegram.allow_from": fmt.Sprintf("[%d]", owner),
		"channels.telegram.progress":   "off",
	}
}

func gatewayConfig(t *testing.T, dir string, tg *telegramtest.Server, model *openaitest.Server, extra map[string]string) string {
	values := telegramValues(tg)
	values["agent.shutdown_timeout"] = "5s"
	maps.Copy(values, extra)
	return writeConfig(t, dir, model.URL(), values)
}

func startGateway(t *testing.T, extra map[string]string) *gatewayHarness {
	t.Helper()
	return startGatewayEdited(t, extra, nil)
}

// startGatewayEdited is startGateway with edit run on the config file
// before the start.
func startGatewayEdited(t *testing.T, extra map[string]string, edit func(path string)) *gatewayHarness {
	t.Helper()
	tg := telegramtest.NewServer(t, botToken)
	model := openaitest.NewServer(t)
	dir := t.TempDir()
	h := &gatewayHarness{t: t, tg: tg, model: model, dir: dir, logs: &syncBuffer{}}
	h.cfg = gatewayConfig(t, dir, tg, model, extra)
	if edit != nil {
		edit(h.cfg)
	}
	h.start()
	t.Cleanup(func() { h.stop() })
	return h
}

func (h *gatewayHarness) start() {
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	h.done = make(chan error, 1)
	a := &app{stdin: strings.NewReader(""), stdout: h.logs, stderr: h.logs, getenv: func(string) string { return "" }, clock: h.clock, abi: h.abi,
		progressEvery: h.progressEvery}
	args := append([]string{"gateway", "-c", h.cfg, "--reload-interval", "50ms"}, h.flags...)
	go func() { h.done <- a.run(ctx, args) }()
}

// stop shuts the gateway down as SIGTERM would and returns run's error.
func (h *gatewayHarness) stop() error {
	if h.cancel == nil {
		return nil
	}
	h.cancel()
	h.cancel = nil
	select {
	case err := <-h.done:
		return err
	case <-time.After(60 * time.Second):
		h.t.Fatal("gateway did not stop within 60 s")
		return nil
	}
}

func waitCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// waitSentContaining waits for a sendMessage whose text contains s.
func waitSentContaining(t *testing.T, tg *telegramtest.Server, chat int64, s string) telegramtest.Sent {
	t.Helper()
	ctx := waitCtx(t)
	for n := 1; ; n++ {
		sent, err := tg.WaitSent(ctx, n)
		if err != nil {
			t.Fatalf("no message containing %q to chat %d; sent so far: %+v", s, chat, tg.Sent())
		}
		if m := sent[n-1]; m.ChatID == chat && strings.Contains(m.Text, s) {
			return m
		}
	}
}

func TestGatewayAnswersAllowedUser(t *testing.T) {
	h := startGateway(t, nil)
	h.model.Script(openaitest.Reply{Text: "Hi **Ada**!"})
	h.tg.SendText(owner, owner, "ada", "hello")
	got := waitSentContaining(t, h.tg, owner, "Ada")
	if got.ParseMode != "HTML" || !strings.Contains(got.Text, "<b>Ada</b>") {
		t.Errorf("sent %+v, want HTML with bold", got)
	}
	if cmds := h.tg.Calls("setMyCommands"); len(cmds) == 0 {
		t.Error("setMyCommands was not called")
	}
	if err := h.stop(); err != nil {
		t.Fatalf("gateway stopped with %v", err)
	}
	if strings.Contains(h.logs.String(), botToken) || strings.Contains(h.logs.String(), testKey) {
		t.Error("a secret appears in the logs")
	}
}

func TestGatewayUnknownSenderCostsNothing(t *testing.T) {
	h := startGateway(t, nil)
	h.tg.SendText(stranger, stranger, "eve", "hello?")
	got := waitSentContaining(t, h.tg, stranger, fmt.Sprint(stranger))
	if got.ChatID != stranger {
		t.Errorf("reply went to %d", got.ChatID)
	}
	// The owner's message after it is answered, so the stranger's was handled first.
	h.model.Script(openaitest.Reply{Text: "owner answer"})
	h.tg.SendText(owner, owner, "ada", "hi")
	waitSentContaining(t, h.tg, owner, "owner answer")
	if n := h.model.RequestCount(); n != 1 {
		t.Errorf("%d model calls, want 1 (the stranger must cost none)", n)
	}

	// After a restart the stranger is not told again within the hour: the
	// owner's next answer arrives, and still one notice went to the stranger.
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	h.start()
	h.tg.SendText(stranger, stranger, "eve", "hello again?")
	h.model.Script(openaitest.Reply{Text: "second owner answer"})
	h.tg.SendText(owner, owner, "ada", "hi again")
	waitSentContaining(t, h.tg, owner, "second owner answer")
	if err := h.stop(); err != nil { // delivers what is queued
		t.Fatal(err)
	}
	notices := 0
	for _, m := range h.tg.Sent() {
		if m.ChatID == stranger {
			notices++
		}
	}
	if notices != 1 {
		t.Errorf("the stranger was told their id %d times across a restart, want once", notices)
	}
}

func TestGatewaySlowChatDoesNotBlockOthers(t *testing.T) {
	h := startGateway(t, map[string]string{"channels.telegram.allow_from": "[111, 333]"})
	release := make(chan struct{})
	h.model.Script(openaitest.Reply{Text: "slow answer", Hold: release}, openaitest.Reply{Text: "fast answer"})
	h.tg.SendText(owner, owner, "ada", "slow question")
	if _, err := h.model.WaitRequests(waitCtx(t), 1); err != nil {
		t.Fatal(err)
	}
	h.tg.SendText(333, 333, "bob", "fast question")
	waitSentContaining(t, h.tg, 333, "fast answer")
	close(release)
	waitSentContaining(t, h.tg, owner, "slow answer")
}

func TestGatewayLongAnswerIsSplit(t *testing.T) {
	h := startGateway(t, nil)
	var b strings.Builder
	for i := 0; b.Len() < 10000; i++ {
		fmt.Fprintf(&b, "Paragraph %d: %s\n\n", i, strings.Repeat("lorem ipsum ", 20))
	}
	b.WriteString("THE END")
	h.model.Script(openaitest.Reply{Text: b.String()})
	h.tg.SendText(owner, owner, "ada", "write a lot")
	waitSentContaining(t, h.tg, owner, "THE END")
	var parts []string
	for _, s := range h.tg.Sent() {
		if s.ChatID == owner {
			parts = append(parts, s.Text)
			if n := len([]rune(s.Text)); n > 4096 {
				t.Errorf("part of %d characters", n)
			}
		}
	}
	if len(parts) < 3 {
		t.Fatalf("%d parts, want at least 3", len(parts))
	}
	joined := strings.Join(parts, "\n\n")
	for i := 0; strings.Contains(b.String(), fmt.Sprintf("Paragraph %d:", i)); i++ {
		if !strings.Contains(joined, fmt.Sprintf("Paragraph %d:", i)) {
			t.Errorf("paragraph %d lost", i)
		}
		if i > 0 && strings.Index(joined, fmt.Sprintf("Paragraph %d:", i)) < strings.Index(joined, fmt.Sprintf("Paragraph %d:", i-1)) {
			t.Errorf("paragraph %d out of order", i)
		}
	}
}

func TestGatewayFallsBackToPlainText(t *testing.T) {
	h := startGateway(t, nil)
	h.tg.FailNext("sendMessage", 1, 400, 0, "Bad Request: can't parse entities: unsupported start tag")
	h.model.Script(openaitest.Reply{Text: "Use **x < y** here"})
	h.tg.SendText(owner, owner, "ada", "hi")
	got := waitSentContaining(t, h.tg, owner, "x < y")
	if got.ParseMode != "" {
		t.Errorf("fallback was sent with parse mode %q", got.ParseMode)
	}
}

func TestGatewayHonoursRetryAfter(t *testing.T) {
	h := startGateway(t, nil)
	h.tg.FailNext("sendMessage", 1, 429, 1, "Too Many Requests: retry after 1")
	h.model.Script(openaitest.Reply{Text: "patient answer"})
	h.tg.SendText(owner, owner, "ada", "hi")
	waitSentContaining(t, h.tg, owner, "patient answer")
	calls := h.tg.Calls("sendMessage")
	if len(calls) < 2 {
		t.Fatalf("%d sendMessage calls, want a retry", len(calls))
	}
	if gap := calls[len(calls)-1].At.Sub(calls[0].At); gap < 900*time.Millisecond {
		t.Errorf("retried after %s, want at least retry_after (1 s)", gap)
	}
}

func TestGatewayStopCancelsTurn(t *testing.T) {
	h := startGateway(t, nil)
	// The model keeps asking for a tool; each call is held until the turn
	// is cancelled.
	hold := make(chan struct{})
	defer close(hold)
	h.model.SetDefault(openaitest.Reply{Hold: hold, ToolCalls: []agent.ToolCall{{ID: "l", Name: "list_dir", Arguments: `{"path":"."}`}}})
	h.tg.SendText(owner, owner, "ada", "loop forever")
	if _, err := h.model.WaitRequests(waitCtx(t), 1); err != nil {
		t.Fatal(err)
	}
	h.tg.SendText(owner, owner, "ada", "/stop")
	waitSentContaining(t, h.tg, owner, "Stopped working on")
}

func TestGatewayRejectsBadToken(t *testing.T) {
	tg := telegramtest.NewServer(t, botToken)
	model := openaitest.NewServer(t)
	cfg := gatewayConfig(t, t.TempDir(), tg, model, map[string]string{"channels.telegram.token": "999:wrong-token-value"})
	r := runCLI(t.Context(), "", "-c", cfg, "gateway")
	if r.code != exitConfig || !strings.Contains(r.stderr, "channels.telegram.token") || !strings.Contains(r.stderr, "TELEGRAM_BOT_TOKEN") {
		t.Errorf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "wrong-token-value") {
		t.Error("the rejected token is printed")
	}

	cfg = gatewayConfig(t, t.TempDir(), tg, model, map[string]string{"channels.telegram.token": ""})
	r = runCLI(t.Context(), "", "-c", cfg, "gateway")
	if r.code != exitConfig || !strings.Contains(r.stderr, "channels.telegram.token: required") {
		t.Errorf("without a token: exit %d, stderr:\n%s", r.code, r.stderr)
	}
}

func TestGatewayNewConsolidatesFirst(t *testing.T) {
	h := startGateway(t, nil)
	h.model.Script(
		openaitest.Reply{Text: "Noted, you like sailing."},
		openaitest.Reply{ToolCalls: []agent.ToolCall{{ID: "s", Name: "save_memory",
			Arguments: `{"history_entry":"Talked about sailing.","memory_update":"- Likes sailing"}`}}},
		openaitest.Reply{Text: "Fresh start."},
	)
	h.tg.SendText(owner, owner, "ada", "I like sailing")
	waitSentContaining(t, h.tg, owner, "sailing")
	h.tg.SendText(owner, owner, "ada", "/new")
	reqs, err := h.model.WaitRequests(waitCtx(t), 2)
	if err != nil {
		t.Fatal(err)
	}
	if reqs[1].ToolChoice == nil || !strings.Contains(reqs[1].Messages[1].Content, "I like sailing") {
		t.Fatalf("/new did not consolidate the session first: %+v", reqs[1])
	}
	h.tg.SendText(owner, owner, "ada", "hello again")
	waitSentContaining(t, h.tg, owner, "Fresh start.")
	last, _ := h.model.LastRequest()
	if !strings.Contains(last.Messages[0].Content, "- Likes sailing") {
		t.Errorf("the fresh session's prompt lacks the consolidated memory")
	}
	for _, m := range last.Messages[1:] {
		if strings.Contains(m.Content, "I like sailing") {
			t.Errorf("the old session leaked into the new one: %q", m.Content)
		}
	}
}

func TestGatewayTellsWhenMemoryCannotBeUpdated(t *testing.T) {
	h := startGateway(t, map[string]string{"memory.window": "4", "provider.max_retries": "0"})
	h.model.Script(openaitest.Reply{Text: "one"}, openaitest.Reply{Text: "two"}, openaitest.Reply{Text: "three"})
	// Every later call, the consolidation attempts among them, is refused.
	h.model.SetDefault(openaitest.Reply{Status: 400, Body: `{"error":{"message":"context length exceeded"}}`})
	for _, text := range []string{"one", "two", "three"} {
		h.tg.SendText(owner, owner, "ada", "message "+text)
		waitSentContaining(t, h.tg, owner, text)
	}
	notice := waitSentContaining(t, h.tg, owner, "could not update my long-term memory")
	if !strings.Contains(notice.Text, "3 attempts") || !strings.Contains(notice.Text, "400") {
		t.Errorf("notice = %q, want the attempts and the reason", notice.Text)
	}
	if n := h.model.RequestCount(); n != 6 {
		t.Errorf("%d model calls, want 3 turns and 3 consolidation attempts", n)
	}
}

func TestGatewayNewKeepsTheSessionWhenMemoryFails(t *testing.T) {
	h := startGateway(t, map[string]string{"provider.max_retries": "0"})
	h.model.Script(openaitest.Reply{Text: "Noted."}, openaitest.Reply{Status: 400, Body: `{"error":{"message":"bad request"}}`},
		openaitest.Reply{Text: "Still here."})
	h.tg.SendText(owner, owner, "ada", "remember the boat")
	waitSentContaining(t, h.tg, owner, "Noted.")
	h.tg.SendText(owner, owner, "ada", "/new")
	waitSentContaining(t, h.tg, owner, "could not save this conversation to long-term memory first")
	h.tg.SendText(owner, owner, "ada", "and now?")
	waitSentContaining(t, h.tg, owner, "Still here.")
	last, _ := h.model.LastRequest()
	kept := false
	for _, m := range last.Messages {
		kept = kept || strings.Contains(m.Content, "remember the boat")
	}
	if !kept {
		t.Error("a failed /new dropped the conversation")
	}
}

func TestGatewayWebhookMode(t *testing.T) {
	listen := freeAddr(t)
	h := startGateway(t, map[string]string{
		"channels.telegram.mode":                 "webhook",
		"channels.telegram.webhook.url":          "https://bot.example.com/tg/hook",
		"channels.telegram.webhook.listen":       listen,
		"channels.telegram.webhook.secret_token": "webhook-secret_123",
	})
	calls, err := h.tg.WaitCalls(waitCtx(t), "setWebhook", 1)
	if err != nil {
		t.Fatal(err)
	}
	if calls[0].Params["url"] != "https://bot.example.com/tg/hook" || calls[0].Params["secret_token"] != "webhook-secret_123" {
		t.Errorf("setWebhook params = %v", calls[0].Params)
	}
	h.model.Script(openaitest.Reply{Text: "webhook answer"})
	update := fmt.Sprintf(`{"update_id": 7001, "message": {"message_id": 5, "date": 1700000000,
		"chat": {"id": %d, "type": "private"}, "from": {"id": %d, "is_bot": false, "first_name": "Ada"}, "text": "via webhook"}}`, owner, owner)
	// The webhook listens before setWebhook is sent, so it is up by now.
	post := func(secret string) int {
		req, _ := http.NewRequestWithContext(t.Context(), "POST", "http://"+listen+"/tg/hook", strings.NewReader(update))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Telegram-Bot-Api-Secret-Token", secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("post to the webhook: %v", err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, secret := range []string{"", "wrong", "webhook-secret_12", "webhook-secret_1234", "webhook-secret_123webhook-secret_123"} {
		if code := post(secret); code != http.StatusUnauthorized {
			t.Errorf("the secret %q got %d, want 401", secret, code)
		}
	}
	if code := post("webhook-secret_123"); code != http.StatusOK {
		t.Fatalf("the update got %d, want 200", code)
	}
	// Telegram retries a delivery it is unsure of: the replay is answered once.
	if code := post("webhook-secret_123"); code != http.StatusOK {
		t.Fatalf("the replay got %d, want 200", code)
	}
	waitSentContaining(t, h.tg, owner, "webhook answer")
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	if n := h.model.RequestCount(); n != 1 {
		t.Errorf("%d model calls for one update delivered twice, want 1", n)
	}
	if len(h.tg.Calls("getUpdates")) != 0 {
		t.Error("webhook mode polled getUpdates")
	}
}

// /status names the model once, with what the daemon knows of it; an
// unknown command is answered with the commands, and the model never hears
// of it.
func TestGatewayStatusAndUnknownCommand(t *testing.T) {
	h := startGateway(t, nil)
	status := h.ask("/status").Text
	if n := strings.Count(status, "Model:"); n != 1 || !strings.Contains(status, "Model: gpt-4o-mini") {
		t.Errorf("/status has %d model lines, want 1:\n%s", n, status)
	}
	if got := h.ask("/foo").Text; !strings.Contains(got, "I do not know /foo") || !strings.Contains(got, "/new: ") {
		t.Errorf("/foo answered %q, want the list of commands", got)
	}
	if got := h.ask("/start").Text; !strings.Contains(got, "Hi!") {
		t.Errorf("/start answered %q", got)
	}
	if n := h.model.RequestCount(); n != 0 {
		t.Errorf("commands made %d model requests, want 0", n)
	}
}
