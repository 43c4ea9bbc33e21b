package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/agent"
)

// recordedBytes is the size of everything a turn's records hold.
func recordedBytes(recs []agent.Record) int {
	n := 0
	for _, r := range recs {
		for _, m := range r.Messages {
			b, _ := json.Marshal(m)
			n += len(b)
		}
		for _, ev := range r.Events {
			n += len(ev.Tool) + len(ev.Args) + len(ev.Result)
		}
	}
	return n
}

func TestHostileToolCallsAreBounded(t *testing.T) {
	tests := []struct {
		name  string
		calls []agent.ToolCall
		// each result starts with want; at most maxBytes are recorded (the
		// arguments twice: in the session and in the audit event)
		want     string
		results  int
		maxBytes int
	}{
		{
			name: "invented names",
			calls: func() []agent.ToolCall {
				var cs []agent.ToolCall
				for i := range 20 {
					cs = append(cs, agent.ToolCall{ID: fmt.Sprintf("c%d", i), Name: fmt.Sprintf("t%d_", i) + strings.Repeat("x", 50<<10), Arguments: `{"a":"` + strings.Repeat("y", 100<<10) + `"}`})
				}
				return cs
			}(),
			want: "Error: unknown tool", results: 20, maxBytes: 20 * (3*agent.MaxToolNameBytes + 2*agent.MaxUnknownArgsBytes + 800),
		},
		{
			name:  "oversized arguments of a known tool",
			calls: []agent.ToolCall{{ID: "big", Name: "echo", Arguments: `{"text":"` + strings.Repeat("z", 1<<20) + `"}`}},
			want:  "Error: the arguments are larger than the limit", results: 1, maxBytes: 2*agent.MaxArgsBytes + 2000,
		},
		{
			name: "huge call ids and too many calls",
			calls: func() []agent.ToolCall {
				var cs []agent.ToolCall
				for i := range 200 {
					cs = append(cs, agent.ToolCall{ID: fmt.Sprintf("%03d", i) + strings.Repeat("i", 10<<10), Name: "nope", Arguments: `{}`})
				}
				return cs
			}(),
			want: "Error: unknown tool", results: agent.MaxCallsPerReply, maxBytes: agent.MaxCallsPerReply * (3*agent.MaxCallIDBytes + 600),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var events []agent.ToolEvent
			p := &script{replies: []agent.Response{calls(tt.calls...), text("recovered")}}
			h := newHistory()
			echo := &echoTool{}
			l := agent.New(p, h, []agent.Tool{echo}, agent.Config{}, agent.WithHooks(agent.Hooks{
				ToolCall: func(_ context.Context, ev agent.ToolEvent) { events = append(events, ev) },
			}))
			res, err := l.Run(t.Context(), turn, agent.Message{Content: "x"})
			if err != nil || res.Text != "recovered" {
				t.Fatalf("Run = %+v, %v", res, err)
			}
			if echo.runs != 0 {
				t.Errorf("echo ran %d times on a cut call", echo.runs)
			}
			var results []agent.Message
			for _, m := range p.reqs()[1].Messages {
				if m.Role == agent.RoleTool {
					results = append(results, m)
				}
			}
			if len(results) != tt.results || len(events) != tt.results {
				t.Fatalf("%d results and %d events, want %d", len(results), len(events), tt.results)
			}
			for _, r := range results {
				if !strings.HasPrefix(r.Content, tt.want) {
					t.Errorf("result %.200q, want prefix %q", r.Content, tt.want)
				}
			}
			for _, ev := range events {
				if ev.Unknown != (ev.Tool != "echo") || len(ev.Tool) > agent.MaxToolNameBytes+32 {
					t.Errorf("event tool %.100q (%d bytes), unknown %v", ev.Tool, len(ev.Tool), ev.Unknown)
				}
			}
			if n := recordedBytes(h.recs()); n > tt.maxBytes {
				t.Errorf("records hold %d bytes, want at most %d", n, tt.maxBytes)
			}
		})
	}
}
