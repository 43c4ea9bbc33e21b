package openaitest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	goopenai "github.com/sashabaranov/go-openai"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/openai/openaitest"
)

func client(baseURL string) *goopenai.Client {
	cfg := goopenai.DefaultConfig("sk-stub-key")
	cfg.BaseURL = baseURL
	return goopenai.NewClientWithConfig(cfg)
}

func chat(text string) goopenai.ChatCompletionRequest {
	return goopenai.ChatCompletionRequest{
		Model:    "stub-model",
		Messages: []goopenai.ChatCompletionMessage{{Role: "user", Content: text}},
	}
}

func TestServerScript(t *testing.T) {
	srv := openaitest.NewServer(t)
	if !strings.HasPrefix(srv.URL(), "http://127.0.0.1:") || !strings.HasSuffix(srv.URL(), "/v1") {
		t.Fatalf("URL() = %q, want http://127.0.0.1:port/v1", srv.URL())
	}
	srv.Script(
		openaitest.Reply{Text: "first", Usage: agent.Usage{PromptTokens: 5, CompletionTokens: 2}},
		openaitest.Reply{Status: 429, RetryAfter: "3"},
		openaitest.Reply{ToolCalls: []agent.ToolCall{{ID: "call_1", Name: "exec", Arguments: `{"command":"ls"}`}}},
	)
	// Both base paths work: with and without /v1.
	withV1, bare := client(srv.URL()), client(strings.TrimSuffix(srv.URL(), "/v1"))
	ctx := t.Context()

	r, err := withV1.CreateChatCompletion(ctx, chat("one"))
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Choices[0].Message.Content; got != "first" || r.Usage.PromptTokens != 5 || r.Usage.CompletionTokens != 2 {
		t.Errorf("first reply = %q, usage %+v", got, r.Usage)
	}

	_, err = bare.CreateChatCompletion(ctx, chat("two"))
	var apiErr *goopenai.APIError
	if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != 429 {
		t.Fatalf("second reply error = %v, want HTTP 429", err)
	}

	r, err = withV1.CreateChatCompletion(ctx, chat("three"))
	if err != nil {
		t.Fatal(err)
	}
	want := []goopenai.ToolCall{{ID: "call_1", Type: "function", Function: goopenai.FunctionCall{Name: "exec", Arguments: `{"command":"ls"}`}}}
	if diff := cmp.Diff(want, r.Choices[0].Message.ToolCalls); diff != "" {
		t.Errorf("tool calls (-want +got):\n%s", diff)
	}
	if r.Choices[0].FinishReason != goopenai.FinishReasonToolCalls {
		t.Errorf("finish_reason = %q", r.Choices[0].FinishReason)
	}

	r, err = withV1.CreateChatCompletion(ctx, chat("four"))
	if err != nil || r.Choices[0].Message.Content != "ok" {
		t.Errorf("reply with empty script = %+v, %v; want the text ok", r, err)
	}
	srv.SetDefault(openaitest.Reply{Text: "default"})
	r, err = withV1.CreateChatCompletion(ctx, chat("five"))
	if err != nil || r.Choices[0].Message.Content != "default" {
		t.Errorf("reply after SetDefault = %+v, %v", r, err)
	}

	var texts []string
	for _, req := range srv.Requests() {
		texts = append(texts, req.Messages[0].Content)
	}
	if diff := cmp.Diff([]string{"one", "two", "three", "four", "five"}, texts); diff != "" {
		t.Errorf("recorded requests, failed ones included (-want +got):\n%s", diff)
	}
	if n := srv.RequestCount(); n != 5 {
		t.Errorf("RequestCount = %d", n)
	}
	if last, ok := srv.LastRequest(); !ok || last.Messages[0].Content != "five" {
		t.Errorf("LastRequest = %+v, %v", last, ok)
	}
	for _, a := range srv.Authorizations() {
		if a != "Bearer sk-stub-key" {
			t.Errorf("Authorization = %q", a)
		}
	}
}

