package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	goopenai "github.com/sashabaranov/go-openai"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/openai/openaitest"
)

const testKey = "sk-test-0123456789abcdef"

// harness is a Provider pointed at a stub, whose waits between attempts are
// recorded instead of slept and whose log is captured.
type harness struct {
	p      *Provider
	delays []time.Duration
	log    *bytes.Buffer
}

func newHarness(t *testing.T, baseURL string, edit func(*Config)) *harness {
	t.Helper()
	h := &harness{log: new(bytes.Buffer)}
	cfg := Config{
		BaseURL:     baseURL,
		APIKey:      testKey,
		Model:       "gpt-4o-mini",
		Timeout:     30 * time.Second,
		MaxRetries:  3,
		MaxTokens:   1024,
		Temperature: ptr(float32(0.2)),
		Logger:      slog.New(slog.NewTextHandler(h.log, nil)),
	}
	if edit != nil {
		edit(&cfg)
	}
	h.p = New(cfg)
	h.p.sleep = func(ctx context.Context, d time.Duration) error {
		h.delays = append(h.delays, d)
		return ctx.Err()
	}
	return h
}

func TestCompleteRequestMapping(t *testing.T) {
	readArgs := `{"path": "notes.txt"` // invalid JSON: servers refuse it back, so {} is sent
	schema := json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)
	toolRound := []agent.Message{
		{Role: agent.RoleSystem, Content: "you are nanobot"},
		{Role: agent.RoleUser, Content: "read my notes"},
		{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{
			{ID: "call_1", Name: "read_file", Arguments: readArgs},
			{ID: "call_2", Name: "list_dir", Arguments: `{}`},
		}},
		{Role: agent.RoleTool, ToolCallID: "call_1", Name: "read_file", Content: "buy milk"},
		{Role: agent.RoleTool, ToolCallID: "call_2", Name: "list_dir", Content: "notes.txt"},
		{Role: agent.RoleUser, Content: "Reflect on the results and decide next steps."},
	}
	withImage := []agent.Message{
		{Role: agent.RoleUser, Content: "what is this?", Images: []string{"data:image/jpeg;base64,AAAA"}},
	}
	tests := []struct {
		name   string
		vision bool
		req    agent.Request
		want   []goopenai.ChatCompletionMessage
		check  func(t *testing.T, got goopenai.ChatCompletionRequest)
	}{
		{
			name: "tool round",
			req:  agent.Request{Messages: toolRound},
			want: []goopenai.ChatCompletionMessage{
				{Role: "system", Content: "you are nanobot"},
				{Role: "user", Content: "read my notes"},
				{Role: "assistant", ToolCalls: []goopenai.ToolCall{
					{ID: "call_1", Type: "function", Function: goopenai.FunctionCall{Name: "read_file", Arguments: `{}`}},
					{ID: "call_2", Type: "function", Function: goopenai.FunctionCall{Name: "list_dir", Arguments: `{}`}},
				}},
				{Role: "tool", ToolCallID: "call_1", Content: "buy milk"},
				{Role: "tool", ToolCallID: "call_2", Content: "notes.txt"},
				{Role: "user", Content: "Reflect on the results and decide next steps."},
			},
		},
		{
			name:   "image with vision",
			vision: true,
			req:    agent.Request{Messages: withImage},
			want: []goopenai.ChatCompletionMessage{{Role: "user", MultiContent: []goopenai.ChatMessagePart{
				{Type: "text", Text: "what is this?"},
				{Type: "image_url", ImageURL: &goopenai.ChatMessageImageURL{URL: "data:image/jpeg;base64,AAAA"}},
			}}},
		},
		{
			name: "image without vision",
			req:  agent.Request{Messages: withImage},
			want: []goopenai.ChatCompletionMessage{{Role: "user", Content: "what is this?"}},
		},
		{
			name: "empty tool result",
			req: agent.Request{Messages: []agent.Message{
				{Role: agent.RoleTool, ToolCallID: "call_9", Name: "exec"},
			}},
			want: []goopenai.ChatCompletionMessage{{Role: "tool", ToolCallID: "call_9", Content: "(empty)"}},
		},
		{
			name: "tools and forced tool",
			req: agent.Request{
				Messages: []agent.Message{{Role: agent.RoleUser, Content: "save this"}},
				Tools: []agent.ToolSpec{
					{Name: "read_file", Description: "Read a file", Parameters: schema},
					{Name: "save_memory", Description: "Save"},
				},
				ForceTool: "save_memory",
			},
			want: []goopenai.ChatCompletionMessage{{Role: "user", Content: "save this"}},
			check: func(t *testing.T, got goopenai.ChatCompletionRequest) {
				wantTools := `[{"function":{"name":"read_file","description":"Read a file","parameters":` + string(schema) +
					`},"type":"function"},{"function":{"name":"save_memory","description":"Save","parameters":{"properties":{},"type":"object"}},"type":"function"}]`
				assertJSON(t, "tools", got.Tools, wantTools)
				assertJSON(t, "tool_choice", got.ToolChoice, `{"function":{"name":"save_memory"},"type":"function"}`)
			},
		},
		{
			name: "no tools",
			req:  agent.Request{Messages: []agent.Message{{Role: agent.RoleUser, Content: "hi"}}},
			want: []goopenai.ChatCompletionMessage{{Role: "user", Content: "hi"}},
			check: func(t *testing.T, got goopenai.ChatCompletionRequest) {
				if got.Tools != nil || got.ToolChoice != nil {
					t.Errorf("tools = %v, tool_choice = %v, want none", got.Tools, got.ToolChoice)
				}
				if got.Model != "gpt-4o-mini" || got.MaxTokens != 1024 || got.Temperature != 0.2 || got.Stream {
					t.Errorf("model %q max_tokens %d temperature %v stream %v", got.Model, got.MaxTokens, got.Temperature, got.Stream)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := openaitest.NewServer(t)
			h := newHarness(t, srv.URL(), func(c *Config) { c.Vision = tt.vision })
			if _, err := h.p.Complete(t.Context(), tt.req); err != nil {
				t.Fatalf("Complete: %v", err)
			}
			got, ok := srv.LastRequest()
			if !ok {
				t.Fatal("the stub received no request")
			}
			if diff := cmp.Diff(tt.want, got.Messages); diff != "" {
				t.Errorf("messages on the wire (-want +got):\n%s", diff)
			}
			if tt.check != nil {
				tt.check(t, got)
			}
			if auth := srv.Authorizations(); len(auth) != 1 || auth[0] != "Bearer "+testKey {
				t.Errorf("Authorization headers = %q, want the bearer key once", auth)
			}
		})
	}
}

