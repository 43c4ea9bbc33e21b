package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/turns"
)

// The terminal's commands are Telegram's that make sense without a chat
// app around them, in the same words.
const (
	helpText = "Type a message and I'll answer.\n\n" +
		"/new: start a fresh conversation\n" +
		"/stop: stop what I am working on\n" +
		"/status: model, conversation and queue\n" +
		"/help: this list\n" +
		"exit, quit or Ctrl-D: leave the chat\n\n" +
		"Any other /command gets this list too; everything else goes to me."
	unknownCommandText = "I do not know /%s.\n\n" + helpText
	nothingToStop      = "Nothing to stop."
	resetDone          = "Started a new conversation. What's next?"
	resetUnavailable   = "Starting a new conversation is not available."
)

// slash reports text that starts with a command of Telegram's shape (a
// slash, then 1 to 32 letters, digits or underscores, maybe "@bot") and
// its name, lowercased. A path such as "/etc/hosts what is this?" is a
// message for the model.
func slash(text string) (string, bool) {
	rest, ok := strings.CutPrefix(text, "/")
	if !ok {
		return "", false
	}
	word, _, _ := strings.Cut(rest, " ")
	word, _, _ = strings.Cut(word, "\n")
	name, _, _ := strings.Cut(word, "@")
	if len(name) == 0 || len(name) > 32 {
		return "", false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_') {
			return "", false
		}
	}
	return strings.ToLower(name), true
}

// isReset reports whether text is /new, which waits for the turn before it.
func isReset(text string) bool {
	name, ok := slash(text)
	return ok && name == "new"
}

// commandReply answers the command name: /new in its turn, in order with the
// session's messages; the others at once, running turn or not.
func (c *Chat) commandReply(ctx context.Context, name string) (string, error) {
	switch name {
	case "new":
		return c.reset(ctx)
	case "help":
		return helpText, nil
	case "stop":
		return c.stop(), nil
	case "status":
		return c.status(ctx), nil
	}
	// A command the terminal lacks is a typo or a habit from Telegram:
	// the model would only guess at it.
	return fmt.Sprintf(unknownCommandText, name), nil
}

// stop cancels the session's running turn; what was typed after it stays.
func (c *Chat) stop() string {
	chat := Turn(c.Session).Session
	if !c.Turns.ChatLoad(chat).Busy {
		return nothingToStop
	}
	return c.Turns.Stop(chat)
}

// reset is /new: it waits in the session's queue like a message, so a
// running turn ends before its session is folded into memory.
func (c *Chat) reset(ctx context.Context) (string, error) {
	t := Turn(c.Session)
	return c.Turns.Await(ctx, resetter{turn: t, sessions: c.Sessions}, turns.Job{Chat: t.Session, Text: "/new"})
}

// resetter is the source of a /new: its turn is the reset, answered
// without the model.
type resetter struct {
	turn     agent.Turn
	sessions Sessions
}

func (r resetter) Prepare(context.Context, turns.InboxItem) turns.Job { return turns.Job{Now: true} }

func (r resetter) Plan(ctx context.Context, _ []*turns.Job) turns.Plan {
	return turns.Plan{Turn: r.turn, Answered: true, Reply: r.reply(ctx)}
}

func (r resetter) reply(ctx context.Context) string {
	if r.sessions == nil {
		return resetUnavailable
	}
	if err := r.sessions.Reset(ctx, r.turn.Session); err != nil {
		var ue interface{ UserMessage() string }
		if errors.As(err, &ue) {
			return ue.UserMessage()
		}
		// The terminal is its owner's: the reason is shown, not logged.
		return fmt.Sprintf("Sorry, I could not start a new conversation (%v). Please try again.", err)
	}
	return resetDone
}

// status is /status in Telegram's shape: the model, the session, how
// long the chat runs, the queue.
func (c *Chat) status(ctx context.Context) string {
	chat := Turn(c.Session).Session
	var conv string
	if c.Sessions != nil {
		s, err := c.Sessions.Status(ctx, chat)
		if err != nil {
			s = "Conversation: unavailable (" + err.Error() + ")"
		}
		conv = strings.TrimSpace(s)
	}
	var b strings.Builder
	if !strings.HasPrefix(conv, "Model:") && !strings.Contains(conv, "\nModel:") && c.Model != "" {
		fmt.Fprintf(&b, "Model: %s\n", c.Model)
	}
	if conv != "" {
		b.WriteString(conv + "\n")
	}
	if !c.Started.IsZero() {
		fmt.Fprintf(&b, "Uptime: %s\n", time.Since(c.Started).Round(time.Second))
	}
	l := c.Turns.ChatLoad(chat)
	state := "idle"
	if l.Busy {
		state = "working on a reply"
	}
	fmt.Fprintf(&b, "This session: %s, %d waiting\nAll chats: %d running, %d waiting", state, l.Waiting, l.Running, l.Queued)
	return b.String()
}
