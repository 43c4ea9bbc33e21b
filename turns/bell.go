package turns

import (
	"context"
	"log/slog"
	"sync"
)

// Bell tells a channel's sender that its outbox holds new replies: the
// engine rings it after each turn, and so does everything else that
// queues a message (the message tool, a notice). A sender waits on its
// channel's Ring and reads the outbox when it rings.
type Bell struct {
	mu    sync.Mutex
	rings map[string]chan struct{}
}

// NewBell returns a bell with no listeners yet.
func NewBell() *Bell { return &Bell{rings: map[string]chan struct{}{}} }

// For is what the sender of channel waits on. A ring while nobody waits
// is kept (once), so none is missed.
func (b *Bell) For(channel string) <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ring(channel)
}

func (b *Bell) ring(channel string) chan struct{} {
	c := b.rings[channel]
	if c == nil {
		c = make(chan struct{}, 1)
		b.rings[channel] = c
	}
	return c
}

// Ring tells channel's sender to look at the outbox.
func (b *Bell) Ring(channel string) {
	b.mu.Lock()
	c := b.ring(channel)
	b.mu.Unlock()
	select {
	case c <- struct{}{}:
	default:
	}
}

// Outbox is what Drain needs of the durable outbox.
type Outbox interface {
	PendingOutbound(ctx context.Context, channel string) ([]OutboxItem, error)
	MarkSent(ctx context.Context, id, messageID int64) error
}

// Drain marks a channel's replies delivered as they are queued, for a
// channel whose reader gets them without a send (the API's waiting
// request, the console's page reading the session); delivered, when set,
// is told after each batch marked. It checks the outbox at once and at
// each ring of bell, until ctx ends.
func Drain(ctx context.Context, out Outbox, channel string, bell <-chan struct{}, log *slog.Logger, delivered func()) {
	for {
		items, err := out.PendingOutbound(ctx, channel)
		if err != nil && ctx.Err() == nil {
			log.Warn("read the outbox", "err", err)
		}
		for _, it := range items {
			if err := out.MarkSent(context.WithoutCancel(ctx), it.ID, 0); err != nil {
				log.Warn("mark a reply delivered", "outbox_id", it.ID, "err", err)
			}
		}
		if len(items) > 0 && delivered != nil {
			delivered()
		}
		select {
		case <-ctx.Done():
			return
		case <-bell:
		}
	}
}
