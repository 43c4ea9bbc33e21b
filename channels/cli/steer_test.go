package cli_test

import (
	"context"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/agenttest"
	"github.com/nanobot-go/nanobot/channels/cli"
	"github.com/nanobot-go/nanobot/memory"
	"github.com/nanobot-go/nanobot/turns"
)

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
			g := agenttest.NewGate(4)
			l := agent.New(&agenttest.GateModel{}, s, []agent.Tool{g}, agent.Config{ReflectionPrompt: "Reflect."})
			e := turns.New(nil, loopAnswerer{l}, turns.Config{Steering: steering}, nil, turns.Hooks{})
			t.Cleanup(e.Shutdown)

			in, typed := io.Pipe()
			var out strings.Builder
			done := make(chan error, 1)
			c := &cli.Chat{In: in, Out: &out, Turns: e}
			go func() { done <- c.Run(t.Context()) }()

			write(t, typed, "sort my notes\n")
			<-g.Started
			// Each write returns once the chat read it; the chat reads a line
			// only after it took the one before, so after the two empty lines
			// the words are held for the turn.
			write(t, typed, "only the ones from May\n")
			write(t, typed, "\n")
			write(t, typed, "\n")
			close(g.Release)
			typed.Close()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			want, answers := "answered: "+agent.SteeredMark+"only the ones from May", 1
			if !steering {
				want, answers = "answered: sort my notes\n\n\nanswered: only the ones from May", 2
			}
			got := toolLines.ReplaceAllString(out.String(), "")
			if !strings.Contains(got, want) || strings.Count(got, "answered:") != answers {
				t.Errorf("output %q, want %d answers: %q", got, answers, want)
			}
		})
	}
}

// toolLines are the lines the chat prints for tool calls.
var toolLines = regexp.MustCompile(`  · [^\n]*\n`)

func write(t *testing.T, w io.Writer, s string) {
	t.Helper()
	if _, err := io.WriteString(w, s); err != nil {
		t.Fatal(err)
	}
}
