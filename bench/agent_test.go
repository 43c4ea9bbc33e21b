//go:build bench

package bench

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const agentRuns = 20

// measureAgent times `nanobot agent -m hello` and takes its peak RSS.
func measureAgent(t *testing.T, br *benchRun) {
	e := newEnv(t, br, model{}, nil)
	ag := agentMessage(t, br.bin, e.cfg)
	br.logs.Write([]byte(ag.stderr))
	br.rep.add("agent", statRow("agent -m hello, wall time", ag.durs, fmtDur, fmt.Sprintf("%d runs", len(ag.durs)), "process start to exit: config, database, one model call, the answer printed"))
	rss := fmt.Sprintf("spawner's own peak %s is the floor", fmtKB(ag.spawnerHWM))
	if ag.maxRSS <= ag.spawnerHWM {
		rss = fmt.Sprintf("not measurable: the spawner peaked at %s", fmtKB(ag.spawnerHWM))
	}
	br.rep.add("agent", row{figure: "agent -m hello, peak RSS (max of the runs)", median: fmtKB(ag.maxRSS), runs: fmt.Sprintf("%d runs", len(ag.durs)), note: rss})
}

type agentRunsResult struct {
	durs       []time.Duration
	maxRSS     int64 // kB
	spawnerHWM int64 // kB
	stderr     string
}

// agentMessage runs `nanobot agent -m hello` several times from a small
// spawner process: Linux counts the peak RSS of the process a child was
// forked from in the child's ru_maxrss, and this test process is large by now.
func agentMessage(t *testing.T, bin, cfg string) agentRunsResult {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestAgentSpawner$", "-test.count=1")
	cmd.Env = append(os.Environ(), "NANOBOT_BENCH_SPAWN="+cfg)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("agent spawner: %v\n%s%s", err, out, stderr.String())
	}
	var r agentRunsResult
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		switch {
		case len(f) == 3 && f[0] == "agent-run":
			ns, _ := strconv.ParseInt(f[1], 10, 64)
			kb, _ := strconv.ParseInt(f[2], 10, 64)
			r.durs = append(r.durs, time.Duration(ns))
			r.maxRSS = max(r.maxRSS, kb)
		case len(f) == 2 && f[0] == "spawner-hwm":
			r.spawnerHWM, _ = strconv.ParseInt(f[1], 10, 64)
		case len(f) > 0 && f[0] == "agent-failed":
			t.Errorf("agent -m hello: %s", strings.TrimSpace(line))
		case len(f) > 0 && f[0] == "agent-stderr":
			s, _ := strconv.Unquote(strings.TrimSpace(strings.TrimPrefix(line, "agent-stderr")))
			r.stderr += s
		}
	}
	if len(r.durs) != agentRuns {
		t.Fatalf("agent spawner reported %d runs, want %d:\n%s%s", len(r.durs), agentRuns, out, stderr.String())
	}
	return r
}

// TestAgentSpawner is the small process agentMessage runs the agent from;
// it does nothing in a normal run.
func TestAgentSpawner(t *testing.T) {
	cfg := os.Getenv("NANOBOT_BENCH_SPAWN")
	if cfg == "" {
		t.Skip("runs only as TestDaemon's spawner")
	}
	bin := os.Getenv("NANOBOT_BIN")
	for i := range agentRuns {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(bin, "-c", cfg, "agent", "-m", "hello")
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		start := time.Now()
		err := cmd.Run()
		wall := time.Since(start)
		var exitErr *exec.ExitError
		if err != nil && !errors.As(err, &exitErr) {
			t.Fatalf("agent run %d: %v", i, err)
		}
		if err != nil || strings.TrimSpace(stdout.String()) != "ok" {
			fmt.Printf("agent-failed run %d: %v, stdout %q\n", i, err, stdout.String())
		}
		if stderr.Len() > 0 {
			fmt.Printf("agent-stderr %q\n", stderr.String())
		}
		var maxRSS int64
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			maxRSS = ru.Maxrss // kB on Linux
		}
		fmt.Printf("agent-run %d %d\n", wall.Nanoseconds(), maxRSS)
	}
	u, err := readStatus("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("spawner-hwm %d\n", u.hwm)
}

var logLine = regexp.MustCompile(`level=(\w+) msg=("(?:[^"\\]|\\.)*"|\S+)`)

// summarizeLogs counts log lines by level and lists each distinct warn or
// error message with its count, first and last occurrence.
func summarizeLogs(logs string) (levels map[string]int, summary string) {
	levels = map[string]int{}
	counts := map[string]int{}
	first, last := map[string]string{}, map[string]string{}
	var order []string
	for line := range strings.Lines(logs) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		level, msg := "OTHER", line
		if m := logLine.FindStringSubmatch(line); m != nil {
			level, msg = m[1], m[2]
		}
		levels[level]++
		if level == "INFO" || level == "DEBUG" {
			continue
		}
		key := level + " " + msg
		if counts[key] == 0 {
			order = append(order, key)
			first[key] = line
		}
		counts[key]++
		last[key] = line
	}
	var b strings.Builder
	if len(order) == 0 {
		b.WriteString("(none)\n")
	}
	for _, k := range order {
		fmt.Fprintf(&b, "- %d× %s\n  first: %s\n", counts[k], k, first[k])
		if counts[k] > 1 {
			fmt.Fprintf(&b, "  last:  %s\n", last[k])
		}
	}
	return levels, b.String()
}