func assertJSON(t *testing.T, what string, got any, want string) {
	t.Helper()
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatalf("marshal %s: %v", what, err)
	}
	var g, w any
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want for %s: %v", what, err)
	}
	if diff := cmp.Diff(w, g); diff != "" {
		t.Errorf("%s (-want +got):\n%s", what, diff)
	}
}

func ptr[T any](v T) *T { return &v }

func TestChatRequestSampling(t *testing.T) {
	tests := []struct {
		name                 string
		model                string
		temperature          *float32
		wantMax, wantMaxComp int
		wantTemp             float32
	}{
		{"chat model", "gpt-4o-mini", ptr(float32(0.2)), 500, 0, 0.2},
		{"zero temperature is sent", "gpt-4o-mini", ptr(float32(0)), 500, 0, math.SmallestNonzeroFloat32},
		// Unset, none is sent: the model's default applies (Kimi K2.5
		// refuses any other than 1).
		{"no temperature set", "kimi-k2.5", nil, 500, 0, 0},
		{"reasoning model", "o3-mini", ptr(float32(0.2)), 0, 500, 0},
		{"gpt-5", "gpt-5-mini", ptr(float32(0)), 0, 500, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := New(Config{Model: tt.model, MaxTokens: 500, Temperature: tt.temperature})
			got, _ := p.chatRequest("", agent.Request{Messages: []agent.Message{{Role: agent.RoleUser, Content: "hi"}}}, false)
			if got.MaxTokens != tt.wantMax || got.MaxCompletionTokens != tt.wantMaxComp || got.Temperature != tt.wantTemp {
				t.Errorf("max_tokens %d, max_completion_tokens %d, temperature %v; want %d, %d, %v",
					got.MaxTokens, got.MaxCompletionTokens, got.Temperature, tt.wantMax, tt.wantMaxComp, tt.wantTemp)
			}
		})
	}
}

