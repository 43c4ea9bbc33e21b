package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/memory"
	"github.com/nanobot-go/nanobot/turns"
)

const (
	phoneKey  = "phone-key-0123456789abcdef"
	laptopKey = "laptop-key-0123456789abcdef"
)

// answerer is the turn engine's answerer: it records each turn and
// answers with reply, which may hold the turn until the test lets it go.
type answerer struct {
	mu      sync.Mutex
	calls   []call
	changed chan struct{}
	reply   func(ctx context.Context, c call) (agent.Result, error)
}

type call struct {
	Turn   agent.Turn
	Msg    agent.Message
	Resume bool
	ctxErr error // the turn's context when the answer returned
}

func (a *answerer) Answer(ctx context.Context, t agent.Turn, msg agent.Message, resume bool) (agent.Result, error) {
	c := call{Turn: t, Msg: msg, Resume: resume}
	a.mu.Lock()
	a.calls = append(a.calls, c)
	close(a.changed)
	a.changed = make(chan struct{})
	reply := a.reply
	a.mu.Unlock()
	if reply == nil {
		return agent.Result{Text: "echo: " + msg.Content, Usage: agent.Usage{PromptTokens: 120, CompletionTokens: 7, CachedTokens: 100}}, nil
	}
	res, err := reply(ctx, c)
	a.mu.Lock()
	a.calls[len(a.calls)-1].ctxErr = ctx.Err()
	a.mu.Unlock()
	return res, err
}

func (a *answerer) Calls() []call {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.calls)
}

// waitCalls waits until the answerer was called n times.
func (a *answerer) waitCalls(t *testing.T, n int) []call {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for {
		a.mu.Lock()
		calls, changed := slices.Clone(a.calls), a.changed
		a.mu.Unlock()
		if len(calls) >= n {
			return calls
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("the answerer was called %d times, want %d", len(calls), n)
		}
	}
}

type harness struct {
	api    *API
	store  *memory.Store
	engine *turns.Engine
	ans    *answerer
	turns  turns.Config
	url    string
	cancel context.CancelFunc
	done   chan error
}

// start serves the API on 127.0.0.1 over a real store, with the real
// engine and a scripted answerer.
func start(t *testing.T, keys []Key, setup func(*harness)) *harness {
	t.Helper()
	store, err := memory.Open(t.Context(), filepath.Join(t.TempDir(), "nanobot.db"))
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{store: store, ans: &answerer{changed: make(chan struct{})}, done: make(chan error, 1),
		turns: turns.Config{ShutdownTimeout: 5 * time.Second}}
	if setup != nil {
		setup(h)
	}
	bell := turns.NewBell()
	h.engine = turns.New(store, h.ans, h.turns, nil, turns.Hooks{Queued: bell.Ring})
	h.api = New(Config{Listen: "127.0.0.1:0", Keys: keys, KeepAlive: time.Hour}, store, h.engine, bell.For(Channel),
		slog.New(slog.DiscardHandler), Hooks{})
	if err := h.api.Listen(); err != nil {
		t.Fatal(err)
	}
	h.url = "http://" + h.api.Addr() + "/v1"
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	h.cancel = cancel
	go func() { h.done <- h.api.Run(ctx) }()
	t.Cleanup(func() {
		h.stop(t)
		store.Close()
	})
	return h
}

func (h *harness) stop(t *testing.T) {
	if h.cancel == nil {
		return
	}
	h.cancel()
	h.cancel = nil
	if err := <-h.done; err != nil {
		t.Errorf("Run: %v", err)
	}
	h.engine.Shutdown()
}

func (h *harness) client(key string) *openai.Client {
	cfg := openai.DefaultConfig(key)
	cfg.BaseURL = h.url
	return openai.NewClientWithConfig(cfg)
}

func userAsks(text string) openai.ChatCompletionRequest {
	return openai.ChatCompletionRequest{Model: Model, Messages: []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleSystem, Content: "You are a pirate."},
		{Role: openai.ChatMessageRoleUser, Content: "earlier question"},
		{Role: openai.ChatMessageRoleAssistant, Content: "earlier answer"},
		{Role: openai.ChatMessageRoleUser, Content: text},
	}}
}

var twoKeys = []Key{{Secret: phoneKey, Name: "phone"}, {Secret: laptopKey, Name: "laptop", Chat: "desk"}}

