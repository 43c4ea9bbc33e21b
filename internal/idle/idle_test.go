package idle

import (
	"context"
	"testing"
	"time"
)

func TestPacer(t *testing.T) {
	const busy, quiet = 1000, 100
	tests := []struct {
		name     string
		readings []uint64 // cumulative allocations, one per interval
		want     []bool
	}{
		{"quiet from the start: nothing to release", []uint64{10, 20, 30}, []bool{false, false, false}},
		{"busy then quiet", []uint64{2000, 2050}, []bool{false, true}},
		{"busy stays busy", []uint64{2000, 4000, 6000}, []bool{false, false, false}},
		{"once per quiet stretch", []uint64{2000, 2050, 2060, 2070}, []bool{false, true, false, false}},
		{"again after the next burst", []uint64{2000, 2050, 5000, 5010}, []bool{false, true, false, true}},
		{"a small burst is not worth a release", []uint64{2000, 2050, 2500, 2510}, []bool{false, true, false, false}},
		{"small bursts add up", []uint64{2000, 2050, 2600, 2610, 3200, 3210}, []bool{false, true, false, false, false, true}},
		{"quiet is strict", []uint64{2000, 2100}, []bool{false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := pacer{busy: busy, quiet: quiet}
			for i, r := range tt.readings {
				if got := p.observe(r); got != tt.want[i] {
					t.Errorf("reading %d (%d): release = %v, want %v", i, r, got, tt.want[i])
				}
			}
		})
	}
}

// Watch releases after start-up's allocations once an interval is quiet,
// calling Release first, and stops with its context.
func TestWatchReleasesAfterStartUp(t *testing.T) {
	sink := make([][]byte, 0, 64)
	for range 64 {
		sink = append(sink, make([]byte, 32<<10)) // 2 MiB of start-up garbage
	}
	sink = nil
	_ = sink
	released := make(chan struct{}, 1)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Watch(ctx, Options{Interval: 10 * time.Millisecond, Quiet: 1 << 30, Release: func(context.Context) {
			select {
			case released <- struct{}{}:
			default:
			}
		}})
	}()
	select {
	case <-released:
	case <-time.After(60 * time.Second):
		t.Fatal("no release within 60 s")
	}
	cancel()
	<-done
}

func TestResident(t *testing.T) {
	if kb := resident(); kb <= 0 {
		t.Skipf("no /proc/self/statm here (resident = %d)", kb)
	}
}
