//go:build bench

package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// benchRun is what every section shares: the binary under test, the
// report, the daemons' output and the watch on the machine.
type benchRun struct {
	bin    string
	rep    *report
	logs   *syncBuffer
	frozen *freezes
}

// TestRun measures the release binary (NANOBOT_BIN) against the Bot API
// fake and the model stub and writes the report to NANOBOT_BENCH_OUT
// (table.md, deps.md, log.md). bench/run builds the binary and runs it.
// Each section runs as a subtest: one that fails leaves its rows out and
// the rest of the table stands.
func TestRun(t *testing.T) {
	bin := os.Getenv("NANOBOT_BIN")
	if bin == "" {
		t.Skip("NANOBOT_BIN is not set; run bench/run")
	}
	out := os.Getenv("NANOBOT_BENCH_OUT")
	if out == "" {
		out = t.TempDir()
	}
	ctx, stopWatch := context.WithCancel(context.Background())
	br := &benchRun{bin: bin, rep: newReport(), logs: &syncBuffer{}, frozen: watchFreezes(ctx)}
	only := os.Getenv("NANOBOT_BENCH_SECTIONS") // comma-separated, to run a few sections; empty = all
	want := func(name string) bool { return only == "" || slices.Contains(strings.Split(only, ","), name) }
	section := func(name string, f func(t *testing.T)) {
		if !want(name) {
			return
		}
		start := time.Now()
		if !t.Run(name, f) {
			br.rep.fail(name)
		}
		t.Logf("%s: %s", name, time.Since(start).Round(100*time.Millisecond))
	}

	// The idle daemons wait their minute while the builds and the
	// micro-benchmarks run: neither needs the daemons' CPU, nor they theirs.
	// They are started on t, not a section's subtest, to outlive it.
	var idle *idleRun
	if want("idle") {
		idle = startIdle(t, br)
	}
	var deps string
	section("size", func(t *testing.T) { deps = measureSize(t, br) })
	section("micro", func(t *testing.T) { measureMicro(t, br) })
	section("idle", func(t *testing.T) { idle.finish(t, br) })
	section("start", func(t *testing.T) { measureStarts(t, br) })
	section("latency", func(t *testing.T) { measureLatency(t, br) })
	section("commits", func(t *testing.T) { measureCommits(t, br) })
	section("throughput", func(t *testing.T) { measureThroughput(t, br) })
	section("soak", func(t *testing.T) { measureSoak(t, br) })
	section("agent", func(t *testing.T) { measureAgent(t, br) })
	section("jobs", func(t *testing.T) { measureJobs(t, br) })
	section("cache", func(t *testing.T) { measureCache(t, br) })
	section("loop", func(t *testing.T) { measureLoop(t, br) })
	section("recall", func(t *testing.T) { measureRecall(t, br) })
	stopWatch()

	levels, summary := summarizeLogs(br.logs.String())
	br.rep.add("run", row{figure: "daemon log lines at warn or above, whole run", median: fmt.Sprintf("%d warn, %d error", levels["WARN"], levels["ERROR"]),
		note: "bench: lines are the bench's own notes, listed after the table"})
	br.rep.add("run", br.frozen.row())
	files := map[string]string{
		"table.md": br.rep.markdown(),
		"deps.md":  deps,
		"log.md":   br.rep.extra() + "\nDaemon log at warn and above, by message:\n" + summary,
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(out, name), []byte(text), 0o644); err != nil {
			t.Error(err)
		}
	}
	if os.Getenv("NANOBOT_BENCH_OUT") == "" {
		fmt.Print("\n" + files["table.md"] + "\n" + deps + "\n" + files["log.md"])
	}
}

// freezes are the times the bench process itself stood still: a 100 ms
// ticker firing over a second late means the machine stalled (other
// processes, memory pressure), not the daemon under test.
type freezes struct {
	mu   sync.Mutex
	list []freeze
}

type freeze struct {
	at  time.Time // when the ticker should have fired
	dur time.Duration
}

func watchFreezes(ctx context.Context) *freezes {
	f := &freezes{}
	go func() {
		const tick = 100 * time.Millisecond
		tk := time.NewTicker(tick)
		defer tk.Stop()
		last := time.Now()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-tk.C:
				if late := now.Sub(last) - tick; late > time.Second {
					f.mu.Lock()
					f.list = append(f.list, freeze{at: last.Add(tick), dur: late})
					f.mu.Unlock()
				}
				last = now
			}
		}
	}()
	return f
}

// during sums the freezes that overlap from..to.
func (f *freezes) during(from, to time.Time) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	var d time.Duration
	for _, z := range f.list {
		if z.at.Before(to) && z.at.Add(z.dur).After(from) {
			d += z.dur
		}
	}
	return d
}

func (f *freezes) row() row {
	f.mu.Lock()
	defer f.mu.Unlock()
	var total, longest time.Duration
	for _, z := range f.list {
		total += z.dur
		longest = max(longest, z.dur)
	}
	return row{figure: "bench process frozen for over 1 s (the machine stalled)", median: fmt.Sprintf("%d times", len(f.list)),
		note: fmt.Sprintf("%s in all, longest %s: figures measured across a freeze are the machine's, not nanobot's", total.Round(time.Millisecond), longest.Round(time.Millisecond))}
}