func TestChatCompletionAnswersTheLastUserMessage(t *testing.T) {
	h := start(t, twoKeys, nil)
	resp, err := h.client(phoneKey).CreateChatCompletion(t.Context(), userAsks("what is the time?"))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Choices) != 1 || resp.Choices[0].Message.Content != "echo: what is the time?" ||
		resp.Choices[0].Message.Role != "assistant" || resp.Choices[0].FinishReason != openai.FinishReasonStop {
		t.Errorf("choices %+v", resp.Choices)
	}
	if resp.Object != "chat.completion" || resp.Model != Model || !strings.HasPrefix(resp.ID, "chatcmpl-") || resp.Created == 0 {
		t.Errorf("response %+v", resp)
	}
	if u := resp.Usage; u.PromptTokens != 120 || u.CompletionTokens != 7 || u.TotalTokens != 127 ||
		u.PromptTokensDetails == nil || u.PromptTokensDetails.CachedTokens != 100 {
		t.Errorf("usage %+v", u)
	}
	calls := h.ans.Calls()
	if len(calls) != 1 {
		t.Fatalf("%d turns, want 1", len(calls))
	}
	c := calls[0]
	// Only the last message is the turn's: the client's system prompt and
	// history are not the assistant's.
	if c.Msg.Content != "what is the time?" || c.Turn.Session != "api:phone" || c.Turn.Channel != Channel ||
		c.Turn.ChatID != "phone" || c.Turn.SenderID != "phone" || len(c.Turn.Inbox) != 1 {
		t.Errorf("turn %+v, message %q", c.Turn, c.Msg.Content)
	}
	// Answered once, and nothing is left to deliver.
	pending, err := h.store.PendingInbound(t.Context(), Channel)
	if err != nil || len(pending) != 0 {
		t.Errorf("pending inbound %v, %v", pending, err)
	}
	waitOutboxEmpty(t, h.store)
}

func waitOutboxEmpty(t *testing.T, store *memory.Store) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := store.PendingOutbound(t.Context(), Channel)
		if err != nil {
			t.Fatal(err)
		}
		if len(out) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("outbox still holds %+v", out)
		}
		time.Sleep(10 * time.Millisecond) // the drain runs on its own goroutine; nothing tells the test when it ran
	}
}

func TestKeysAreIdentities(t *testing.T) {
	h := start(t, twoKeys, nil)
	ctx := t.Context()
	for _, tc := range []struct {
		key, user, header, chat string
	}{
		{phoneKey, "", "", "phone"},
		{laptopKey, "", "", "desk"},
		{phoneKey, "trip", "", "phone/trip"},
		{phoneKey, "", "work-1", "phone/work-1"},
		{phoneKey, "ignored", "header-wins", "phone/header-wins"},
		{laptopKey, "a user / with spaces", "", "desk/"},
	} {
		req := userAsks("hi")
		req.User = tc.user
		cfg := openai.DefaultConfig(tc.key)
		cfg.BaseURL = h.url
		if tc.header != "" {
			cfg.HTTPClient = &http.Client{Transport: headerTransport{"X-Session-Id", tc.header}}
		}
		if _, err := openai.NewClientWithConfig(cfg).CreateChatCompletion(ctx, req); err != nil {
			t.Fatal(err)
		}
		calls := h.ans.Calls()
		got := calls[len(calls)-1].Turn
		if strings.HasSuffix(tc.chat, "/") {
			// An id that is not a plain word is hashed: stable, and no path.
			if !strings.HasPrefix(got.ChatID, tc.chat) || len(got.ChatID) != len(tc.chat)+16 {
				t.Errorf("user %q: chat %q", tc.user, got.ChatID)
			}
			continue
		}
		if got.ChatID != tc.chat || got.Session != "api:"+tc.chat {
			t.Errorf("key %s user %q header %q: chat %q session %q, want %q", tc.key[:5], tc.user, tc.header, got.ChatID, got.Session, tc.chat)
		}
	}
}

type headerTransport struct{ name, value string }

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(h.name, h.value)
	return http.DefaultTransport.RoundTrip(r)
}

