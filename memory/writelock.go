package memory

import (
	"context"
	"sync"
)

// writeLock serializes the store's write transactions inside the process.
// Waiters queue in order, and urgent ones (recording that Telegram accepted
// a reply) go before the others: until that record is written, a crash
// would send the reply again, so the window is kept as short as the disk
// allows instead of as long as the queue of turns.
type writeLock struct {
	mu             sync.Mutex
	held           bool
	urgent, normal []chan struct{}
}

// lock waits for the lock or for ctx to end.
func (l *writeLock) lock(ctx context.Context, urgent bool) error {
	l.mu.Lock()
	if !l.held {
		l.held = true
		l.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	if urgent {
		l.urgent = append(l.urgent, ch)
	} else {
		l.normal = append(l.normal, ch)
	}
	l.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if remove(&l.urgent, ch) || remove(&l.normal, ch) {
		return ctx.Err()
	}
	// Handed over while giving up: pass it on.
	l.releaseLocked()
	return ctx.Err()
}

func (l *writeLock) unlock() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.releaseLocked()
}

// releaseLocked hands the lock to the next waiter, urgent ones first, or
// frees it.
func (l *writeLock) releaseLocked() {
	for _, q := range []*[]chan struct{}{&l.urgent, &l.normal} {
		if len(*q) > 0 {
			next := (*q)[0]
			*q = (*q)[1:]
			close(next)
			return
		}
	}
	l.held = false
}

func remove(q *[]chan struct{}, ch chan struct{}) bool {
	for i, c := range *q {
		if c == ch {
			*q = append((*q)[:i], (*q)[i+1:]...)
			return true
		}
	}
	return false
}