func TestCompleteResponseMapping(t *testing.T) {
	srv := openaitest.NewServer(t)
	h := newHarness(t, srv.URL(), nil)
	srv.Script(
		openaitest.Reply{Text: "hello", Usage: agent.Usage{PromptTokens: 12, CompletionTokens: 3}},
		openaitest.Reply{
			ToolCalls: []agent.ToolCall{
				{ID: "call_a", Name: "read_file", Arguments: `{"path":"a"}`},
				{Name: "exec", Arguments: `{"command":"ls"}`},
				{Name: "exec", Arguments: `not json`},
			},
			Usage: agent.Usage{PromptTokens: 20, CompletionTokens: 8},
		},
	)
	req := agent.Request{Messages: []agent.Message{{Role: agent.RoleUser, Content: "hi"}}}

	got, err := h.p.Complete(t.Context(), req)
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	want := agent.Response{
		Message: agent.Message{Role: agent.RoleAssistant, Content: "hello", Usage: agent.Usage{PromptTokens: 12, CompletionTokens: 3}},
		Usage:   agent.Usage{PromptTokens: 12, CompletionTokens: 3},
		Model:   h.p.Model(),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("text reply (-want +got):\n%s", diff)
	}

	got, err = h.p.Complete(t.Context(), req)
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	calls := got.Message.ToolCalls
	if len(calls) != 3 {
		t.Fatalf("tool calls = %+v, want 3", calls)
	}
	if !cmp.Equal(calls[0], agent.ToolCall{ID: "call_a", Name: "read_file", Arguments: `{"path":"a"}`}) {
		t.Errorf("first call = %+v, want it verbatim", calls[0])
	}
	if calls[1].ID == "" || calls[2].ID == "" || calls[1].ID == calls[2].ID || calls[1].ID == "call_a" {
		t.Errorf("synthesized ids %q and %q must be unique and non-empty", calls[1].ID, calls[2].ID)
	}
	if calls[2].Arguments != "not json" || calls[1].Name != "exec" {
		t.Errorf("calls = %+v, want names and arguments verbatim", calls)
	}
	if got.Usage != (agent.Usage{PromptTokens: 20, CompletionTokens: 8}) {
		t.Errorf("usage = %+v", got.Usage)
	}
}

func TestCompleteRetriesThenSucceeds(t *testing.T) {
	srv := openaitest.NewServer(t)
	h := newHarness(t, srv.URL(), nil)
	srv.Script(
		openaitest.Reply{Status: 429, RetryAfter: "7"},
		openaitest.Reply{Status: 500},
		openaitest.Reply{Text: "finally"},
	)
	got, err := h.p.Complete(t.Context(), agent.Request{Messages: []agent.Message{{Role: agent.RoleUser, Content: "hi"}}})
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if got.Message.Content != "finally" {
		t.Errorf("content = %q, want %q", got.Message.Content, "finally")
	}
	if n := srv.RequestCount(); n != 3 {
		t.Errorf("requests = %d, want 3", n)
	}
	if len(h.delays) != 2 {
		t.Fatalf("waits = %v, want 2", h.delays)
	}
	if h.delays[0] != 7*time.Second {
		t.Errorf("wait after 429 = %v, want the 7s of Retry-After", h.delays[0])
	}
	// Second failure: full jitter under base * 2.
	if h.delays[1] < 0 || h.delays[1] > 2*defaultBackoffBase {
		t.Errorf("wait after 500 = %v, want within [0, %v]", h.delays[1], 2*defaultBackoffBase)
	}
	logs := h.log.String()
	if strings.Count(logs, "model call failed, retrying") != 2 || !strings.Contains(logs, "status=429") ||
		!strings.Contains(logs, "level=WARN") {
		t.Errorf("retry log lines missing:\n%s", logs)
	}
	if strings.Contains(logs, testKey) {
		t.Errorf("log contains the API key:\n%s", logs)
	}
	for i, r := range srv.Requests() {
		if len(r.Messages) != 1 || r.Messages[0].Content != "hi" {
			t.Errorf("attempt %d sent %+v, want the same request", i+1, r.Messages)
		}
	}
}