func TestStrangersGet401AndCostNothing(t *testing.T) {
	h := start(t, twoKeys, nil)
	for _, tc := range []struct {
		name, auth, code string
	}{
		{"no header", "", "missing_api_key"},
		{"wrong key", "Bearer not-the-key-0123456789", "invalid_api_key"},
		{"prefix of a key", "Bearer " + phoneKey[:10], "invalid_api_key"},
		{"basic auth", "Basic " + phoneKey, "missing_api_key"},
		{"empty bearer", "Bearer ", "missing_api_key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, path := range []string{"/chat/completions", "/models"} {
				method := http.MethodPost
				if path == "/models" {
					method = http.MethodGet
				}
				req, _ := http.NewRequest(method, h.url+path, strings.NewReader(`{"model":"x","messages":[{"role":"user","content":"hi"}]}`))
				if tc.auth != "" {
					req.Header.Set("Authorization", tc.auth)
				}
				status, body := do(t, req)
				if status != http.StatusUnauthorized || !strings.Contains(body, `"code":"`+tc.code+`"`) ||
					!strings.Contains(body, `"type":"invalid_request_error"`) {
					t.Errorf("%s: %d %s", path, status, body)
				}
				if strings.Contains(body, phoneKey[:10]) {
					t.Errorf("the error echoes the key: %s", body)
				}
			}
		})
	}
	// The official client sees OpenAI's error.
	_, err := h.client("sk-wrong-0123456789abcdef").CreateChatCompletion(t.Context(), userAsks("hi"))
	var apiErr *openai.APIError
	if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != 401 || apiErr.Code != "invalid_api_key" {
		t.Errorf("client error %v", err)
	}
	if n := len(h.ans.Calls()); n != 0 {
		t.Errorf("%d turns ran for strangers", n)
	}
	if n, _ := h.store.PendingInbound(t.Context(), Channel); len(n) != 0 {
		t.Errorf("a stranger's message was recorded")
	}
}

