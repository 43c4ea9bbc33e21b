//go:build bench

package bench

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"testing"
)

// cacheLine is what cmd/nanobot's TestCacheFigures prints for a budget.
var cacheLine = regexp.MustCompile(`cache budget=(\d+) turns=(\d+) requests=(\d+) first_bytes=(\d+) median_share=([\d.]+%) lowest_share=([\d.]+%) at_least_90=(\d+/\d+) cached_bytes=([\d.]+%) input_bytes_per_turn=(\d+)`)

// measureCache runs a 100-turn chat, turns seven minutes apart on the
// daemon's clock, every third with a tool round, through the gateway at
// two budgets (6000 tokens, full after a few turns; the default 32000,
// where memory.window's consolidation bounds the history), and reports how much of each request's input an earlier
// request of the chat began with: what a provider's prompt cache serves.
// It runs in-process (cmd/nanobot's test harness) because the daemon's
// clock can be set there.
func measureCache(t *testing.T, br *benchRun) {
	cmd := exec.Command("go", "test", "-run", "^TestCacheFigures$", "-count", "1", "-v", "-tags", "sqlite_fts5", "./cmd/nanobot/")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "NANOBOT_CACHE_FIGURES=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go test -run TestCacheFigures: %v\n%s", err, out)
	}
	lines := cacheLine.FindAllStringSubmatch(string(out), -1)
	if len(lines) == 0 {
		t.Fatalf("TestCacheFigures printed no figures:\n%s", out)
	}
	for i, m := range lines {
		if i == 0 {
			br.rep.add("cache", row{figure: "first request of a fresh chat (body, built-in skills, every gateway tool)", median: m[4] + " bytes", runs: "1 chat",
				note: "target ≤ 8 KB"})
		}
		note := fmt.Sprintf("%s turns, %s requests; %s of the requests at or over 90 %%; lowest %s; input %s bytes a turn (about %d tokens)",
			m[2], m[3], m[7], m[6], m[9], atoi(m[9])/4)
		br.rep.add("cache", row{figure: fmt.Sprintf("prefix an earlier request began with, agent.context_tokens %s, history past the window (median request)", m[1]), median: m[5], runs: "1 chat", note: note})
		br.rep.add("cache", row{figure: fmt.Sprintf("input bytes a provider's cache serves, agent.context_tokens %s, history past the window", m[1]), median: m[8], runs: "1 chat",
			note: "tool schemas first, then the messages, as providers render them"})
	}
}

func atoi(s string) int {
	var n int
	fmt.Sscan(s, &n)
	return n
}
