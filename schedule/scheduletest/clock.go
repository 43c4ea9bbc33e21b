// Package scheduletest provides a manual schedule.Clock for tests: time
// stands still until the test moves it, and timers fire as it passes them.
package scheduletest

import (
	"slices"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/schedule"
)

// Clock is a schedule.Clock whose time only moves when told. It is safe for
// concurrent use.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*timer
	seq    int
}

var _ schedule.Clock = (*Clock)(nil)

type timer struct {
	c   *Clock
	at  time.Time
	seq int
	f   func()
}

// New returns a clock standing at now.
func New(now time.Time) *Clock { return &Clock{now: now} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc calls f once the clock has been moved d past now; with d <= 0
// it calls f at once (in its own goroutine).
func (c *Clock) AfterFunc(d time.Duration, f func()) schedule.Stopper {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	t := &timer{c: c, at: c.now.Add(d), seq: c.seq, f: f}
	if d <= 0 {
		go f()
		return t
	}
	c.timers = append(c.timers, t)
	return t
}

// Stop removes the timer; false when it fired or was stopped already.
func (t *timer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	i := slices.Index(t.c.timers, t)
	if i < 0 {
		return false
	}
	t.c.timers = slices.Delete(t.c.timers, i, i+1)
	return true
}

// Advance moves the clock forward by d; see Set.
func (c *Clock) Advance(d time.Duration) { c.Set(c.Now().Add(d)) }

// Set moves the clock to now and calls, in the order of their times, the
// functions of the timers it passes, each before Set returns. A timer set by
// one of them that is due already fires too.
func (c *Clock) Set(now time.Time) {
	c.mu.Lock()
	c.now = now
	c.mu.Unlock()
	for {
		c.mu.Lock()
		var due *timer
		for _, t := range c.timers {
			if !t.at.After(c.now) && (due == nil || t.at.Before(due.at) || (t.at.Equal(due.at) && t.seq < due.seq)) {
				due = t
			}
		}
		if due == nil {
			c.mu.Unlock()
			return
		}
		c.timers = slices.DeleteFunc(c.timers, func(t *timer) bool { return t == due })
		c.mu.Unlock()
		due.f()
	}
}

// Pending returns the times of the timers not yet fired, earliest first.
func (c *Clock) Pending() []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]time.Time, 0, len(c.timers))
	for _, t := range c.timers {
		out = append(out, t.at)
	}
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	return out
}