func do(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestBadRequestsGetOpenAIErrors(t *testing.T) {
	h := start(t, twoKeys, nil)
	big := `{"messages":[{"role":"user","content":"` + strings.Repeat("a", maxBody) + `"}]}`
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		want                     string
	}{
		{"not json", "POST", "/chat/completions", `{"messages":`, 400, `"type":"invalid_request_error"`},
		{"no messages", "POST", "/chat/completions", `{"model":"nanobot","messages":[]}`, 400, `"param":"messages"`},
		{"last is the assistant's", "POST", "/chat/completions", `{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"}]}`, 400, `must be the user's`},
		{"a client tool result", "POST", "/chat/completions", `{"messages":[{"role":"tool","content":"42","tool_call_id":"x"}]}`, 400, `"param":"messages"`},
		{"empty text", "POST", "/chat/completions", `{"messages":[{"role":"user","content":"  "}]}`, 400, `no text`},
		{"content not text", "POST", "/chat/completions", `{"messages":[{"role":"user","content":42}]}`, 400, `string or a list of parts`},
		{"only an image", "POST", "/chat/completions", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:,"}}]}]}`, 400, `no text`},
		{"too large", "POST", "/chat/completions", big, 413, `"code":"request_too_large"`},
		{"wrong method", "GET", "/chat/completions", ``, 405, `"code":"method_not_supported"`},
		{"unknown path", "POST", "/completions", `{}`, 404, `"code":"unknown_url"`},
		{"unknown model", "GET", "/models/gpt-4o", ``, 404, `"code":"model_not_found"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, h.url+tc.path, strings.NewReader(tc.body))
			req.Header.Set("Authorization", "Bearer "+phoneKey)
			status, body := do(t, req)
			if status != tc.status || !strings.Contains(body, tc.want) || !strings.HasPrefix(body, `{"error":{"message":`) {
				t.Errorf("%d %.300s, want %d with %s", status, body, tc.status, tc.want)
			}
		})
	}
	if n := len(h.ans.Calls()); n != 0 {
		t.Errorf("%d turns ran for bad requests", n)
	}
}

func TestContentPartsAndModels(t *testing.T) {
	h := start(t, twoKeys, nil)
	c := h.client(phoneKey)
	resp, err := c.CreateChatCompletion(t.Context(), openai.ChatCompletionRequest{Model: "anything", Messages: []openai.ChatCompletionMessage{{
		Role: openai.ChatMessageRoleUser, MultiContent: []openai.ChatMessagePart{
			{Type: openai.ChatMessagePartTypeText, Text: "first part"},
			{Type: openai.ChatMessagePartTypeImageURL, ImageURL: &openai.ChatMessageImageURL{URL: "data:,"}},
			{Type: openai.ChatMessagePartTypeText, Text: "second part"},
		}}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Choices[0].Message.Content; got != "echo: first part\nsecond part" {
		t.Errorf("answer %q", got)
	}
	models, err := c.ListModels(t.Context())
	if err != nil || len(models.Models) != 1 || models.Models[0].ID != Model {
		t.Errorf("models %+v, %v", models, err)
	}
	m, err := c.GetModel(t.Context(), Model)
	if err != nil || m.ID != Model || m.Object != "model" {
		t.Errorf("model %+v, %v", m, err)
	}
}

func TestLocalWithoutKeys(t *testing.T) {
	h := start(t, nil, nil)
	resp, err := h.client("").CreateChatCompletion(t.Context(), userAsks("hello"))
	if err != nil {
		t.Fatal(err)
	}
	if got := h.ans.Calls()[0].Turn.Session; got != "api:local" || resp.Choices[0].Message.Content != "echo: hello" {
		t.Errorf("session %q, answer %+v", got, resp.Choices)
	}
}

func TestKeysReload(t *testing.T) {
	h := start(t, twoKeys, nil)
	h.api.SetKeys(twoKeys[1:])
	_, err := h.client(phoneKey).CreateChatCompletion(t.Context(), userAsks("hi"))
	var apiErr *openai.APIError
	if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != 401 {
		t.Errorf("a removed key: %v", err)
	}
	if _, err := h.client(laptopKey).CreateChatCompletion(t.Context(), userAsks("hi")); err != nil {
		t.Errorf("a kept key: %v", err)
	}
}

func TestOutageIsAServerError(t *testing.T) {
	h := start(t, twoKeys, func(h *harness) {
		h.ans.reply = func(context.Context, call) (agent.Result, error) {
			return agent.Result{Text: "The model service is not answering right now; I tried 4 times."}, errors.New("503 from upstream")
		}
	})
	_, err := h.client(phoneKey).CreateChatCompletion(t.Context(), userAsks("hi"))
	var apiErr *openai.APIError
	if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != http.StatusBadGateway || apiErr.Type != "server_error" ||
		!strings.Contains(apiErr.Message, "not answering") {
		t.Errorf("error %v", err)
	}
	stream, err := h.client(phoneKey).CreateChatCompletionStream(t.Context(), openai.ChatCompletionRequest{Model: Model, Stream: true,
		Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "again"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	for err == nil {
		_, err = stream.Recv()
	}
	if errors.Is(err, io.EOF) || !strings.Contains(err.Error(), "not answering") {
		t.Errorf("stream ended with %v, want the outage's error", err)
	}
}

// TestClientThatLeavesKeepsItsTurn: the turn goes on after the client
// hangs up, its answer is kept, and the next request is answered after it.
func TestClientThatLeavesKeepsItsTurn(t *testing.T) {
	release := make(chan struct{})
	h := start(t, twoKeys, func(h *harness) {
		h.ans.reply = func(ctx context.Context, c call) (agent.Result, error) {
			if c.Msg.Content == "slow" {
				select {
				case <-release:
				case <-ctx.Done():
					return agent.Result{}, ctx.Err()
				}
			}
			return agent.Result{Text: "answer to " + c.Msg.Content}, nil
		}
	})
	ctx, cancel := context.WithCancel(t.Context())
	gone := make(chan error, 1)
	go func() {
		_, err := h.client(phoneKey).CreateChatCompletion(ctx, userAsks("slow"))
		gone <- err
	}()
	h.ans.waitCalls(t, 1)
	cancel()
	if err := <-gone; !errors.Is(err, context.Canceled) {
		t.Fatalf("client: %v", err)
	}
	// The next request of the conversation waits for the first turn.
	next := make(chan string, 1)
	go func() {
		resp, err := h.client(phoneKey).CreateChatCompletion(t.Context(), userAsks("next"))
		if err != nil {
			next <- err.Error()
			return
		}
		next <- resp.Choices[0].Message.Content
	}()
	close(release)
	if got := <-next; got != "answer to next" {
		t.Errorf("next answer %q", got)
	}
	calls := h.ans.waitCalls(t, 2)
	if calls[0].ctxErr != nil || calls[0].Msg.Content != "slow" || calls[1].Msg.Content != "next" {
		t.Errorf("turns %+v: the first must have run to its end, then the second", calls)
	}
	if pending, _ := h.store.PendingInbound(t.Context(), Channel); len(pending) != 0 {
		t.Errorf("unanswered: %+v", pending)
	}
}

// TestRecordedBeforeAnswered: a message recorded when the process died is
// answered after the start, before new requests are taken.
func TestRecordedBeforeAnswered(t *testing.T) {
	var h *harness
	h = start(t, twoKeys, func(h *harness) {
		p := []byte(`{"client":"phone","chat":"phone","text":"left over"}`)
		if _, _, err := h.store.RecordInbound(t.Context(), turns.InboxItem{Channel: Channel, UpdateID: 7, ChatID: "phone",
			Payload: p, State: turns.InboxPending, ReceivedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	})
	calls := h.ans.waitCalls(t, 1)
	if calls[0].Msg.Content != "left over" || calls[0].Turn.Session != "api:phone" {
		t.Errorf("turn %+v %q", calls[0].Turn, calls[0].Msg.Content)
	}
	waitOutboxEmpty(t, h.store)
}

func TestShutdownTellsTheWaitingClient(t *testing.T) {
	h := start(t, twoKeys, func(h *harness) {
		h.turns.ShutdownTimeout = time.Millisecond // the held turn is cut off at once
		h.ans.reply = func(ctx context.Context, c call) (agent.Result, error) {
			<-ctx.Done()
			return agent.Result{}, ctx.Err()
		}
	})
	errs := make(chan error, 1)
	go func() {
		_, err := h.client(phoneKey).CreateChatCompletion(t.Context(), userAsks("long job"))
		errs <- err
	}()
	h.ans.waitCalls(t, 1)
	h.stop(t)
	var apiErr *openai.APIError
	if err := <-errs; !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != 503 || !strings.Contains(apiErr.Message, "restarting") {
		t.Errorf("client got %v", err)
	}
	pending, err := h.store.PendingInbound(context.Background(), Channel)
	if err != nil || len(pending) != 1 {
		t.Errorf("the interrupted message must stay for the next start: %+v %v", pending, err)
	}
}

func TestProgressLineStaysOneLine(t *testing.T) {
	for _, tc := range []struct {
		ev   agent.ProgressEvent
		want string
	}{
		{agent.ProgressEvent{Kind: agent.ProgressTool, Tool: "web_fetch", Args: `{"url":"https://example.com"}`}, "calling web_fetch example.com"},
		{agent.ProgressEvent{Kind: agent.ProgressToolDone, Tool: "exec", Duration: 1500 * time.Millisecond}, "exec done in 1.5s"},
		{agent.ProgressEvent{Kind: agent.ProgressToolDone, Tool: "exec", Failed: true, Duration: time.Second}, "exec failed after 1.0s"},
		{agent.ProgressEvent{Kind: agent.ProgressModel}, ""},
	} {
		if got := progressLine(tc.ev); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.ev, got, tc.want)
		}
	}
	evil := agent.ProgressEvent{Kind: agent.ProgressTool, Tool: "exec\r\ndata: [DONE]", Args: "{\"command\":\"x\\n\\ndata: {\\\"choices\\\":[]}\\u2028\"}"}
	if got := progressLine(evil); strings.ContainsAny(got, "\r\n\u2028") {
		t.Errorf("a line break reached the stream: %q", got)
	}
}

func ExampleAPI_Status() {
	a := New(Config{Listen: "127.0.0.1:0", Keys: twoKeys}, nil, nil, nil, nil, Hooks{})
	fmt.Println(a.Status())
	// Output: api: listening on 127.0.0.1:0, 2 keys, 0 requests answered, no request yet
}

// reportsProgress answers after telling the turn's progress the calls of
// one tool round, as the loop does.
func reportsProgress(h *harness) func(ctx context.Context, c call) (agent.Result, error) {
	return func(ctx context.Context, c call) (agent.Result, error) {
		report, end := h.api.Progress(ctx, []*turns.Job{{Item: turns.InboxItem{ID: c.Turn.Inbox[0]}}})
		defer end()
		report(agent.ProgressEvent{Kind: agent.ProgressModel})
		report(agent.ProgressEvent{Kind: agent.ProgressTool, Round: 1, Calls: 1, Tool: "web_fetch", Args: `{"url":"https://example.com/x"}`})
		report(agent.ProgressEvent{Kind: agent.ProgressToolDone, Round: 1, Calls: 1, Tool: "web_fetch", Duration: 300 * time.Millisecond})
		return agent.Result{Text: "The page says hello.", Usage: agent.Usage{PromptTokens: 50, CompletionTokens: 5}}, nil
	}
}

func TestStreamSpeaksOpenAIChunks(t *testing.T) {
	h := start(t, twoKeys, func(h *harness) { h.ans.reply = reportsProgress(h) })
	body := `{"model":"nanobot","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"fetch it"}]}`
	req, _ := http.NewRequest(http.MethodPost, h.url+"/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+phoneKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("content type %q", ct)
	}
	lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	var data, comments []string
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "data: "):
			data = append(data, strings.TrimPrefix(l, "data: "))
		case strings.HasPrefix(l, ": "):
			comments = append(comments, l)
		case l != "":
			t.Errorf("a line that is neither data, comment nor blank: %q", l)
		}
	}
	if len(data) != 5 || !strings.Contains(data[0], `"delta":{"role":"assistant","content":""}`) ||
		!strings.Contains(data[1], `"delta":{"content":"The page says hello."}`) ||
		!strings.Contains(data[2], `"finish_reason":"stop"`) ||
		!strings.Contains(data[3], `"choices":[],"usage":{"prompt_tokens":50,"completion_tokens":5,"total_tokens":55}`) ||
		data[4] != "[DONE]" {
		t.Errorf("data events:\n%s", strings.Join(data, "\n"))
	}
	for _, d := range data[:4] {
		if !strings.Contains(d, `"object":"chat.completion.chunk"`) || !strings.Contains(d, `"model":"nanobot"`) {
			t.Errorf("chunk %s", d)
		}
	}
	want := []string{": calling web_fetch example.com/x", ": web_fetch done in 0.3s"}
	if !slices.Equal(comments, want) {
		t.Errorf("progress comments %q, want %q", comments, want)
	}

	// The official client reads the same stream.
	stream, err := h.client(laptopKey).CreateChatCompletionStream(t.Context(), openai.ChatCompletionRequest{Model: Model, Stream: true,
		StreamOptions: &openai.StreamOptions{IncludeUsage: true}, Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "again"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	var text strings.Builder
	var got *openai.Usage
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(chunk.Choices) > 0 {
			text.WriteString(chunk.Choices[0].Delta.Content)
		}
		if chunk.Usage != nil {
			got = chunk.Usage
		}
	}
	if text.String() != "The page says hello." || got == nil || got.TotalTokens != 55 {
		t.Errorf("streamed %q, usage %+v", text.String(), got)
	}
}

func TestNoKeysOnlyOnLoopback(t *testing.T) {
	a := New(Config{Listen: "0.0.0.0:0"}, nil, nil, nil, nil, Hooks{})
	if err := a.Listen(); !errors.Is(err, ErrOpenToNetwork) {
		t.Errorf("Listen on 0.0.0.0 without keys: %v", err)
	}
	b := New(Config{Listen: "0.0.0.0:0", Keys: twoKeys}, nil, nil, nil, nil, Hooks{})
	if err := b.SetKeys(nil); !errors.Is(err, ErrOpenToNetwork) {
		t.Errorf("removing every key on 0.0.0.0: %v", err)
	}
	if _, ok := b.client(phoneKey); !ok {
		t.Error("a refused reload dropped the keys it had")
	}
}

// TestRetriesAreNotSecondMessages: an error after the message was kept
// tells OpenAI's clients not to retry, and a retry with the same
// Idempotency-Key is refused as a repeat rather than answered again.
func TestRetriesAreNotSecondMessages(t *testing.T) {
	h := start(t, twoKeys, func(h *harness) {
		h.ans.reply = func(context.Context, call) (agent.Result, error) {
			return agent.Result{Text: "The model service is not answering right now."}, errors.New("503 from upstream")
		}
	})
	post := func() *http.Response {
		req, _ := http.NewRequest(http.MethodPost, h.url+"/chat/completions",
			strings.NewReader(`{"model":"nanobot","messages":[{"role":"user","content":"once"}]}`))
		req.Header.Set("Authorization", "Bearer "+phoneKey)
		req.Header.Set("Idempotency-Key", "req-1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	first := post()
	if first.StatusCode != http.StatusBadGateway || first.Header.Get("X-Should-Retry") != "false" {
		t.Errorf("outage = %d, X-Should-Retry %q; want 502 and false", first.StatusCode, first.Header.Get("X-Should-Retry"))
	}
	again := post()
	if again.StatusCode != http.StatusConflict || again.Header.Get("X-Should-Retry") != "false" {
		t.Errorf("the same key again = %d, X-Should-Retry %q; want 409 and false", again.StatusCode, again.Header.Get("X-Should-Retry"))
	}
	if n := len(h.ans.Calls()); n != 1 {
		t.Errorf("%d turns, want 1", n)
	}
}
