// Package cli is the terminal channel: one message from the command line,
// or an interactive chat on standard input. Its messages are not recorded
// in the inbox: each waits for its session's turn in the turn engine and
// the answer is printed, not queued.
package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/session"
	"github.com/nanobot-go/nanobot/turns"
)

// Turns is the turn engine the chat's messages wait in; it serves /stop
// and /status too.
type Turns interface {
	Await(ctx context.Context, src turns.Source, j turns.Job) (string, error)
	Stop(chat string) string
	ChatLoad(chat string) turns.Load
}

// Sessions serves /new and /status. Reset folds the session into
// long-term memory and starts it over; an error may carry a sentence for
// the user (UserMessage). A Status text with a "Model:" line of its own
// replaces the chat's.
type Sessions interface {
	Reset(ctx context.Context, session string) error
	Status(ctx context.Context, session string) (string, error)
}

// Chat talks to the assistant through a terminal.
type Chat struct {
	In      io.Reader
	Out     io.Writer
	Session string // "cli:default" when empty
	Turns   Turns
	// Sessions serves /new and /status; without it /new is not
	// available and /status shows the queue alone.
	Sessions Sessions
	Model    string    // /status names it when Sessions does not
	Started  time.Time // /status tells the uptime from it; none when zero
	// Plain reads messages line by line and prints only the answers, with
	// no banner and no prompts: for input that is not a terminal. Tool
	// calls are shown only when it is not set.
	Plain bool
	// Dim prints the tool call lines dimmed with ANSI escapes: Out is a
	// terminal.
	Dim bool
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
type source struct {
	session  string
	steer    func() []agent.Steer // what was typed while the turn runs; nil when nothing is read meanwhile
	progress io.Writer            // where tool calls are shown; nil: nowhere
	dim      bool
}

func (s source) Prepare(context.Context, turns.InboxItem) turns.Job { return turns.Job{Now: true} }

func (s source) Plan(_ context.Context, batch []*turns.Job) turns.Plan {
	return turns.Plan{
		Turn:    Turn(s.session),
		Message: agent.Message{Role: agent.RoleUser, Content: batch[0].Text},
		// The answer as the loop gave it, an outage's honest text too.
		Told:  func(res agent.Result, _ error) string { return res.Text },
		Steer: s.steer,
	}
}

// Ask answers text and returns the reply and the turn's error: when the
// model could not be reached, both an honest text and the error. A
// command (/new, /stop, /status, /help) is answered by the chat itself.
func (c *Chat) Ask(ctx context.Context, text string) (string, error) {
	return c.answer(ctx, text, nil, c.Out)
}

// answer is Ask with the turn's steering and where its tool calls are
// shown.
func (c *Chat) answer(ctx context.Context, text string, steer func() []agent.Steer, out io.Writer) (string, error) {
	if name, ok := slash(strings.TrimSpace(text)); ok {
		return c.commandReply(ctx, name)
	}
	t := Turn(c.Session)
	src := source{session: t.Session, steer: steer, dim: c.Dim}
	if !c.Plain {
		src.progress = out
	}
	return c.Turns.Await(ctx, src, turns.Job{Chat: t.Session, Text: text})
}

// Once answers text and returns the reply; an outage is an honest reply,
// not an error.
func (c *Chat) Once(ctx context.Context, text string) (string, error) {
	return honest(c.Ask(ctx, text))
}

func honest(reply string, err error) (string, error) {
	if err != nil && reply != "" {
		return reply, nil
	}
	return reply, err
}

// Run is an interactive chat; it ends at end of input (Ctrl-D), on "exit"
// or when ctx is cancelled. Interactively, what is typed while a turn
// works is read at once: the turn reads it at its next model call when
// steering is on, and what it did not read is the next message; /stop,
// /status and /help are answered meanwhile, and /new waits for the turn.
func (c *Chat) Run(ctx context.Context) error {
	if c.Plain {
		return c.runPlain(ctx)
	}
	// The running turn prints its tool calls while commands are answered.
	out := &syncWriter{w: c.Out}
	fmt.Fprintln(out, "nanobot: type a message, /help for the commands, Ctrl-D to quit.")
	stop := make(chan struct{})
	defer close(stop)
	in := readLines(c.In, stop)
	var typed typing
	for {
		text, quit := typed.next()
		if text == "" && !quit {
			fmt.Fprint(out, "> ")
			select {
			case l, ok := <-in.lines:
				if !ok {
					fmt.Fprintln(out)
					return in.err
				}
				text, quit = command(l)
			case <-ctx.Done():
				return nil
			}
		}
		if quit {
			return nil
		}
		if text == "" {
			continue
		}
		reply, err := c.during(ctx, text, in, &typed, out)
		switch {
		case errors.Is(err, turns.ErrStopped):
			continue // /stop said what it stopped
		case err != nil && ctx.Err() != nil:
			return nil
		case err != nil:
			return err
		}
		fmt.Fprintf(out, "\n%s\n\n", strings.TrimSpace(reply))
	}
}

// during answers text while reading what is typed meanwhile.
func (c *Chat) during(ctx context.Context, text string, in *lines, typed *typing, out io.Writer) (string, error) {
	type answer struct {
		text string
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		reply, err := honest(c.answer(ctx, text, typed.take, out))
		done <- answer{reply, err}
	}()
	src := in.lines
	for {
		select {
		case a := <-done:
			return a.text, a.err
		case l, ok := <-src:
			if !ok {
				src = nil // end of input: the turn still finishes
				typed.add("", true)
				continue
			}
			line, quit := command(l)
			if name, ok := slash(line); ok && name != "new" {
				reply, _ := c.commandReply(ctx, name)
				fmt.Fprintf(out, "\n%s\n\n", reply)
				continue
			}
			typed.add(line, quit)
		}
	}
}

// runPlain reads messages line by line and prints only the answers.
func (c *Chat) runPlain(ctx context.Context) error {
	lines := bufio.NewScanner(c.In)
	lines.Buffer(make([]byte, 64*1024), 1<<20)
	for lines.Scan() {
		text, quit := command(lines.Text())
		if quit {
			return nil
		}
		if text == "" {
			continue
		}
		reply, err := c.Once(ctx, text)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		fmt.Fprintln(c.Out, strings.TrimSpace(reply))
	}
	return lines.Err()
}

// command is a typed line's message, or quit for the words that end the
// chat.
func command(line string) (text string, quit bool) {
	text = strings.TrimSpace(line)
	switch text {
	case "exit", "quit", "/exit", "/quit":
		return "", true
	}
	return text, false
}

// syncWriter lets a turn's tool calls and the answers of commands typed
// meanwhile share the terminal.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
