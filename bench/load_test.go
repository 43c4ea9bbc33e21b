//go:build bench

package bench

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A throughput configuration: chats users each send perRun messages, one
// at a time, in each of n runs, to a model that answers after delay.
type load struct {
	delay        time.Duration
	chats        int
	perRun, runs int
}

var loads = []load{
	{0, 1, 100, runs},
	{0, 10, 20, runs},
	{0, 100, 20, runs}, // 10,000 messages: its daemon's memory is a figure
	{time.Second, 1, 3, 3},
	{time.Second, 10, 2, 3},
	{time.Second, 100, 1, 3},
}

// measureThroughput runs every load on a daemon of its own.
func measureThroughput(t *testing.T, br *benchRun) {
	for _, l := range loads {
		modelName := "instant model"
		if l.delay > 0 {
			modelName = fmt.Sprintf("model taking %s", l.delay)
		}
		chats := fmt.Sprintf("%d chats", l.chats)
		if l.chats == 1 {
			chats = "1 chat"
		}
		t.Run(fmt.Sprintf("%s/%s", modelName, chats), func(t *testing.T) {
			e := newEnv(t, br, model{delay: l.delay}, nil)
			d := e.startReady(t)
			r := follow(t, e.tg)
			cpu0, self0 := d.cpu(t), selfCPU()
			var rates []float64
			var all []time.Duration
			for range l.runs {
				wall, lats, err := e.drive(t, r, l.chats, l.perRun, plainText)
				if err != nil {
					t.Fatal(err)
				}
				rates = append(rates, float64(len(lats))/wall.Seconds())
				all = append(all, lats...)
			}
			turns := len(all)
			cpu := (d.cpu(t) - cpu0) / time.Duration(turns)
			self := (selfCPU() - self0) / time.Duration(turns)
			note := fmt.Sprintf("each chat sends its next message when the last is answered; round trip median %s, p99 %s; CPU a turn: daemon %s, the bench's fakes and clients %s",
				fmtDur(percentile(all, 0.5)), fmtDur(percentile(all, 0.99)), fmtDur(cpu), fmtDur(self))
			if l.delay > 0 {
				note += fmt.Sprintf("; bound: min(chats, agent.max_concurrent %d) / %s", maxConcurrent, l.delay)
			}
			br.rep.add("throughput", statRow(fmt.Sprintf("turns per second, %s, %s", modelName, chats), rates, fmtRate,
				fmt.Sprintf("%d × %d turns", l.runs, l.chats*l.perRun), note))
			if !r.clean() {
				t.Errorf("%s", r.health())
			}
			if l.delay == 0 && l.chats == loadMax {
				u := d.memory(t)
				br.rep.add("memory", row{figure: fmt.Sprintf("VmRSS after %s messages across %d chats", thousands(turns), l.chats), median: fmtKB(u.rss), runs: "1 daemon",
					note: fmt.Sprintf("instant model; VmHWM %s", fmtKB(u.hwm))})
				br.rep.add("memory", row{figure: fmt.Sprintf("RssAnon after %s messages across %d chats", thousands(turns), l.chats), median: fmtKB(u.anon), runs: "1 daemon"})
			}
			if _, err := d.stop(); err != nil {
				t.Errorf("gateway exit: %v", err)
			}
		})
	}
}

// measureSoak sends 10,000 messages across 50 chats in batches of 500 and
// samples the daemon between batches, once the first 1,000 have warmed it.
func measureSoak(t *testing.T, br *benchRun) {
	const chats, perBatch, batches, warmup = 50, 10, 20, 2
	e := newEnv(t, br, model{}, nil)
	d := e.startReady(t)
	r := follow(t, e.tg)
	type sample struct {
		messages        int
		rss, anon       int64 // kB
		heap, stacks    int64 // bytes
		held            int64 // bytes the Go runtime holds from the OS and has not returned
		goroutines, fds int
	}
	var samples []sample
	start := time.Now()
	for b := range batches {
		if _, _, err := e.drive(t, r, chats, perBatch, plainText); err != nil {
			t.Fatalf("batch %d: %v", b, err)
		}
		if b+1 < warmup {
			continue
		}
		u := d.memory(t)
		m := d.scrape(t, "go_goroutines", "go_memstats_heap_inuse_bytes", "go_memstats_stack_inuse_bytes",
			"go_memstats_sys_bytes", "go_memstats_heap_released_bytes")
		samples = append(samples, sample{messages: (b + 1) * chats * perBatch, rss: u.rss, anon: u.anon,
			heap: int64(m["go_memstats_heap_inuse_bytes"]), stacks: int64(m["go_memstats_stack_inuse_bytes"]),
			held:       int64(m["go_memstats_sys_bytes"] - m["go_memstats_heap_released_bytes"]),
			goroutines: int(m["go_goroutines"]), fds: d.fds(t)})
	}
	wall := time.Since(start)
	series := func(f func(sample) int64) []int64 {
		out := make([]int64, len(samples))
		for i, s := range samples {
			out[i] = f(s)
		}
		return out
	}
	add := func(figure string, xs []int64, format func(int64) string, extra string) {
		note := fmt.Sprintf("first %s, last %s, peak %s", format(xs[0]), format(xs[len(xs)-1]), format(maxOf(xs)))
		br.rep.add("soak", statRow(figure, xs, format, fmt.Sprintf("%d samples", len(xs)), note+extra))
	}
	total := chats * perBatch * batches
	count := func(n int64) string { return fmtCount(int(n)) }
	add(fmt.Sprintf("soak, %s messages across %d chats: VmRSS", thousands(total), chats), series(func(s sample) int64 { return s.rss }), fmtKB,
		fmt.Sprintf("; the first sample after %s messages of warm-up, then every %d; %s in all", thousands(chats*perBatch*warmup), chats*perBatch, wall.Round(time.Second)))
	add("soak: RssAnon", series(func(s sample) int64 { return s.anon }), fmtKB, "")
	add("soak: Go heap in use (go_memstats_heap_inuse_bytes)", series(func(s sample) int64 { return s.heap }), fmtMB,
		"")
	add("soak: held by the Go runtime (go_memstats_sys_bytes − heap_released)", series(func(s sample) int64 { return s.held }), fmtMB,
		"; an upper bound of Go's share of RssAnon: the rest is C, SQLite's page and statement caches (2,000 KiB of pages at most per connection, 4 connections)")
	add("soak: goroutines (go_goroutines on /metrics)", series(func(s sample) int64 { return int64(s.goroutines) }), count, "")
	add("soak: open file descriptors (/proc/PID/fd)", series(func(s sample) int64 { return int64(s.fds) }), count, "")
	br.rep.add("soak", row{figure: "soak: replies", median: r.health()})
	var b strings.Builder
	b.WriteString("Soak samples:\n\n| messages | VmRSS | RssAnon | Go heap in use | Go stacks | held by Go | goroutines | fds |\n|---|---|---|---|---|---|---|---|\n")
	for _, s := range samples {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %d | %d |\n", thousands(s.messages), fmtKB(s.rss), fmtKB(s.anon), fmtMB(s.heap), fmtMB(s.stacks), fmtMB(s.held), s.goroutines, s.fds)
	}
	br.rep.appendix(b.String())
	if !r.clean() {
		t.Errorf("soak: %s", r.health())
	}
	if _, err := d.stop(); err != nil {
		t.Errorf("gateway exit: %v", err)
	}
}

// selfCPU is the user plus system time of the bench process so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
