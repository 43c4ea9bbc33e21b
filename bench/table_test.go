//go:build bench

package bench

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Groups of the report, in the order the table shows them.
var groups = []string{"size", "start", "memory", "latency", "commits", "throughput", "requests", "micro", "soak", "agent", "jobs", "cache", "loop", "recall", "run"}

// row is one line of the report: the median of a figure's runs, their
// spread, how many runs it is over, and a note.
type row struct{ figure, median, spread, runs, note string }

// report collects rows from the sections as they finish.
type report struct {
	mu         sync.Mutex
	rows       map[string][]row
	failed     []string
	appendices []string // markdown printed after the table
}

func newReport() *report { return &report{rows: map[string][]row{}} }

func (r *report) add(group string, rw row) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !slices.Contains(groups, group) {
		panic("unknown group " + group)
	}
	r.rows[group] = append(r.rows[group], rw)
}

func (r *report) appendix(md string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.appendices = append(r.appendices, md)
}

// extra is the appendices, one after another.
func (r *report) extra() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.appendices, "\n")
}

func (r *report) fail(section string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = append(r.failed, section)
}

func (r *report) markdown() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	b.WriteString("| figure | median | spread | runs | note |\n|---|---|---|---|---|\n")
	for _, g := range groups {
		for _, rw := range r.rows[g] {
			cells := []string{rw.figure, rw.median, orDash(rw.spread), orDash(rw.runs), orDash(rw.note)}
			for i, c := range cells {
				cells[i] = strings.ReplaceAll(c, "|", `\|`)
			}
			fmt.Fprintf(&b, "| %s |\n", strings.Join(cells, " | "))
		}
	}
	if len(r.failed) > 0 {
		fmt.Fprintf(&b, "\nFailed, so missing from the table: %s (see the log above).\n", strings.Join(r.failed, ", "))
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

// stat summarises samples: the median and either the range (few runs) or
// the 10th to 90th percentile (many samples of one run), formatted by f.
func stat[T int | int64 | float64 | time.Duration](xs []T, f func(T) string) (median, spread string) {
	if len(xs) == 0 {
		return "–", ""
	}
	s := slices.Sorted(slices.Values(xs))
	median = f(pct(s, 0.5))
	switch {
	case len(s) == 1:
		return median, ""
	case len(s) < 20:
		lo, hi := f(s[0]), f(s[len(s)-1])
		if lo == hi {
			return median, "min–max " + lo
		}
		return median, "min–max " + lo + " – " + hi
	default:
		return median, "p10–p90 " + f(pct(s, 0.1)) + " – " + f(pct(s, 0.9))
	}
}

// pct is the nearest-rank percentile of sorted s.
func pct[T any](s []T, p float64) T {
	k := int(float64(len(s))*p+0.999999) - 1
	return s[min(max(k, 0), len(s)-1)]
}

func percentile(ds []time.Duration, p float64) time.Duration {
	return pct(slices.Sorted(slices.Values(ds)), p)
}

// statRow is a row from samples.
func statRow[T int | int64 | float64 | time.Duration](figure string, xs []T, f func(T) string, runs, note string) row {
	m, s := stat(xs, f)
	return row{figure: figure, median: m, spread: s, runs: runs, note: note}
}

// fmtDur shows a duration in the unit that suits it.
func fmtDur(d time.Duration) string {
	switch {
	case d < time.Microsecond:
		return fmt.Sprintf("%d ns", d.Nanoseconds())
	case d < time.Millisecond:
		return fmt.Sprintf("%.1f µs", float64(d)/float64(time.Microsecond))
	case d < 10*time.Second:
		return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
}

func fmtMB(bytes int64) string { return fmt.Sprintf("%.2f MB", float64(bytes)/mb) }

// fmtSize is fmtMB for sizes of a megabyte or more, kB below.
func fmtSize(bytes int64) string {
	if bytes >= 1e6 || bytes <= -1e6 {
		return fmtMB(bytes)
	}
	return fmt.Sprintf("%.1f kB", float64(bytes)/1e3)
}

func fmtKB(kb int64) string { return fmtMB(kb * 1024) }

func fmtBytes(n int) string {
	if n < 10_000 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%.1f kB", float64(n)/1e3)
}

func fmtRate(x float64) string {
	if x < 100 {
		return fmt.Sprintf("%.1f/s", x)
	}
	return fmt.Sprintf("%.0f/s", x)
}

func fmtCount(n int) string { return fmt.Sprint(n) }

// thousands writes n with a comma between groups of three digits.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func fmtFloat(x float64) string { return fmt.Sprintf("%.2f", x) }
