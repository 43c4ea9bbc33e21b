// Package approvals connects the tools that need the owner's approval (a
// command the filter holds for review) with the channel that asks the
// owner. The broker is made first and handed to both; the channel serves
// it while it runs, and with nobody serving an approval is refused at
// once rather than waited for.
package approvals

import (
	"context"
	"errors"
	"sync"
)

// ErrNobody is the refusal when no channel serves approvals.
var ErrNobody = errors.New("owner approval needs the gateway (Telegram); nobody can approve here")

// Asker asks the owner; approved false with a note is a denial.
type Asker interface {
	Approve(ctx context.Context, command, reason string) (approved bool, note string, err error)
}

// Broker hands each approval to the channel serving it.
type Broker struct {
	mu    sync.Mutex
	asker Asker
	gen   int // which Serve is current
}

// Approve asks whoever serves the broker now.
func (b *Broker) Approve(ctx context.Context, command, reason string) (bool, string, error) {
	b.mu.Lock()
	a := b.asker
	b.mu.Unlock()
	if a == nil {
		return false, "", ErrNobody
	}
	return a.Approve(ctx, command, reason)
}

// Serve makes a the one asked until the returned function is called.
func (b *Broker) Serve(a Asker) (stop func()) {
	b.mu.Lock()
	b.gen++
	b.asker = a
	gen := b.gen
	b.mu.Unlock()
	return func() {
		b.mu.Lock()
		if b.gen == gen {
			b.asker = nil
		}
		b.mu.Unlock()
	}
}