func TestCompleteRealBackoff(t *testing.T) {
	srv := openaitest.NewServer(t)
	p := New(Config{BaseURL: srv.URL(), APIKey: testKey, Model: "m", MaxRetries: 2},
		WithBackoff(time.Millisecond, 5*time.Millisecond))
	srv.Script(openaitest.Reply{Status: 503}, openaitest.Reply{Status: 502, RetryAfter: "0"})
	if _, err := p.Complete(t.Context(), agent.Request{}); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if n := srv.RequestCount(); n != 3 {
		t.Errorf("requests = %d, want 3", n)
	}
}

func TestCompleteFailures(t *testing.T) {
	echoKey := `{"error":{"message":"Incorrect API key provided: ` + testKey + `","type":"invalid_request_error"}}`
	tests := []struct {
		name         string
		replies      []openaitest.Reply
		maxRetries   int
		wantStatus   int
		wantRequests int
		wantIn       []string
	}{
		{
			name:         "persistent 503",
			replies:      []openaitest.Reply{{Status: 503}, {Status: 503}, {Status: 503}},
			maxRetries:   2,
			wantStatus:   503,
			wantRequests: 3,
			wantIn:       []string{"HTTP 503", "after 3 attempts"},
		},
		{
			name:         "persistent 429",
			replies:      []openaitest.Reply{{Status: 429}, {Status: 429}, {Status: 429}, {Status: 429}},
			maxRetries:   3,
			wantStatus:   429,
			wantRequests: 4,
			wantIn:       []string{"overloaded (HTTP 429) after 4 attempts"},
		},
		{
			name:         "400 is not retried and key is scrubbed",
			replies:      []openaitest.Reply{{Status: 400, Body: echoKey}},
			maxRetries:   3,
			wantStatus:   400,
			wantRequests: 1,
			wantIn:       []string{"rejected the request (HTTP 400)", "Incorrect API key provided: REDACTED"},
		},
		{
			name:         "401 is not retried",
			replies:      []openaitest.Reply{{Status: 401, Body: echoKey}},
			maxRetries:   3,
			wantStatus:   401,
			wantRequests: 1,
			wantIn:       []string{"refused the API key (HTTP 401)"},
		},
		{
			name:         "404 is not retried",
			replies:      []openaitest.Reply{{Status: 404}},
			maxRetries:   3,
			wantStatus:   404,
			wantRequests: 1,
			wantIn:       []string{"HTTP 404", "provider.model"},
		},
		{
			name:         "408 and 409 are retried",
			replies:      []openaitest.Reply{{Status: 408}, {Status: 409}, {Status: 422}},
			maxRetries:   3,
			wantStatus:   422,
			wantRequests: 3,
			wantIn:       []string{"HTTP 422"},
		},
		{
			name:         "non-JSON error page",
			replies:      []openaitest.Reply{{Status: 502, Body: "<html>bad gateway</html>"}},
			wantStatus:   502,
			wantRequests: 1,
			wantIn:       []string{"failed (HTTP 502) after 1 attempt"},
		},
		{
			name:         "empty choices",
			replies:      []openaitest.Reply{{Body: `{"id":"x","choices":[]}`}},
			maxRetries:   3,
			wantStatus:   0,
			wantRequests: 1,
			wantIn:       []string{"returned no answer"},
		},
		{
			name:         "unreadable reply",
			replies:      []openaitest.Reply{{Body: `{"choices": nope}`}},
			maxRetries:   3,
			wantRequests: 1,
			wantIn:       []string{"could not be read"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := openaitest.NewServer(t)
			srv.SetDefault(openaitest.Reply{Text: "too late"})
			srv.Script(tt.replies...)
			h := newHarness(t, srv.URL(), func(c *Config) { c.MaxRetries = tt.maxRetries })
			_, err := h.p.Complete(t.Context(), agent.Request{Messages: []agent.Message{{Role: agent.RoleUser, Content: "hi"}}})
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Complete error = %v (%T), want *Error", err, err)
			}
			if e.Status != tt.wantStatus {
				t.Errorf("status = %d, want %d", e.Status, tt.wantStatus)
			}
			if n := srv.RequestCount(); n != tt.wantRequests {
				t.Errorf("requests = %d, want %d", n, tt.wantRequests)
			}
			for _, s := range tt.wantIn {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
			for _, text := range []string{err.Error(), h.log.String()} {
				if strings.Contains(text, testKey) || strings.Contains(text, "http://") {
					t.Errorf("key or URL leaked: %q", text)
				}
			}
		})
	}
}

func TestCompleteConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	// A secret in the base URL path must not leak either.
	h := newHarness(t, "http://"+addr+"/v1/secretpath", func(c *Config) { c.MaxRetries = 2 })

	_, err = h.p.Complete(t.Context(), agent.Request{Messages: []agent.Message{{Role: agent.RoleUser, Content: "hi"}}})
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error = %v (%T), want *Error", err, err)
	}
	want := "the model service could not be reached: connection refused (3 attempts)"
	if e.Message != want || e.Status != 0 || e.Attempts != 3 {
		t.Errorf("error = %+v, want message %q after 3 attempts", e, want)
	}
	if len(h.delays) != 2 {
		t.Errorf("waits = %v, want 2", h.delays)
	}
	for _, text := range []string{err.Error(), h.log.String()} {
		if strings.Contains(text, testKey) || strings.Contains(text, "secretpath") {
			t.Errorf("key or URL leaked: %q", text)
		}
	}
}

func TestCompleteAttemptTimeout(t *testing.T) {
	srv := openaitest.NewServer(t)
	hold := make(chan struct{})
	defer close(hold)
	srv.Script(openaitest.Reply{Hold: hold}, openaitest.Reply{Text: "second try"})
	h := newHarness(t, srv.URL(), func(c *Config) { c.Timeout = 300 * time.Millisecond; c.MaxRetries = 1 })

	got, err := h.p.Complete(t.Context(), agent.Request{})
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if got.Message.Content != "second try" || srv.RequestCount() != 2 {
		t.Errorf("content %q after %d requests, want the second reply", got.Message.Content, srv.RequestCount())
	}
	if !strings.Contains(h.log.String(), "error=timeout") {
		t.Errorf("log does not record the timeout:\n%s", h.log.String())
	}
}

