// Package budget keeps each chat within its daily token budget
// (agent.daily_token_budget). What a chat used today counts its own
// session, its jobs' and background tasks' sessions and, for the chat the
// heartbeat reports to, the heartbeat's.
package budget

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/session"
)

// Usage is what the budget reads from storage.
type Usage interface {
	// SessionChat names the chat a session belongs to ("" when none).
	SessionChat(ctx context.Context, session string) (channel, chat string, err error)
	UsageOn(ctx context.Context, session string, on time.Time) (agent.Usage, error)
	// ChatUsageOn sums a chat's sessions, and those named in also.
	ChatUsageOn(ctx context.Context, channel, chat string, on time.Time, also ...string) (agent.Usage, error)
}

// Limits are the budget's settings. They are read at every check, so an
// edit of the config applies to the next turn.
type Limits struct {
	Daily int // tokens per chat and day; 0 or less: no budget
	// Heartbeat is the heartbeat's session and HeartbeatChat the chat it
	// reports to (zero: none); its turns count toward that chat.
	Heartbeat     string
	HeartbeatChat session.Session
}

// Budget answers "may this session's chat spend more today?".
type Budget struct {
	usage  Usage
	limits func() Limits
	now    func() time.Time
	log    *slog.Logger
}

// New returns a budget over usage; now is the daemon's clock (today is
// its day).
func New(usage Usage, limits func() Limits, now func() time.Time, log *slog.Logger) *Budget {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Budget{usage: usage, limits: limits, now: now, log: log}
}

// Limit is today's budget per chat (0 or less: none).
func (b *Budget) Limit() int { return b.limits().Daily }

// Today is what the chat session belongs to used today: a session of no
// chat counts alone.
func (b *Budget) Today(ctx context.Context, name string) (agent.Usage, error) {
	l := b.limits()
	channel, chat, err := b.usage.SessionChat(ctx, name)
	if err != nil {
		return agent.Usage{}, err
	}
	hb := l.HeartbeatChat
	if name == l.Heartbeat && l.Heartbeat != "" {
		channel, chat = hb.Channel, hb.Chat
	}
	if chat == "" {
		return b.usage.UsageOn(ctx, name, b.now())
	}
	var also []string
	if l.Heartbeat != "" && hb.Chat != "" && channel == hb.Channel && chat == hb.Chat {
		also = append(also, l.Heartbeat)
	}
	return b.usage.ChatUsageOn(ctx, channel, chat, b.now(), also...)
}

// Over reports whether the chat of session has used up today's budget,
// with a sentence for the user saying so. A usage that cannot be read is
// logged and does not stop the turn.
func (b *Budget) Over(ctx context.Context, name string) (string, bool) {
	limit := b.Limit()
	if limit <= 0 {
		return "", false
	}
	used, err := b.Today(ctx, name)
	if err != nil {
		b.log.Error("read usage", "err", err)
		return "", false
	}
	if used.Total() < limit {
		return "", false
	}
	return fmt.Sprintf("I've used today's token budget for this chat (%d of %d tokens), so I'll pause until tomorrow. The owner can raise agent.daily_token_budget in config.yaml.", used.Total(), limit), true
}
