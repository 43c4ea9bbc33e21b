package turns_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/turns"
)

// gate is a tool that tells started when it runs and returns when
// released.
type gate struct{ started, release chan struct{} }

func (g gate) Spec() agent.ToolSpec {
	return agent.ToolSpec{Name: "gate", Description: "waits", Parameters: json.RawMessage(`{"type":"object"}`)}
}

func (g gate) Run(context.Context, json.RawMessage) (string, error) {
	g.started <- struct{}{}
	<-g.release
	return "gate open", nil
}

// model asks for the gate once a turn, then answers with what the user
// wrote last; it keeps every request.
type model struct {
	mu   sync.Mutex
	reqs []agent.Request
}

func (m *model) Complete(_ context.Context, req agent.Request) (agent.Response, error) {
	m.mu.Lock()
	m.reqs = append(m.reqs, req)
	m.mu.Unlock()
	last := req.Messages[len(req.Messages)-1]
	if last.Role == agent.RoleUser && !strings.Contains(last.Content, agent.SteeredMark) { // the content starts with its time
		return agent.Response{Message: agent.Message{Role: agent.RoleAssistant,
			ToolCalls: []agent.ToolCall{{ID: "g", Name: "gate", Arguments: `{}`}}}}, nil
	}
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if m := req.Messages[i]; m.Role == agent.RoleUser {
			_, words, _ := strings.Cut(m.Content, "\n") // after its time
			return agent.Response{Message: agent.Message{Role: agent.RoleAssistant, Content: "answered: " + words}}, nil
		}
	}
	return agent.Response{}, nil
}

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
			g := gate{started: make(chan struct{}), release: make(chan struct{})}
			m := &model{}
			l := agent.New(m, s, []agent.Tool{g}, agent.Config{ReflectionPrompt: "Reflect."})
			e, bell := newEngine(t, s, loopAnswerer{l}, turns.Config{Steering: steering})
			if err := e.Attach(t.Context(), texts{}, "test"); err != nil {
				t.Fatal(err)
			}
			e.Add(t.Context(), record(t, s, "1", "sort my notes"))
			<-g.started
			e.Add(t.Context(), record(t, s, "1", "only the ones from May"))
			e.Add(t.Context(), record(t, s, "2", "another chat"))
			<-g.started // the other chat's turn: it is not handed to chat 1's
			close(g.release)
			if !steering {
				<-g.started // the second text's own turn
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
			m.mu.Lock()
			defer m.mu.Unlock()
			var second agent.Request
			for _, r := range m.reqs {
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
