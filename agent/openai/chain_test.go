package openai

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/openai/openaitest"
)

func TestChainFallsBackAndCoolsDown(t *testing.T) {
	primary, fallback := openaitest.NewServer(t), openaitest.NewServer(t)
	primary.SetDefault(openaitest.Reply{Status: 503})
	fallback.SetDefault(openaitest.Reply{Text: "from the fallback"})
	p := newHarness(t, primary.URL(), func(c *Config) { c.MaxRetries = 1 })
	f := newHarness(t, fallback.URL(), func(c *Config) { c.Model = "backup-model" })
	now := time.Unix(1_800_000_000, 0)
	var answers []string
	c := NewChain(p.p, []*Provider{f.p}, 5*time.Minute, nil, func(e string) { answers = append(answers, e) })
	c.now = func() time.Time { return now }
	req := agent.Request{Messages: []agent.Message{{Role: agent.RoleUser, Content: "hi"}}}

	resp, err := c.Complete(t.Context(), req)
	if err != nil || resp.Message.Content != "from the fallback" || resp.Model != "backup-model" {
		t.Fatalf("Complete = %+v, %v; want the fallback's answer", resp, err)
	}
	if got := primary.RequestCount(); got != 2 {
		t.Errorf("primary got %d requests, want 2 (its retries first)", got)
	}
	if name := c.Answered(); !strings.HasPrefix(name, "backup-model@127.0.0.1:") {
		t.Errorf("Answered() = %q, want the fallback named by model and host", name)
	}

	eps := c.Endpoints()
	if len(eps) != 2 || !eps[0].DownUntil.Equal(now.Add(5*time.Minute)) || !eps[1].DownUntil.IsZero() ||
		!strings.HasPrefix(eps[0].Name, "gpt-4o-mini@") || eps[1].Name != c.Answered() {
		t.Errorf("Endpoints() = %+v, want the primary resting for the cooldown, the fallback that answered available", eps)
	}

	// Within the cooldown the failed primary is not asked first.
	if _, err := c.Complete(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if got := primary.RequestCount(); got != 2 {
		t.Errorf("primary got %d requests during its cooldown, want still 2", got)
	}

	// After it, the primary is tried first again, and answers.
	now = now.Add(5*time.Minute + time.Second)
	primary.SetDefault(openaitest.Reply{Text: "primary is back"})
	resp, err = c.Complete(t.Context(), req)
	if err != nil || resp.Message.Content != "primary is back" || resp.Model != "gpt-4o-mini" {
		t.Errorf("after the cooldown Complete = %+v, %v; want the primary's answer", resp, err)
	}
	if eps := c.Endpoints(); !eps[0].DownUntil.IsZero() {
		t.Errorf("after the cooldown the primary still rests: %+v", eps)
	}
	if len(answers) != 3 || !strings.HasPrefix(answers[0], "backup-model@") || !strings.HasPrefix(answers[2], "gpt-4o-mini@") {
		t.Errorf("endpoints told = %q, want the fallback twice, then the primary", answers)
	}
}

// A request the endpoint refuses is not sent elsewhere.
func TestChainDoesNotFallBackOnRefusal(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply openaitest.Reply
	}{
		{"400", openaitest.Reply{Status: 400, Body: `{"error":{"message":"bad tool schema"}}`}},
		{"401", openaitest.Reply{Status: 401}},
		{"context overflow", openaitest.Reply{Status: 400, Body: `{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.","code":"context_length_exceeded"}}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			primary, fallback := openaitest.NewServer(t), openaitest.NewServer(t)
			primary.Script(tc.reply)
			c := NewChain(newHarness(t, primary.URL(), nil).p, []*Provider{newHarness(t, fallback.URL(), nil).p}, time.Minute, nil, nil)
			_, err := c.Complete(t.Context(), agent.Request{Messages: []agent.Message{{Role: agent.RoleUser, Content: "hi"}}})
			if err == nil || fallback.RequestCount() != 0 {
				t.Errorf("Complete = %v with %d fallback requests; want the error and none", err, fallback.RequestCount())
			}
		})
	}
}

func TestContextOverflowIsRecognised(t *testing.T) {
	for _, tc := range []struct {
		body      string
		wantLimit int
	}{
		{`{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.","code":"context_length_exceeded"}}`, 8192},
		{`{"error":{"message":"the request exceeds the available context size, try increasing it"}}`, 0},
		{`{"error":{"message":"prompt is too long: 210000 tokens > 200000 maximum"}}`, 0},
		{`{"error":{"message":"This model's maximum context length is 4096 tokens"}}`, 4096},
	} {
		srv := openaitest.NewServer(t)
		srv.Script(openaitest.Reply{Status: 400, Body: tc.body})
		_, err := newHarness(t, srv.URL(), nil).p.Complete(t.Context(), agent.Request{Messages: []agent.Message{{Role: agent.RoleUser, Content: "hi"}}})
		var perr *Error
		if !errors.Is(err, agent.ErrContextOverflow) || !errors.As(err, &perr) || perr.ContextLimit() != tc.wantLimit {
			t.Errorf("%s: error %v (limit %v), want a context overflow with limit %d", tc.body, err, perr, tc.wantLimit)
		}
		if srv.RequestCount() != 1 {
			t.Errorf("%s: %d requests, want 1 (not retried)", tc.body, srv.RequestCount())
		}
	}
}
