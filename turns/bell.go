package turns

import "sync"

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
