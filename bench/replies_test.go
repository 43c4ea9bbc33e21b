//go:build bench

package bench

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/channels/telegram/telegramtest"
)

// replies follows the messages the fake accepted and tells whoever waits
// for the answer to a message when it arrived. One follower per fake: the
// fake hands out a copy of everything sent on each look, so many waiters
// would cost more than the daemon they measure.
type replies struct {
	tg      *telegramtest.Server
	cancel  context.CancelFunc
	stopped chan struct{}

	mu         sync.Mutex
	waiters    map[int64]chan time.Time // by the message id a reply will quote
	answered   map[int64]bool
	notices    int    // messages that answer no message (the daemon speaking on its own)
	duplicates int    // replies to a message already answered
	unexpected int    // replies other than "ok"
	firstOdd   string // the first of them
}

func follow(t *testing.T, tg *telegramtest.Server) *replies {
	ctx, cancel := context.WithCancel(context.Background())
	r := &replies{tg: tg, cancel: cancel, stopped: make(chan struct{}),
		waiters: map[int64]chan time.Time{}, answered: map[int64]bool{}}
	go r.run(ctx)
	t.Cleanup(r.stop)
	return r
}

func (r *replies) stop() {
	r.cancel()
	<-r.stopped
}

func (r *replies) run(ctx context.Context) {
	defer close(r.stopped)
	seen := 0
	for {
		sent, err := r.tg.WaitSent(ctx, seen+1)
		if err != nil {
			return
		}
		now := time.Now()
		r.mu.Lock()
		for _, s := range sent[seen:] {
			r.note(s, now)
		}
		r.mu.Unlock()
		seen = len(sent)
		// Each look copies the whole list: pace them so that the copying
		// stays a small, constant share of a core (2 ms at 10,000 sent).
		time.Sleep(time.Duration(seen) * 200 * time.Nanosecond)
	}
}

// note records one sent message; r.mu is held.
func (r *replies) note(s telegramtest.Sent, at time.Time) {
	switch {
	case s.ReplyTo == 0:
		r.notices++
	case r.answered[s.ReplyTo]:
		r.duplicates++
	default:
		r.answered[s.ReplyTo] = true
		if s.Text != "ok" {
			if r.unexpected == 0 {
				r.firstOdd = s.Text
			}
			r.unexpected++
		}
		if ch, ok := r.waiters[s.ReplyTo]; ok {
			ch <- at
			delete(r.waiters, s.ReplyTo)
		}
	}
}

// expect registers a wait for the answer to message id; call it before
// sending the message.
func (r *replies) expect(id int64) <-chan time.Time {
	ch := make(chan time.Time, 1)
	r.mu.Lock()
	r.waiters[id] = ch
	r.mu.Unlock()
	return ch
}

// health says what else came back: notices, duplicates, other replies.
func (r *replies) health() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := fmt.Sprintf("%d duplicate replies, %d notices, %d replies other than \"ok\"", r.duplicates, r.notices, r.unexpected)
	if r.unexpected > 0 {
		s += fmt.Sprintf(" (the first: %.80q)", r.firstOdd)
	}
	return s
}

func (r *replies) clean() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.duplicates == 0 && r.unexpected == 0
}

// exchange sends text (with the message's id appended) as a new message in
// chat and waits for its answer: the round trip, from the update being
// queued at the fake to the reply being accepted by it.
func (e *env) exchange(ctx context.Context, r *replies, chat int64, text string) (time.Duration, error) {
	id := e.nextID()
	ch := r.expect(id)
	start := time.Now()
	e.send(chat, id, fmt.Sprintf("%s #%d", text, id))
	select {
	case at := <-ch:
		if d := at.Sub(start); d > slowAfter+4*e.delay {
			e.reportSlow(chat, id, start, at)
		}
		return at.Sub(start), nil
	case <-ctx.Done():
		return 0, fmt.Errorf("chat %d message %d: no answer: %w", chat, id, ctx.Err())
	}
}

// drive makes each of chats users (loadChat, loadChat+1, ...) send n
// messages, each once the previous one is answered, all chats at once. It
// returns the wall time and every message's round trip.
func (e *env) drive(t *testing.T, r *replies, chats, n int, text string) (time.Duration, []time.Duration, error) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		all      []time.Duration
		firstErr error
	)
	start := time.Now()
	for c := range chats {
		wg.Go(func() {
			lats := make([]time.Duration, 0, n)
			for range n {
				d, err := e.exchange(ctx, r, loadChat+int64(c), text)
				if err != nil {
					mu.Lock()
					firstErr = firstOf(firstErr, err)
					mu.Unlock()
					cancel()
					return
				}
				lats = append(lats, d)
			}
			mu.Lock()
			all = append(all, lats...)
			mu.Unlock()
		})
	}
	wg.Wait()
	return time.Since(start), all, firstErr
}

// slowAfter is a round trip long enough to be a stall, beyond the model's
// own time: the daemon's log gets the Bot API calls made meanwhile.
const slowAfter = 5 * time.Second

func (e *env) reportSlow(chat, id int64, start, at time.Time) {
	const listed = 3 // per daemon: a stall of the machine slows every chat at once
	n := e.slow.Add(1)
	if n == listed+1 {
		fmt.Fprintf(e.br.logs, "bench: more slow round trips on the daemon of %s, not listed\n", e.tg.URL())
	}
	if n > listed {
		return
	}
	var calls, polls int
	var gapFrom, last time.Time
	var gap time.Duration
	last = start
	for _, c := range e.tg.Calls("") { // in arrival order
		if c.At.Before(start) || c.At.After(at) {
			continue
		}
		calls++
		if c.Method == "getUpdates" {
			polls++
		}
		if d := c.At.Sub(last); d > gap {
			gap, gapFrom = d, last
		}
		last = c.At
	}
	fmt.Fprintf(e.br.logs, "bench: slow round trip: chat %d message %d sent %s, answered after %s; meanwhile %d Bot API calls (%d getUpdates), none for %s from %s; the bench process was frozen for %s of it\n",
		chat, id, start.UTC().Format("15:04:05.000"), at.Sub(start).Round(time.Millisecond), calls, polls, gap.Round(time.Millisecond), gapFrom.UTC().Format("15:04:05.000"),
		e.br.frozen.during(start, at).Round(time.Millisecond))
}

func firstOf(first, err error) error {
	if first != nil {
		return first
	}
	return err
}
