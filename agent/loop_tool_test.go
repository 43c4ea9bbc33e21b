package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/agent"
)

// stuckTool ignores its context and blocks until released; when it is
// finally released it writes into its audit event, as a late tool would.
type stuckTool struct {
	started, release, finished chan struct{}
}

func newStuckTool() *stuckTool {
	return &stuckTool{started: make(chan struct{}), release: make(chan struct{}), finished: make(chan struct{})}
}

func (s *stuckTool) Spec() agent.ToolSpec {
	return agent.ToolSpec{Name: "stuck", Description: "blocks", Parameters: json.RawMessage(`{"type":"object"}`)}
}

func (s *stuckTool) Run(ctx context.Context, _ json.RawMessage) (string, error) {
	close(s.started)
	<-s.release
	if ev := agent.EventFrom(ctx); ev != nil {
		ev.Verdict, ev.Reason = "allow", "late"
	}
	close(s.finished)
	return "late output", nil
}

// TestToolIgnoringContextDoesNotHoldTheTurn: a tool that blocks and never
// looks at its context cannot keep a stopped or timed-out turn running.
// The call is recorded as one that may or may not have run, a call after it
// does not start, and what the tool does when it returns at last reaches
// nothing of the turn.
func TestToolIgnoringContextDoesNotHoldTheTurn(t *testing.T) {
	const grace = 50 * time.Millisecond
	tests := []struct {
		name    string
		timeout time.Duration // the turn's deadline; 0: stopped by cancelling
		wantErr error
	}{
		{"stopped", 0, context.Canceled},
		{"deadline", 200 * time.Millisecond, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tool, echo := newStuckTool(), &echoTool{}
			t.Cleanup(func() {
				select {
				case <-tool.release:
				default:
					close(tool.release)
				}
			})
			p := &script{replies: []agent.Response{calls(
				agent.ToolCall{ID: "a", Name: "stuck", Arguments: `{}`},
				agent.ToolCall{ID: "b", Name: "echo", Arguments: `{"text":"after"}`},
			)}}
			h := newHistory()
			l := agent.New(p, h, []agent.Tool{tool, echo}, agent.Config{TurnTimeout: tt.timeout, ToolStopGrace: grace})
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			if tt.timeout == 0 {
				go func() {
					<-tool.started
					cancel()
				}()
			}
			start := time.Now()
			res, err := l.Run(ctx, turn, agent.Message{Content: "x"})
			took := time.Since(start)
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) || tt.wantErr == nil && err != nil {
				t.Fatalf("Run = %+v, %v; want error %v", res, err, tt.wantErr)
			}
			if limit := tt.timeout + grace + time.Second; took > limit {
				t.Errorf("Run took %v after the turn ended, want at most %v", took, limit)
			}
			if tt.wantErr == nil && res.Stop != agent.StopTimeout {
				t.Errorf("stop = %q, want %q", res.Stop, agent.StopTimeout)
			}
			if echo.runs != 0 {
				t.Errorf("the call after the stuck one ran %d times after the turn ended", echo.runs)
			}

			results := map[string]string{}
			for _, m := range h.all(turn.Session) {
				if m.Role == agent.RoleTool {
					results[m.ToolCallID] = m.Content
				}
			}
			if got := results["a"]; !strings.HasPrefix(got, "Error:") || !strings.Contains(got, "may or may not have done its work") {
				t.Errorf("result of the stuck call = %q, want one saying it may or may not have run", got)
			}
			if got := results["b"]; !strings.HasPrefix(got, "Error: not run") {
				t.Errorf("result of the call after it = %q, want one saying it did not run", got)
			}

			close(tool.release)
			<-tool.finished
			audited := false
			for _, r := range h.recs() {
				for _, ev := range r.Events {
					if ev.Tool != "stuck" {
						continue
					}
					audited = true
					if ev.Verdict != "unknown" || ev.Reason == "late" {
						t.Errorf("audit event of the stuck call = %+v, want verdict unknown and no trace of its late return", ev)
					}
				}
			}
			if !audited {
				t.Error("the stuck call has no audit event on record")
			}
			for _, m := range h.all(turn.Session) {
				if strings.Contains(m.Content, "late output") {
					t.Errorf("the late output reached the session: %+v", m)
				}
			}
		})
	}
}
