// Package cli is the terminal channel: one message from the command line,
// or an interactive chat on standard input. Its messages are not recorded
// in the inbox: each waits for its session's turn in the turn engine and
// the answer is printed, not queued.
package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/session"
	"github.com/nanobot-go/nanobot/turns"
)

// Turns is the turn engine the chat's messages wait in.
type Turns interface {
	Await(ctx context.Context, src turns.Source, j turns.Job) (string, error)
}

// Chat talks to the assistant through a terminal.
type Chat struct {
	In      io.Reader
	Out     io.Writer
	Session string // "cli:default" when empty
	Turns   Turns
	// Plain reads messages line by line and prints only the answers, with
	// no banner and no prompts: for input that is not a terminal.
	Plain bool
}

// Turn returns the turn of a session name such as "cli:default" or "work".
func Turn(name string) agent.Turn {
	s := session.Chat("cli", "default")
	switch parsed, err := session.Parse(name); {
	case name == "":
	case err == nil && parsed.Kind == session.KindChat:
		s = parsed
	default:
		s = session.Chat("cli", name)
	}
	return agent.Turn{Session: s.String(), Channel: s.Channel, ChatID: s.Chat, SenderID: "owner"}
}

// source builds the turn of a typed message.
type source struct{ session string }

func (s source) Prepare(context.Context, turns.InboxItem) turns.Job { return turns.Job{Now: true} }

func (s source) Plan(_ context.Context, batch []*turns.Job) turns.Plan {
	return turns.Plan{
		Turn:    Turn(s.session),
		Message: agent.Message{Role: agent.RoleUser, Content: batch[0].Text},
		// The answer as the loop gave it, an outage's honest text too.
		Told: func(res agent.Result, _ error) string { return res.Text },
	}
}

// Ask answers text and returns the reply and the turn's error: when the
// model could not be reached, both an honest text and the error.
func (c *Chat) Ask(ctx context.Context, text string) (string, error) {
	t := Turn(c.Session)
	return c.Turns.Await(ctx, source{session: t.Session}, turns.Job{Chat: t.Session, Text: text})
}

// Once answers text and returns the reply; an outage is an honest reply,
// not an error.
func (c *Chat) Once(ctx context.Context, text string) (string, error) {
	reply, err := c.Ask(ctx, text)
	if err != nil && reply != "" {
		return reply, nil
	}
	return reply, err
}

// Run is an interactive chat; it ends at end of input (Ctrl-D), on "exit"
// or when ctx is cancelled.
func (c *Chat) Run(ctx context.Context) error {
	if !c.Plain {
		fmt.Fprintln(c.Out, "nanobot: type a message, Ctrl-D to quit.")
	}
	lines := bufio.NewScanner(c.In)
	lines.Buffer(make([]byte, 64*1024), 1<<20)
	for {
		if !c.Plain {
			fmt.Fprint(c.Out, "> ")
		}
		if !lines.Scan() {
			if !c.Plain {
				fmt.Fprintln(c.Out)
			}
			return lines.Err()
		}
		text := strings.TrimSpace(lines.Text())
		switch text {
		case "":
			continue
		case "exit", "quit", "/exit", "/quit":
			return nil
		}
		reply, err := c.Once(ctx, text)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if c.Plain {
			fmt.Fprintln(c.Out, strings.TrimSpace(reply))
			continue
		}
		fmt.Fprintf(c.Out, "\n%s\n\n", strings.TrimSpace(reply))
	}
}
