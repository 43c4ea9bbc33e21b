package agent

import (
	"context"
	"time"
)

// A request the endpoint refuses as it is (a 400 no retry changes) may be
// refused for what the session's history holds: a field or an order
// another endpoint wrote, a message this one cannot read. Sending that
// history again would break the chat for good, so the turn is sent alone;
// when that is accepted, the history before the turn stays out of the
// session's requests from now on, and Hooks.LeftOut has it folded into
// memory.

// withoutHistory sends alone, the turn's request without the history that
// was refused with refusal. It returns the answer, or refusal when the
// turn alone is refused too. start is when the turn's first message was
// written.
func (l *Loop) withoutHistory(ctx context.Context, s setup, t Turn, alone Request, start time.Time, res *Result, refusal error) (Message, error) {
	reply, err := l.complete(ctx, s, t, alone, res)
	if err != nil {
		return Message{}, refusal
	}
	l.leaveOut(ctx, t, start)
	l.logger.Warn("the model endpoint refused this chat's history; it is left out from now on",
		"turn_id", t.ID, "session", t.Session, "error", refusal)
	return reply, nil
}

// withoutLeftOut returns the messages of msgs the endpoint has not
// refused: those from the session's left-out time on.
func (l *Loop) withoutLeftOut(session string, msgs []Message) []Message {
	v, ok := l.leftOut.Load(session)
	if !ok {
		return msgs
	}
	before := v.(time.Time)
	for i, m := range msgs {
		if !m.CreatedAt.Before(before) && m.Role == RoleUser {
			return msgs[i:]
		}
	}
	return nil
}

// leaveOut leaves the session's messages before the given time out of its
// requests.
func (l *Loop) leaveOut(ctx context.Context, t Turn, before time.Time) {
	if before.IsZero() {
		before = l.now()
	}
	before = before.Truncate(time.Millisecond) // as precise as the store keeps it
	l.leftOut.Store(t.Session, before)
	if l.hooks.LeftOut != nil {
		l.hooks.LeftOut(ctx, t, before)
	}
}
