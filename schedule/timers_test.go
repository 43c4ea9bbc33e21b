package schedule_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/schedule"
	"github.com/nanobot-go/nanobot/schedule/scheduletest"
)

type firings struct {
	mu  sync.Mutex
	got []string
}

func (f *firings) fire(id int64, at time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, fmt.Sprintf("%d@%s", id, at.Format("15:04")))
}

func (f *firings) take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.got
	f.got = nil
	return out
}

func TestTimersFireInOrder(t *testing.T) {
	start := time.Date(2026, 1, 1, 8, 0, 0, 0, time.UTC)
	clock := scheduletest.New(start)
	var f firings
	tm := schedule.NewTimers(clock, f.fire)
	defer tm.Close()
	tm.Set(1, start.Add(2*time.Hour))
	tm.Set(2, start.Add(time.Hour))
	tm.Set(3, start.Add(3*time.Hour))
	tm.Set(1, start.Add(90*time.Minute)) // moved
	tm.Remove(3)

	if got := len(clock.Pending()); got != 1 {
		t.Errorf("%d timers pending, want 1: one timer for the earliest entry", got)
	}
	clock.Advance(59 * time.Minute)
	if got := f.take(); len(got) != 0 {
		t.Errorf("fired early: %v", got)
	}
	clock.Advance(time.Hour)
	if got, want := fmt.Sprint(f.take()), "[2@09:00 1@09:30]"; got != want {
		t.Errorf("fired %s, want %s", got, want)
	}
	clock.Advance(24 * time.Hour)
	if got := f.take(); len(got) != 0 {
		t.Errorf("removed entry fired: %v", got)
	}
	if tm.Len() != 0 {
		t.Errorf("Len = %d, want 0", tm.Len())
	}
}

// TestTimersReschedule: fire may set the entry again (a repeating job), and
// an entry due already fires at once.
func TestTimersReschedule(t *testing.T) {
	start := time.Date(2026, 1, 1, 8, 0, 0, 0, time.UTC)
	clock := scheduletest.New(start)
	var f firings
	var tm *schedule.Timers
	tm = schedule.NewTimers(clock, func(id int64, at time.Time) {
		f.fire(id, at)
		tm.Set(id, at.Add(time.Hour))
	})
	defer tm.Close()
	tm.Set(7, start.Add(time.Hour))
	clock.Advance(3 * time.Hour)
	if got, want := fmt.Sprint(f.take()), "[7@09:00 7@10:00 7@11:00]"; got != want {
		t.Errorf("fired %s, want %s", got, want)
	}
	if id, at, ok := tm.Next(); !ok || id != 7 || !at.Equal(start.Add(4*time.Hour)) {
		t.Errorf("Next = %d, %s, %v", id, at, ok)
	}
}

// TestTimersLongSleep: however far the next entry, the timer looks at the
// clock again within ten minutes, so a clock set forward is noticed.
func TestTimersLongSleep(t *testing.T) {
	start := time.Date(2026, 1, 1, 8, 0, 0, 0, time.UTC)
	clock := scheduletest.New(start)
	var f firings
	tm := schedule.NewTimers(clock, f.fire)
	defer tm.Close()
	tm.Set(1, start.Add(30*24*time.Hour))
	p := clock.Pending()
	if len(p) != 1 || p[0].Sub(start) > 10*time.Minute {
		t.Fatalf("pending timers %v, want one within 10 minutes", p)
	}
	for range 6 {
		clock.Advance(10 * time.Minute)
	}
	if got := f.take(); len(got) != 0 {
		t.Errorf("fired early: %v", got)
	}
	clock.Set(start.Add(31 * 24 * time.Hour))
	if got := f.take(); len(got) != 1 {
		t.Errorf("after the jump fired %v, want the entry once", got)
	}
}

func TestTimersClose(t *testing.T) {
	start := time.Date(2026, 1, 1, 8, 0, 0, 0, time.UTC)
	clock := scheduletest.New(start)
	var f firings
	tm := schedule.NewTimers(clock, f.fire)
	tm.Set(1, start.Add(time.Minute))
	tm.Close()
	clock.Advance(time.Hour)
	if got := f.take(); len(got) != 0 {
		t.Errorf("fired after Close: %v", got)
	}
}

// BenchmarkTimersSet is the cost of scheduling one of 10,000 entries.
func BenchmarkTimersSet(b *testing.B) {
	start := time.Date(2026, 1, 1, 8, 0, 0, 0, time.UTC)
	clock := scheduletest.New(start)
	tm := schedule.NewTimers(clock, func(int64, time.Time) {})
	defer tm.Close()
	for i := range int64(10000) {
		tm.Set(i, start.Add(time.Duration(i)*time.Minute))
	}
	b.ReportAllocs()
	i := int64(0)
	for b.Loop() {
		tm.Set(i%10000, start.Add(time.Duration(i*7919%10000)*time.Minute))
		i++
	}
}
