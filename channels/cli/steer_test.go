package cli_test

import (
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/channels/cli"
	"github.com/nanobot-go/nanobot/memory"
	"github.com/nanobot-go/nanobot/turns"
)

// gate is a tool that tells started when it runs and waits for release
// to be closed.
type gate struct{ started, release chan struct{} }

func (g gate) Spec() agent.ToolSpec {
	return agent.ToolSpec{Name: "gate", Description: "waits", Parameters: json.RawMessage(`{"type":"object"}`)}
}

func (g gate) Run(context.Context, json.RawMessage) (string, error) {
	g.started <- struct{}{}
	<-g.release
	return "gate open", nil
}

// gated asks for the gate after each message that starts a turn, then
// answers with the words of the last user message.
type gated struct {
	mu   sync.Mutex
	reqs int
}

func (m *gated) Complete(_ context.Context, req agent.Request) (agent.Response, error) {
	m.mu.Lock()
	m.reqs++
	m.mu.Unlock()
	last := req.Messages[len(req.Messages)-1]
	if last.Role == agent.RoleUser && !strings.Contains(last.Content, agent.SteeredMark) {
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

type loopAnswerer struct{ l *agent.Loop }

func (a loopAnswerer) Answer(ctx context.Context, t agent.Turn, msg agent.Message, _ bool) (agent.Result, error) {
	return a.l.Run(ctx, t, msg)
}

// TestTypingDuringATurnSteersIt: a line typed while the terminal's turn
// works reaches that turn at its next model call; with steering off it
// is the next message once the turn is done.
func TestTypingDuringATurnSteersIt(t *testing.T) {
	for _, steering := range []bool{true, false} {
		t.Run(map[bool]string{true: "on", false: "off"}[steering], func(t *testing.T) {
			s, err := memory.Open(t.Context(), filepath.Join(t.TempDir(), "nanobot.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			g := gate{started: make(chan struct{}, 4), release: make(chan struct{})}
			l := agent.New(&gated{}, s, []agent.Tool{g}, agent.Config{ReflectionPrompt: "Reflect."})
			e := turns.New(nil, loopAnswerer{l}, turns.Config{Steering: steering}, nil, turns.Hooks{})
			t.Cleanup(e.Shutdown)

			in, typed := io.Pipe()
			var out strings.Builder
			done := make(chan error, 1)
			c := &cli.Chat{In: in, Out: &out, Turns: e}
			go func() { done <- c.Run(t.Context()) }()

			write(t, typed, "sort my notes\n")
			<-g.started
			// Each write returns once the chat read it; the chat reads a line
			// only after it took the one before, so after the two empty lines
			// the words are held for the turn.
			write(t, typed, "only the ones from May\n")
			write(t, typed, "\n")
			write(t, typed, "\n")
			close(g.release)
			typed.Close()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			want, answers := "answered: "+agent.SteeredMark+"only the ones from May", 1
			if !steering {
				want, answers = "answered: sort my notes\n\n\nanswered: only the ones from May", 2
			}
			if got := out.String(); !strings.Contains(got, want) || strings.Count(got, "answered:") != answers {
				t.Errorf("output %q, want %d answers: %q", got, answers, want)
			}
		})
	}
}

func write(t *testing.T, w io.Writer, s string) {
	t.Helper()
	if _, err := io.WriteString(w, s); err != nil {
		t.Fatal(err)
	}
}
