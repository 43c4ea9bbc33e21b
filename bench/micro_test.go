//go:build bench

package bench

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// measureMicro runs the packages' own benchmarks behind two figures (the
// safety filter's cost per command, search_history over 100,000 entries)
// and times `nanobot safety check` over the safety corpus.
func measureMicro(t *testing.T, br *benchRun) {
	check := goBench(t, "./safety/", "^BenchmarkCheck(Typical)?$", "1s", 5)
	for _, b := range []struct{ name, figure string }{
		{"BenchmarkCheck", "safety check, one command of the corpus mix (BenchmarkCheck)"},
		{"BenchmarkCheckTypical", "safety check, `cd src && go test ./... 2>&1 | tail -n 20` (BenchmarkCheckTypical)"},
	} {
		r := check[b.name]
		br.rep.add("micro", statRow(b.figure, r.ns, fmtDur, fmt.Sprintf("%d × 1 s", len(r.ns)), r.allocs))
	}
	measureSafetyCLI(t, br)

	search := goBench(t, "./memory/", "^BenchmarkSearchHistory100k$", "0.5s", 3)
	for _, c := range []struct{ sub, what string }{
		{"common", "a word in nearly every entry"},
		{"rare", "a rare word"},
		{"two_words", "two words"},
		{"phrase", "a phrase"},
		{"no_match", "no match"},
		{"hostile", "FTS syntax the user typed"},
		{"small_scope", "a chat with 21 entries, beside 100,000 of another scope that match"},
	} {
		r := search["BenchmarkSearchHistory100k/"+c.sub]
		br.rep.add("micro", statRow("search_history, 100,000 entries, "+c.what, r.ns, fmtDur, fmt.Sprintf("%d × 0.5 s", len(r.ns)),
			"BenchmarkSearchHistory100k/"+c.sub+", top 10; "+r.allocs))
	}
}

type benchResult struct {
	ns     []time.Duration
	allocs string // of the last run
}

var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op(?:\s+(\d+) B/op\s+(\d+) allocs/op)?`)

// goBench runs `go test -bench` on a package of the module and collects
// ns/op by benchmark over count runs.
func goBench(t *testing.T, pkg, pattern, benchtime string, count int) map[string]*benchResult {
	t.Helper()
	cmd := exec.Command("go", "test", "-run", "^$", "-bench", pattern, "-benchtime", benchtime,
		"-count", strconv.Itoa(count), "-benchmem", "-tags", "sqlite_fts5", pkg)
	cmd.Dir = ".."
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go test -bench %s %s: %v\n%s", pattern, pkg, err, out)
	}
	res := map[string]*benchResult{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		m := benchLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		ns, _ := strconv.ParseFloat(m[2], 64)
		r := res[m[1]]
		if r == nil {
			r = &benchResult{}
			res[m[1]] = r
		}
		r.ns = append(r.ns, time.Duration(ns))
		if m[3] != "" {
			r.allocs = fmt.Sprintf("%s B and %s allocations an operation", m[3], m[4])
		}
	}
	if len(res) == 0 {
		t.Fatalf("go test -bench %s %s: no results\n%s", pattern, pkg, out)
	}
	return res
}

// measureSafetyCLI times `nanobot safety check` judging the whole corpus
// from standard input, one process per run, and one command alone.
func measureSafetyCLI(t *testing.T, br *benchRun) {
	e := newEnv(t, br, model{}, nil)
	data, err := os.ReadFile(filepath.Join("..", "safety", "testdata", "commands.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	var cmds []string
	for line := range strings.Lines(string(data)) {
		f := strings.SplitN(strings.TrimRight(line, "\n"), "\t", 3)
		if len(f) == 3 && !strings.HasPrefix(f[0], "#") {
			cmds = append(cmds, f[2])
		}
	}
	stdin := strings.Join(cmds, "\n") + "\n"
	run := func(input string, args ...string) time.Duration {
		cmd := exec.Command(br.bin, append([]string{"safety", "check", "-c", e.cfg}, args...)...)
		cmd.Stdin = strings.NewReader(input)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		start := time.Now()
		out, err := cmd.Output()
		wall := time.Since(start)
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) { // a deny verdict may set the exit status
			t.Fatalf("safety check: %v\n%s", err, stderr.String())
		}
		if args == nil && strings.Count(string(out), "\n") != len(cmds) {
			t.Fatalf("safety check: %d verdicts for %d commands\n%s", strings.Count(string(out), "\n"), len(cmds), stderr.String())
		}
		return wall
	}
	var per, one []time.Duration
	for range runs {
		per = append(per, run(stdin)/time.Duration(len(cmds)))
		one = append(one, run("", "ls -la"))
	}
	br.rep.add("micro", statRow(fmt.Sprintf("`nanobot safety check` over the corpus (%d commands on stdin), per command", len(cmds)), per, fmtDur,
		fmt.Sprintf("%d runs", runs), fmt.Sprintf("one process a run, its start included; one command alone takes %s (median)", fmtDur(percentile(one, 0.5)))))
}
