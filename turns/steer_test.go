package turns_test

import (
	"context"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/agenttest"
	"github.com/nanobot-go/nanobot/turns"
)

// loopAnswerer answers with a real loop over the store.
type loopAnswerer struct{ l *agent.Loop }

func (a loopAnswerer) Answer(ctx context.Context, t agent.Turn, msg agent.Message, resume bool) (agent.Result, error) {
	if resume {
		return a.l.Resume(ctx, t)
	}
	return a.l.Run(ctx, t, msg)
}

// TestTextDuringATurnSteersIt: a text the sender writes while their turn
// runs reaches that turn at its next model call, marked as written during
// the work; one answer closes both items. With steering off it waits for
// a turn of its own.
func TestTextDuringATurnSteersIt(t *testing.T) {
	for _, steering := range []bool{true, false} {
		t.Run(map[bool]string{true: "on", false: "off"}[steering], func(t *testing.T) {
			s, _ := openStore(t)
			g := agenttest.NewGate(0)
			m := &agenttest.GateModel{}
			l := agent.New(m, s, []agent.Tool{g}, agent.Config{ReflectionPrompt: "Reflect."})
			e, bell := newEngine(t, s, loopAnswerer{l}, turns.Config{Steering: steering})
			if err := e.Attach(t.Context(), texts{}, "test"); err != nil {
				t.Fatal(err)
			}
			e.Add(t.Context(), record(t, s, "1", "sort my notes"))
			<-g.Started
			e.Add(t.Context(), record(t, s, "1", "only the ones from May"))
			e.Add(t.Context(), record(t, s, "2", "another chat"))
			<-g.Started // the other chat's turn: it is not handed to chat 1's
			close(g.Release)
			if !steering {
				<-g.Started // the second text's own turn
			}
			got := replies(t, s, bell, map[bool]int{true: 2, false: 3}[steering])
			want := "1: answered: [Written while you were working on this:] only the ones from May"
			if !steering {
				want = "1: answered: only the ones from May"
			}
			if !strings.Contains(strings.Join(got, "\n"), want) {
				t.Errorf("replies %q, want one %q", got, want)
			}
			if n := len(got); steering && n != 2 || !steering && n != 3 {
				t.Errorf("replies %q: %d, want one per turn", got, n)
			}
			if items, err := s.PendingInbound(t.Context(), "test"); err != nil || len(items) != 0 {
				t.Errorf("inbox still holds %+v, %v", items, err)
			}
			if !steering {
				return
			}
			var second agent.Request
			for _, r := range m.Requests() {
				if len(r.Messages) > 0 && strings.Contains(r.Messages[len(r.Messages)-1].Content, "only the ones") {
					second = r
				}
			}
			n := len(second.Messages)
			if n < 4 || second.Messages[n-3].Role != agent.RoleTool || second.Messages[n-2].Role != agent.RoleAssistant {
				t.Fatalf("the steered request ends %+v; want the tool result, a note, then the words", second.Messages)
			}
			if !strings.HasSuffix(second.Messages[n-3].Content, "Reflect.") {
				t.Errorf("tool result %q lacks the reflection prompt", second.Messages[n-3].Content)
			}
		})
	}
}
