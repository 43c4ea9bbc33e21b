package agent

import (
	"context"
	"strings"
)

// Steer is a message its chat sent while a turn was running, handed to
// that turn at its next model call instead of waiting for a turn of its
// own: the user correcting the course mid-way.
type Steer struct {
	// Inbox is the inbound item it came as; the turn's record that holds
	// the message takes the item into the turn (Record.Inbox).
	Inbox   int64
	Message Message
}

// SteeredMark starts the content of a message handed to a running turn,
// so the model reads it as words written during the work and anyone
// reading the session can tell it from a message that started a turn.
const SteeredMark = "[Written while you were working on this:] "

// Steered reports whether m is a message handed to a running turn.
func Steered(m Message) bool {
	return m.Role == RoleUser && strings.HasPrefix(m.Content, SteeredMark)
}

type steerKey struct{}

// WithSteering returns a context whose turn calls take before each model
// call that follows a tool round, and reads what it returns to the model
// as the user's words. take must return quickly.
func WithSteering(ctx context.Context, take func() []Steer) context.Context {
	return context.WithValue(ctx, steerKey{}, take)
}

// steer adds what the chat sent since the last model call to the turn
// and returns how many messages it added.
func (l *Loop) steer(ctx context.Context, st *turnState, round int, prog *progress) int {
	take, _ := ctx.Value(steerKey{}).(func() []Steer)
	if take == nil {
		return 0
	}
	msgs := take()
	for _, s := range msgs {
		m := s.Message
		m.Role, m.Content = RoleUser, SteeredMark+m.Content
		if m.CreatedAt.IsZero() {
			m.CreatedAt = l.now()
		}
		st.add(m)
		if s.Inbox != 0 {
			st.inbox = append(st.inbox, s.Inbox)
		}
		prog.tell(ProgressEvent{Kind: ProgressSteered, Round: round, Text: s.Message.Content})
	}
	return len(msgs)
}
