package safety

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestProbe prints verdicts for the lines of the file named by
// SAFETY_PROBE, to inspect the filter by hand.
func TestProbe(t *testing.T) {
	name := os.Getenv("SAFETY_PROBE")
	if name == "" {
		t.Skip("SAFETY_PROBE not set")
	}
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := corpusPolicy(t)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		t.Logf("%-70s => %s", line, p.Check(line))
	}
}

// TestProbeSlow times the inputs of a fuzz corpus directory named by
// SAFETY_FUZZDIR and prints the slowest.
func TestProbeSlow(t *testing.T) {
	dir := os.Getenv("SAFETY_FUZZDIR")
	if dir == "" {
		t.Skip("SAFETY_FUZZDIR not set")
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	p := corpusPolicy(t)
	for _, fn := range files {
		b, err := os.ReadFile(fn)
		if err != nil {
			continue
		}
		lines := strings.SplitN(string(b), "\n", 3)
		if len(lines) < 2 {
			continue
		}
		s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[1], "string("), ")"))
		if err != nil {
			continue
		}
		start := time.Now()
		p.Check(s)
		if d := time.Since(start); d > 20*time.Millisecond {
			t.Logf("%v %d bytes %q", d, len(s), s[:min(len(s), 200)])
		}
	}
}
