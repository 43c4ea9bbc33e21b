package agent_test

import (
	"testing"

	"github.com/nanobot-go/nanobot/agent"
)

// BenchmarkLoopIteration measures the loop's own overhead for one turn of
// two model calls and one tool call, against an in-process provider.
func BenchmarkLoopIteration(b *testing.B) {
	call := agent.ToolCall{ID: "c1", Name: "echo", Arguments: `{"text":"x"}`}
	p := &script{}
	h := newHistory()
	l := newLoop(p, h, &echoTool{})
	b.ReportAllocs()
	for b.Loop() {
		p.replies = append(p.replies[:0], calls(call), text("done"))
		p.requests = p.requests[:0]
		h.msgs = map[string][]agent.Message{}
		if _, err := l.Run(b.Context(), turn, agent.Message{Content: "hi"}); err != nil {
			b.Fatal(err)
		}
	}
}
