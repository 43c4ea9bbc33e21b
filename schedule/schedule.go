// Package schedule knows time and due-ness: when a job runs next (a cron
// expression, a fixed interval or a one-shot time, each in its own time
// zone), which items of a heartbeat checklist are due, quiet hours, and
// Timers, which keeps one timer for the next due entry however many there
// are. It knows nothing of chats, models or storage, and takes its clock
// from the caller so tests never wait for real time to pass.
package schedule

import (
	"sync"
	"time"
)

// Clock is the source of time: the system clock in the daemon, a manual one
// in tests (schedule/scheduletest).
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has passed.
	AfterFunc(d time.Duration, f func()) Stopper
}

// Stopper cancels a pending AfterFunc.
type Stopper interface {
	// Stop prevents the call if it has not started; it reports whether it
	// did.
	Stop() bool
}

// SystemClock returns the real clock.
func SystemClock() Clock { return systemClock{} }

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) AfterFunc(d time.Duration, f func()) Stopper { return time.AfterFunc(d, f) }

// maxSleep bounds how long Timers sleeps before it looks at the clock again:
// a clock set forward (a Raspberry Pi without a real-time clock before NTP
// catches up) or a machine resumed from suspend fires what became due
// within this time, not when the stale timer ends.
const maxSleep = 10 * time.Minute

// Timers calls fire for each entry when its time comes, with a single timer
// set for the earliest entry. Entries are keyed by id; setting an id again
// moves it. It is safe for concurrent use, and fire may call Set and Remove.
type Timers struct {
	clock Clock
	fire  func(id int64, at time.Time)

	mu     sync.Mutex
	heap   entryHeap
	timer  Stopper
	armed  time.Time // when the timer fires; zero: none
	firing bool      // wake is calling fire; it sets the timer when done
	closed bool
}

// NewTimers returns an empty queue that calls fire, one entry at a time, in
// the order of their times.
func NewTimers(clock Clock, fire func(id int64, at time.Time)) *Timers {
	return &Timers{clock: clock, fire: fire, heap: entryHeap{index: map[int64]int{}}}
}

// Set schedules id at at, replacing its previous time.
func (t *Timers) Set(id int64, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.heap.set(id, at)
	t.armLocked()
}

// Remove unschedules id.
func (t *Timers) Remove(id int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.heap.remove(id)
	t.armLocked()
}

// Len is the number of scheduled entries.
func (t *Timers) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.heap.items)
}

// IDs returns the ids of the scheduled entries, in no particular order.
func (t *Timers) IDs() []int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]int64, len(t.heap.items))
	for i, e := range t.heap.items {
		out[i] = e.id
	}
	return out
}

// Next returns the earliest entry (ok false when there is none).
func (t *Timers) Next() (id int64, at time.Time, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.heap.items) == 0 {
		return 0, time.Time{}, false
	}
	e := t.heap.items[0]
	return e.id, e.at, true
}

// Close stops the timer; nothing fires afterwards (a call in progress
// finishes).
func (t *Timers) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
}

// armLocked sets the timer for the earliest entry, unless it is set for
// that time already. mu must be held.
func (t *Timers) armLocked() {
	if t.closed || t.firing {
		return
	}
	if len(t.heap.items) == 0 {
		if t.timer != nil {
			t.timer.Stop()
			t.timer, t.armed = nil, time.Time{}
		}
		return
	}
	now := t.clock.Now()
	at := t.heap.items[0].at
	if limit := now.Add(maxSleep); at.After(limit) {
		at = limit
	}
	if t.timer != nil {
		if t.armed.Equal(at) || (!t.armed.After(now) && !at.After(now)) {
			return // set for that time, or already firing
		}
		t.timer.Stop()
	}
	t.armed = at
	t.timer = t.clock.AfterFunc(at.Sub(now), t.wake)
}

// wake fires every entry that is due, one after another, then sets the
// timer again. Entries set while it fires are looked at before it returns.
func (t *Timers) wake() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed || t.firing {
		return
	}
	t.firing = true
	t.timer, t.armed = nil, time.Time{}
	for !t.closed && len(t.heap.items) > 0 && !t.heap.items[0].at.After(t.clock.Now()) {
		e := t.heap.items[0]
		t.heap.remove(e.id)
		t.mu.Unlock()
		t.fire(e.id, e.at)
		t.mu.Lock()
	}
	t.firing = false
	t.armLocked()
}

type entry struct {
	id int64
	at time.Time
}

// entryHeap is a binary min-heap of entries by time (then id), with the
// position of each id so entries can move or go in O(log n).
type entryHeap struct {
	items []entry
	index map[int64]int
}

func (h *entryHeap) less(i, j int) bool {
	a, b := h.items[i], h.items[j]
	if !a.at.Equal(b.at) {
		return a.at.Before(b.at)
	}
	return a.id < b.id
}

func (h *entryHeap) swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.index[h.items[i].id] = i
	h.index[h.items[j].id] = j
}

func (h *entryHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h *entryHeap) down(i int) {
	n := len(h.items)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			return
		}
		h.swap(i, m)
		i = m
	}
}

func (h *entryHeap) set(id int64, at time.Time) {
	if i, ok := h.index[id]; ok {
		h.items[i].at = at
		h.up(i)
		h.down(h.index[id])
		return
	}
	h.items = append(h.items, entry{id: id, at: at})
	h.index[id] = len(h.items) - 1
	h.up(len(h.items) - 1)
}

func (h *entryHeap) remove(id int64) {
	i, ok := h.index[id]
	if !ok {
		return
	}
	last := len(h.items) - 1
	h.swap(i, last)
	h.items = h.items[:last]
	delete(h.index, id)
	if i < last {
		h.up(i)
		h.down(i)
	}
}