func TestCompleteAttemptTimeoutExhausted(t *testing.T) {
	srv := openaitest.NewServer(t)
	hold := make(chan struct{})
	defer close(hold)
	srv.SetDefault(openaitest.Reply{Hold: hold})
	h := newHarness(t, srv.URL(), func(c *Config) { c.Timeout = 50 * time.Millisecond; c.MaxRetries = 1 })

	_, err := h.p.Complete(t.Context(), agent.Request{})
	var e *Error
	if !errors.As(err, &e) || !strings.Contains(e.Message, "did not answer within 50ms (2 attempts)") {
		t.Fatalf("error = %v, want a timeout *Error after 2 attempts", err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("an attempt timeout must not look like the caller's deadline")
	}
}

func TestCompleteCanceledDuringBackoff(t *testing.T) {
	srv := openaitest.NewServer(t)
	srv.SetDefault(openaitest.Reply{Status: 503})
	p := New(Config{BaseURL: srv.URL(), APIKey: testKey, Model: "m", MaxRetries: 5},
		WithBackoff(time.Hour, time.Hour))
	waiting := make(chan struct{})
	p.sleep = func(ctx context.Context, d time.Duration) error {
		close(waiting)
		return sleepCtx(ctx, d)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := p.Complete(ctx, agent.Request{})
		errc <- err
	}()
	<-waiting
	cancel()
	select {
	case err := <-errc:
		var e *Error
		if !errors.Is(err, context.Canceled) || !errors.As(err, &e) {
			t.Errorf("error = %v, want a *Error matching context.Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Complete did not return after cancellation")
	}
	if n := srv.RequestCount(); n != 1 {
		t.Errorf("requests = %d, want 1", n)
	}
}

func TestCompleteCanceledInFlight(t *testing.T) {
	srv := openaitest.NewServer(t)
	hold := make(chan struct{})
	defer close(hold)
	srv.Script(openaitest.Reply{Hold: hold})
	h := newHarness(t, srv.URL(), nil)
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := h.p.Complete(ctx, agent.Request{})
		errc <- err
	}()
	if _, err := srv.WaitRequests(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("error = %v, want context.Canceled", err)
	}
	if len(h.delays) != 0 || srv.RequestCount() != 1 {
		t.Errorf("a canceled call was retried: waits %v, requests %d", h.delays, srv.RequestCount())
	}
}

func TestCompleteGivesUpBeforeCallerDeadline(t *testing.T) {
	srv := openaitest.NewServer(t)
	srv.Script(openaitest.Reply{Status: 429, RetryAfter: "60"})
	h := newHarness(t, srv.URL(), nil)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	_, err := h.p.Complete(ctx, agent.Request{})
	var e *Error
	if !errors.As(err, &e) || e.Status != 429 || e.Attempts != 1 {
		t.Fatalf("error = %v, want the 429 at once", err)
	}
	if len(h.delays) != 0 {
		t.Errorf("waited %v although the deadline comes first", h.delays)
	}
}

func TestDelay(t *testing.T) {
	p := New(Config{}, WithBackoff(100*time.Millisecond, time.Second))
	tests := []struct {
		name    string
		attempt int
		info    attemptInfo
		min     time.Duration
		max     time.Duration
	}{
		{"first", 1, attemptInfo{}, 0, 100 * time.Millisecond},
		{"third", 3, attemptInfo{}, 0, 400 * time.Millisecond},
		{"capped", 40, attemptInfo{}, 0, time.Second},
		{"retry-after seconds", 1, attemptInfo{retryAfter: "3"}, 3 * time.Second, 3 * time.Second},
		{"retry-after capped", 1, attemptInfo{retryAfter: "86400"}, maxRetryAfter, maxRetryAfter},
		{"retry-after-ms wins", 1, attemptInfo{retryAfter: "3", retryAfterMS: "250"}, 250 * time.Millisecond, 250 * time.Millisecond},
		{"garbage ignored", 1, attemptInfo{retryAfter: "soon"}, 0, 100 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for range 50 {
				if d := p.delay(tt.attempt, &tt.info); d < tt.min || d > tt.max {
					t.Fatalf("delay(%d, %+v) = %v, want within [%v, %v]", tt.attempt, tt.info, d, tt.min, tt.max)
				}
			}
		})
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in     string
		want   time.Duration
		wantOK bool
	}{
		{"", 0, false},
		{"0", 0, true},
		{"2", 2 * time.Second, true},
		{" 1.5 ", 1500 * time.Millisecond, true},
		{"-4", 0, true},
		{"120", maxRetryAfter, true},
		{"Sat, 01 Mar 2025 12:00:10 GMT", 10 * time.Second, true},
		{"Sat, 01 Mar 2025 11:00:00 GMT", 0, true},
		{"Sun, 02 Mar 2025 12:00:00 GMT", maxRetryAfter, true},
		{"NaN", 0, false},
		{"tomorrow", 0, false},
	}
	for _, tt := range tests {
		got, ok := parseRetryAfter(tt.in, now)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("parseRetryAfter(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.wantOK)
		}
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"0", "5", "1e308", "-1", "Inf", "Sat, 01 Mar 2025 12:00:10 GMT", "Monday"} {
		f.Add(s)
	}
	now := time.Now()
	f.Fuzz(func(t *testing.T, v string) {
		d, ok := parseRetryAfter(v, now)
		if d < 0 || d > maxRetryAfter || (!ok && d != 0) {
			t.Errorf("parseRetryAfter(%q) = %v, %v", v, d, ok)
		}
		d, ok = parseRetryAfterMS(v)
		if d < 0 || d > maxRetryAfter || (!ok && d != 0) {
			t.Errorf("parseRetryAfterMS(%q) = %v, %v", v, d, ok)
		}
	})
}