func TestServerRawReplies(t *testing.T) {
	srv := openaitest.NewServer(t)
	srv.Script(
		openaitest.Reply{Status: 503, RetryAfter: "Wed, 21 Oct 2015 07:28:00 GMT"},
		openaitest.Reply{Body: `{"choices":[]}`},
		openaitest.Reply{Status: 502, Body: "<html>bad gateway</html>"},
	)
	tests := []struct {
		status     int
		retryAfter string
		body       string
	}{
		{503, "Wed, 21 Oct 2015 07:28:00 GMT", `"error"`},
		{200, "", `{"choices":[]}`},
		{502, "", "<html>bad gateway</html>"},
	}
	for i, tt := range tests {
		resp, err := http.Post(srv.URL()+"/chat/completions", "application/json", strings.NewReader(`{"model":"m","messages":[]}`))
		if err != nil {
			t.Fatal(err)
		}
		var body bytes.Buffer
		body.ReadFrom(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.status || resp.Header.Get("Retry-After") != tt.retryAfter || !strings.Contains(body.String(), tt.body) {
			t.Errorf("reply %d = %d, Retry-After %q, body %q; want %d, %q, containing %q",
				i, resp.StatusCode, resp.Header.Get("Retry-After"), body.String(), tt.status, tt.retryAfter, tt.body)
		}
	}
}

// The usage block is rendered as OpenAI renders it: cached tokens under
// prompt_tokens_details, and no details when nothing was cached.
func TestServerUsageBlock(t *testing.T) {
	srv := openaitest.NewServer(t)
	tests := []struct {
		name    string
		u       agent.Usage
		details string // prompt_tokens_details as sent
	}{
		{"cached", agent.Usage{PromptTokens: 2006, CompletionTokens: 300, CachedTokens: 1920}, `{"audio_tokens":0,"cached_tokens":1920}`},
		{"none cached", agent.Usage{PromptTokens: 5, CompletionTokens: 2}, `null`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv.Script(openaitest.Reply{Text: "hi", Usage: tt.u})
			resp, err := http.Post(srv.URL()+"/chat/completions", "application/json", strings.NewReader(`{"model":"m","messages":[]}`))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body struct {
				Usage struct {
					Prompt     int             `json:"prompt_tokens"`
					Completion int             `json:"completion_tokens"`
					Total      int             `json:"total_tokens"`
					Details    json.RawMessage `json:"prompt_tokens_details"`
				} `json:"usage"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
				t.Fatal(err)
			}
			u := body.Usage
			if u.Prompt != tt.u.PromptTokens || u.Completion != tt.u.CompletionTokens || u.Total != tt.u.Total() ||
				string(u.Details) != tt.details {
				t.Errorf("usage = %d/%d/%d, prompt_tokens_details %s; want %d/%d/%d, %s",
					u.Prompt, u.Completion, u.Total, u.Details, tt.u.PromptTokens, tt.u.CompletionTokens, tt.u.Total(), tt.details)
			}
		})
	}
}

func TestServerHoldAndWait(t *testing.T) {
	srv := openaitest.NewServer(t)
	hold := make(chan struct{})
	srv.Script(openaitest.Reply{Text: "held", Hold: hold})
	done := make(chan string, 1)
	go func() {
		r, err := client(srv.URL()).CreateChatCompletion(context.Background(), chat("wait for me"))
		if err != nil {
			done <- err.Error()
			return
		}
		done <- r.Choices[0].Message.Content
	}()
	reqs, err := srv.WaitRequests(t.Context(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 1 || reqs[0].Messages[0].Content != "wait for me" {
		t.Errorf("WaitRequests = %+v", reqs)
	}
	select {
	case got := <-done:
		t.Fatalf("held reply arrived early: %q", got)
	default:
	}
	close(hold)
	if got := <-done; got != "held" {
		t.Errorf("held reply = %q", got)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer cancel()
	if _, err := srv.WaitRequests(ctx, 2); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitRequests beyond what arrives = %v, want deadline exceeded", err)
	}
}

func TestServerDelayEndsWithClient(t *testing.T) {
	srv := openaitest.NewServer(t)
	srv.Script(openaitest.Reply{Delay: time.Hour})
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := client(srv.URL()).CreateChatCompletion(ctx, chat("slow"))
		errc <- err
	}()
	if _, err := srv.WaitRequests(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("error = %v, want context.Canceled", err)
	}
	// The cleanup's Close would hang if the handler still waited.
}

func TestServerTranscription(t *testing.T) {
	srv := openaitest.NewServer(t)
	srv.SetTranscription("hello there")
	tests := []struct {
		name   string
		format goopenai.AudioResponseFormat
	}{
		{"json", ""},
		{"text", goopenai.AudioResponseFormatText},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := client(srv.URL()).CreateTranscription(t.Context(), goopenai.AudioRequest{
				Model: "whisper-1", FilePath: "note.ogg", Reader: strings.NewReader("audio"), Format: tt.format,
			})
			if err != nil {
				t.Fatal(err)
			}
			if strings.TrimSpace(r.Text) != "hello there" {
				t.Errorf("text = %q", r.Text)
			}
		})
	}
	got := srv.Transcriptions()
	if len(got) != 2 || got[0].Model != "whisper-1" || got[0].Filename != "note.ogg" || string(got[0].Audio) != "audio" {
		t.Errorf("Transcriptions = %+v", got)
	}
	if srv.RequestCount() != 0 {
		t.Errorf("chat requests = %d, want 0", srv.RequestCount())
	}
}

func TestScripted(t *testing.T) {
	p := openaitest.NewScripted(
		openaitest.Reply{Text: "one", Usage: agent.Usage{PromptTokens: 3, CompletionTokens: 1, CachedTokens: 2}},
		openaitest.Reply{Status: 500},
		openaitest.Reply{ToolCalls: []agent.ToolCall{{ID: "c1", Name: "exec", Arguments: "{}"}}},
	)
	ctx := t.Context()
	req := func(s string) agent.Request {
		return agent.Request{Messages: []agent.Message{{Role: agent.RoleUser, Content: s}}}
	}

	r, err := p.Complete(ctx, req("a"))
	want := agent.Response{
		Message: agent.Message{Role: agent.RoleAssistant, Content: "one", Usage: agent.Usage{PromptTokens: 3, CompletionTokens: 1, CachedTokens: 2}},
		Usage:   agent.Usage{PromptTokens: 3, CompletionTokens: 1, CachedTokens: 2},
	}
	if err != nil || !cmp.Equal(want, r) {
		t.Errorf("first = %+v, %v; want %+v", r, err, want)
	}
	_, err = p.Complete(ctx, req("b"))
	var se *openaitest.StatusError
	if !errors.As(err, &se) || se.Status != 500 {
		t.Errorf("second error = %v, want StatusError 500", err)
	}
	r, _ = p.Complete(ctx, req("c"))
	if len(r.Message.ToolCalls) != 1 || r.Message.ToolCalls[0].ID != "c1" {
		t.Errorf("third = %+v, want the tool call", r)
	}
	r, _ = p.Complete(ctx, req("d"))
	if r.Message.Content != "ok" {
		t.Errorf("empty script reply = %q, want ok", r.Message.Content)
	}
	p.SetDefault(openaitest.Reply{Text: "dflt"})
	p.Script(openaitest.Reply{Text: "queued"})
	for _, w := range []string{"queued", "dflt", "dflt"} {
		if r, _ := p.Complete(ctx, req("x")); r.Message.Content != w {
			t.Errorf("reply = %q, want %q", r.Message.Content, w)
		}
	}
	if got := p.Requests(); len(got) != 7 || got[1].Messages[0].Content != "b" {
		t.Errorf("Requests = %+v", got)
	}

	p.SetRecording(false)
	p.Complete(ctx, req("unrecorded"))
	if len(p.Requests()) != 7 || p.RequestCount() != 8 {
		t.Errorf("with recording off: %d recorded, %d counted; want 7, 8", len(p.Requests()), p.RequestCount())
	}
}

func TestScriptedHold(t *testing.T) {
	hold := make(chan struct{})
	p := openaitest.NewScripted(openaitest.Reply{Hold: hold, Text: "late"}, openaitest.Reply{Hold: hold})
	got := make(chan string, 1)
	go func() {
		r, err := p.Complete(context.Background(), agent.Request{})
		if err != nil {
			got <- err.Error()
			return
		}
		got <- r.Message.Content
	}()
	if _, err := p.WaitRequests(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	close(hold)
	if s := <-got; s != "late" {
		t.Errorf("held reply = %q", s)
	}

	p2 := openaitest.NewScripted(openaitest.Reply{Hold: make(chan struct{})})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := p2.Complete(ctx, agent.Request{}); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled hold = %v, want context.Canceled", err)
	}
}

func BenchmarkScripted(b *testing.B) {
	p := openaitest.NewScripted()
	p.SetRecording(false)
	p.SetDefault(openaitest.Reply{ToolCalls: []agent.ToolCall{{ID: "c", Name: "exec", Arguments: "{}"}}})
	req := agent.Request{Messages: []agent.Message{{Role: agent.RoleUser, Content: "hi"}}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Complete(b.Context(), req); err != nil {
			b.Fatal(err)
		}
	}
}

func TestServerFunc(t *testing.T) {
	s := openaitest.NewServer(t)
	s.SetFunc(func(req goopenai.ChatCompletionRequest) openaitest.Reply {
		return openaitest.Reply{Text: "re: " + req.Messages[len(req.Messages)-1].Content}
	})
	s.Script(openaitest.Reply{Text: "scripted first"})
	c := client(s.URL())
	for _, want := range []string{"scripted first", "re: second"} {
		resp, err := c.CreateChatCompletion(t.Context(), chat(strings.TrimPrefix(want, "re: ")))
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.Choices[0].Message.Content; got != want {
			t.Errorf("reply = %q, want %q", got, want)
		}
	}
}
