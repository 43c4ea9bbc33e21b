package cli_test

import (
	"context"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/channels/cli"
	"github.com/nanobot-go/nanobot/turns"
)

type upper struct{ turns []agent.Turn }

func (u *upper) Answer(_ context.Context, t agent.Turn, msg agent.Message, _ bool) (agent.Result, error) {
	u.turns = append(u.turns, t)
	return agent.Result{Text: strings.ToUpper(msg.Content)}, nil
}

// engine answers with a; the terminal's turns are never recorded, so it
// needs no store.
func engine(t *testing.T, a turns.Answerer) *turns.Engine {
	e := turns.New(nil, a, turns.Config{}, nil, turns.Hooks{})
	t.Cleanup(e.Shutdown)
	return e
}

func TestInteractiveChat(t *testing.T) {
	var out strings.Builder
	r := &upper{}
	c := &cli.Chat{In: strings.NewReader("hello\n\nsecond line\n"), Out: &out, Session: "work", Turns: engine(t, r)}
	if err := c.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "HELLO") || !strings.Contains(out.String(), "SECOND LINE") {
		t.Errorf("output = %q", out.String())
	}
	if len(r.turns) != 2 || r.turns[0].Session != "cli:work" {
		t.Errorf("turns = %+v; want two turns in cli:work (empty lines skipped)", r.turns)
	}
}

// Input that is not a terminal gets the answers only, one after another.
func TestPlainChat(t *testing.T) {
	var out strings.Builder
	c := &cli.Chat{In: strings.NewReader("hello\n\nsecond line\n"), Out: &out, Turns: engine(t, &upper{}), Plain: true}
	if err := c.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "HELLO\nSECOND LINE\n"; got != want {
		t.Errorf("plain output = %q, want %q", got, want)
	}
}

func TestTurn(t *testing.T) {
	tests := []struct{ in, session, chat string }{
		{"", "cli:default", "default"},
		{"cli:x", "cli:x", "x"},
		{"notes", "cli:notes", "notes"},
		{"telegram:42", "telegram:42", "42"},
	}
	for _, tt := range tests {
		got := cli.Turn(tt.in)
		if got.Session != tt.session || got.ChatID != tt.chat {
			t.Errorf("Turn(%q) = %+v, want session %q chat %q", tt.in, got, tt.session, tt.chat)
		}
	}
}