func TestTranscribe(t *testing.T) {
	srv := openaitest.NewServer(t)
	srv.SetTranscription("remind me to call mum")
	srv.SetDefault(openaitest.Reply{Status: 500}) // chat must not be touched
	h := newHarness(t, srv.URL(), func(c *Config) { c.TranscriptionModel = "whisper-1" })
	audio := []byte("OggS fake voice note")

	got, err := h.p.Transcribe(t.Context(), "voice.ogg", audio)
	if err != nil {
		t.Fatalf("Transcribe: %v", err)
	}
	if got != "remind me to call mum" {
		t.Errorf("Transcribe = %q", got)
	}
	want := []openaitest.Transcription{{Model: "whisper-1", Filename: "voice.ogg", Audio: audio}}
	if diff := cmp.Diff(want, srv.Transcriptions()); diff != "" {
		t.Errorf("transcription requests (-want +got):\n%s", diff)
	}
	if auth := srv.Authorizations(); len(auth) != 1 || auth[0] != "Bearer "+testKey {
		t.Errorf("Authorization = %q", auth)
	}
	if srv.RequestCount() != 0 {
		t.Errorf("chat requests = %d, want 0", srv.RequestCount())
	}
}

func TestTranscribeNotConfigured(t *testing.T) {
	srv := openaitest.NewServer(t)
	h := newHarness(t, srv.URL(), nil)
	_, err := h.p.Transcribe(t.Context(), "voice.ogg", []byte("x"))
	var e *Error
	if !errors.As(err, &e) || !strings.Contains(e.Message, "transcription_model") {
		t.Fatalf("error = %v, want a *Error naming provider.transcription_model", err)
	}
	if n := len(srv.Transcriptions()); n != 0 {
		t.Errorf("transcription requests = %d, want 0", n)
	}
}

func TestTranscribeFailure(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	h := newHarness(t, "http://"+addr+"/v1", func(c *Config) { c.TranscriptionModel = "whisper-1"; c.MaxRetries = 1 })
	_, err = h.p.Transcribe(t.Context(), "voice.ogg", []byte("x"))
	var e *Error
	if !errors.As(err, &e) || !strings.Contains(e.Message, "connection refused") || e.Attempts != 2 {
		t.Fatalf("error = %v, want connection refused after 2 attempts", err)
	}
}

func BenchmarkComplete(b *testing.B) {
	srv := openaitest.NewServer(b)
	srv.SetDefault(openaitest.Reply{Text: "ok", Usage: agent.Usage{PromptTokens: 100, CompletionTokens: 10}})
	p := New(Config{BaseURL: srv.URL(), APIKey: testKey, Model: "m", MaxTokens: 1024})
	req := agent.Request{
		Messages: []agent.Message{
			{Role: agent.RoleSystem, Content: strings.Repeat("system prompt ", 100)},
			{Role: agent.RoleUser, Content: "hello"},
		},
		Tools: []agent.ToolSpec{{Name: "read_file", Parameters: json.RawMessage(`{"type":"object"}`)}},
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Complete(b.Context(), req); err != nil {
			b.Fatal(err)
		}
	}
}
