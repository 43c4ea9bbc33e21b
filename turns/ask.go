package turns

import (
	"context"
)

// waiter is a caller waiting for the outcome of one job's turn.
type waiter struct {
	told chan outcome  // buffered: the worker never blocks on it
	gone chan struct{} // closed when the caller stopped waiting
}

type outcome struct {
	text string
	err  error
}

// Await queues j in its chat and waits for its turn's outcome: what the
// chat is told, and the answer's error. j is a job its source prepared
// (src.Prepare of a recorded item, with Item set: a job run by hand), or
// one that is not recorded at all (Item.ID 0: the terminal chat, whose
// answer is only returned). A recorded job is closed in the store like any other. When
// ctx ends first, the turn is cancelled. A turn that /stop ended returns
// ErrStopped; one a shutdown interrupted returns ErrShutdown.
func (e *Engine) Await(ctx context.Context, src Source, j Job) (string, error) {
	w := &waiter{told: make(chan outcome, 1), gone: make(chan struct{})}
	defer close(w.gone)
	e.mu.Lock()
	stopping := e.stopping
	if j.Item.ID != 0 {
		e.known[j.Item.ID] = true
	}
	e.mu.Unlock()
	if stopping {
		return "", ErrShutdown
	}
	if j.Now {
		e.forget(j.Item.ID)
		t := j.Turn
		t.Inbox = itemIDs([]*Job{&j})
		return j.Reply, e.finish(ctx, t, j.Reply)
	}
	j.src, j.wait, j.Merge = src, w, ""
	e.enqueue(&j)
	select {
	case o := <-w.told:
		return o.text, o.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// watch cancels a waited-for turn when its caller stops waiting; the
// returned function ends the watch.
func (w *waiter) watch(cancel context.CancelCauseFunc) func() {
	if w == nil {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-w.gone:
			cancel(context.Canceled)
		case <-done:
		}
	}()
	return func() { close(done) }
}

func (w *waiter) tell(o outcome) {
	if w != nil {
		w.told <- o
	}
}
