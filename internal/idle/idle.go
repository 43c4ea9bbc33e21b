// Package idle hands memory the daemon no longer uses back to the system
// once it goes quiet. Neither Go's heap nor C's malloc (SQLite's) does so
// promptly on its own: after start-up or a burst of messages, freed memory
// stays resident for minutes (Go returns it slowly, down to a heap goal of
// at least 4 MB) or for good (malloc keeps it in its arenas). On a small
// board that is most of the daemon's private memory while it waits.
package idle

import (
	"context"
	"log/slog"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Defaults of Options.
const (
	DefaultInterval = 20 * time.Second
	DefaultBusy     = 1 << 20  // allocated since the last release: worth one
	DefaultQuiet    = 64 << 10 // allocated in the last interval: quiet
)

// Options configure Watch. Zero values take the defaults.
type Options struct {
	// Interval is how often the allocation counter is read.
	Interval time.Duration
	// Busy is how many bytes the Go heap must have allocated since the
	// last release for another to be worth its forced collection.
	Busy uint64
	// Quiet is the most an interval may allocate and still count as quiet.
	Quiet uint64
	// Release, if set, lets others free what they cache (SQLite's page
	// cache) before the memory is handed back.
	Release func(context.Context)
	Logger  *slog.Logger
}

// Watch releases memory each time a busy stretch is followed by a quiet
// interval, until ctx ends. The first release comes after start-up, whose
// parsing, migrations and first requests leave the most garbage.
func Watch(ctx context.Context, opts Options) {
	opts = opts.withDefaults()
	t := time.NewTicker(opts.Interval)
	defer t.Stop()
	// Readings start from zero, so start-up's allocations are the first
	// busy stretch.
	p := pacer{busy: opts.Busy, quiet: opts.Quiet}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !p.observe(allocated()) {
			continue
		}
		before := resident()
		if opts.Release != nil {
			opts.Release(ctx)
		}
		debug.FreeOSMemory()
		trimMalloc()
		opts.Logger.Debug("memory released", "rss_before_kb", before, "rss_after_kb", resident())
	}
}

func (o Options) withDefaults() Options {
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.Busy == 0 {
		o.Busy = DefaultBusy
	}
	if o.Quiet == 0 {
		o.Quiet = DefaultQuiet
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// pacer decides, from successive readings of the heap's cumulative
// allocations, when to release.
type pacer struct {
	busy, quiet uint64
	last        uint64 // the previous reading
	released    uint64 // the reading at the last release
}

// observe takes a reading and reports whether to release now: the
// interval since the previous reading was quiet, and the heap allocated
// at least busy bytes since the last release.
func (p *pacer) observe(total uint64) bool {
	step := total - p.last
	p.last = total
	if step >= p.quiet || total-p.released < p.busy {
		return false
	}
	p.released = total
	return true
}

// allocated is how many bytes the Go heap has allocated since the
// process started.
func allocated() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
