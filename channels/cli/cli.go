// Package cli is the terminal channel: one message from the command line,
// or an interactive chat on standard input.
package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/session"
)

// Responder answers one message of a session.
type Responder interface {
	Respond(ctx context.Context, t agent.Turn, msg agent.Message, resume bool) (string, error)
}

// Chat talks to a Responder through a terminal.
type Chat struct {
	In      io.Reader
	Out     io.Writer
	Session string // "cli:default" when empty
	R       Responder
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

// Once answers text and returns the reply.
func (c *Chat) Once(ctx context.Context, text string) (string, error) {
	return c.R.Respond(ctx, Turn(c.Session), agent.Message{Role: agent.RoleUser, Content: text}, false)
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
