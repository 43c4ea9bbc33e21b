//go:build bench

package bench

import (
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"
)

const commitMessages = 50 // of each kind

// measureCommits counts the synced commits (fsync and fdatasync calls,
// under strace) the daemon makes per plain message and per tool round, one
// message at a time so nothing merges, each counted until its reply is
// recorded as delivered. Consolidation is off (a window of 100,000) so
// every count is the turn's own.
func measureCommits(t *testing.T, br *benchRun) {
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("strace is not installed")
	}
	e := newEnv(t, br, model{}, map[string]string{"memory.window": "100000"})
	trace := filepath.Join(e.dir, "trace")
	d := e.startReady(t, strace, "-f", "-qq", "-e", "trace=fsync,fdatasync", "-o", trace)
	r := follow(t, e.tg)
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(e.dir, "data", "nanobot.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	count := func() int {
		data, _ := os.ReadFile(trace)
		return strings.Count(string(data), "sync(")
	}
	measure := func(text string) []int {
		var per []int
		for range commitMessages {
			before := count()
			if _, err := e.exchange(t.Context(), r, rtChat, text); err != nil {
				t.Fatal(err)
			}
			waitDelivered(t, db)
			per = append(per, count()-before)
		}
		return per
	}
	plain := measure(plainText)
	withTools := measure(toolsText(tools))
	base := float64(pct(slices.Sorted(slices.Values(plain)), 0.5))
	perRound := make([]float64, len(withTools))
	for i, n := range withTools {
		perRound[i] = (float64(n) - base) / tools
	}
	n := fmt.Sprintf("%d messages", commitMessages)
	br.rep.add("commits", statRow("synced commits per plain message", plain, fmtCount, n, "fsync+fdatasync under strace -f, until the reply is recorded as delivered"))
	br.rep.add("commits", statRow("synced commits per tool round", perRound, fmtFloat, n,
		fmt.Sprintf("(a %d-round message − the plain median) / %d; %d-round messages: median %d", tools, tools, tools, pct(slices.Sorted(slices.Values(withTools)), 0.5))))
	if _, err := d.stop(); err != nil {
		t.Errorf("gateway exit: %v", err)
	}
}

// waitDelivered waits until the outbox records every reply as delivered:
// the record follows Telegram's answer, so it is polled for.
func waitDelivered(t *testing.T, db *sql.DB) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		var pending int
		if err := db.QueryRow(`SELECT count(*) FROM outbox WHERE state = 'pending'`).Scan(&pending); err != nil {
			t.Fatal(err)
		}
		if pending == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("a reply stayed pending in the outbox")
		}
		time.Sleep(time.Millisecond)
	}
}
