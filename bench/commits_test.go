//go:build bench

package bench

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/openai/openaitest"
	"github.com/nanobot-go/nanobot/channels/telegram/telegramtest"
)

// TestCommits counts the synced commits (fsync and fdatasync calls, under
// strace) the daemon makes per plain message and per tool round, one
// message at a time so nothing merges. Run by bench/run.
func TestCommits(t *testing.T) {
	bin := os.Getenv("NANOBOT_BIN")
	strace, err := exec.LookPath("strace")
	if bin == "" || err != nil {
		t.Skip("needs NANOBOT_BIN and strace; run bench/run")
	}
	const n = 100
	tg := telegramtest.NewServer(t, botToken)
	stub := openaitest.NewServer(t)
	dir := t.TempDir()
	cfg := writeConfig(t, dir, tg, stub, map[string]string{"memory.window": "100000"})
	trace := filepath.Join(dir, "trace")
	cmd := exec.Command(strace, "-f", "-qq", "-e", "trace=fsync,fdatasync", "-o", trace, bin, "-c", cfg, "gateway")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	if _, err := waitCalls(t, tg, "getUpdates", 1); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(dir, "data", "nanobot.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	count := func() int {
		data, _ := os.ReadFile(trace)
		return strings.Count(string(data), "sync(")
	}
	run := func(tools int) float64 {
		before := count()
		for i := range n {
			for k := range tools {
				stub.Script(openaitest.Reply{ToolCalls: []agent.ToolCall{{ID: fmt.Sprintf("c%d", k), Name: "list_dir", Arguments: `{"path":"."}`}}})
			}
			stub.Script(openaitest.Reply{Text: "ok"})
			sent := len(tg.Sent())
			sendText(tg, rtChat, rtBase+int64(tools*n+i), "hello")
			ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
			_, err := tg.WaitSent(ctx, sent+1)
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			waitDelivered(t, db)
		}
		return float64(count()-before) / n
	}
	plain := run(0)
	threeTools := run(3)
	fmt.Printf("\ncommits: %.2f per plain message, %.2f per 3-tool message, so %.2f per tool round\n",
		plain, threeTools, (threeTools-plain)/3)
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
