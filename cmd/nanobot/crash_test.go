package main

import (
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/openai/openaitest"
	"github.com/nanobot-go/nanobot/channels/telegram/telegramtest"
)

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// releaseCFLAGS is the C compiler's flags of release builds (Dockerfile,
// .ci/run); deploy_test.go checks they agree.
const releaseCFLAGS = "-Os"

// nanobotBinary builds the daemon once per test run, with the release
// flags so the build cache of .ci/run is reused. NANOBOT_BIN overrides it.
func nanobotBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("NANOBOT_BIN"); bin != "" {
		return bin
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "nanobot-test-bin")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "nanobot")
		cmd := exec.Command("go", "build", "-trimpath", "-tags", "sqlite_fts5", "-o", builtBin, ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=1", "CGO_CFLAGS="+releaseCFLAGS)
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = err
			builtBin = string(out)
		}
	})
	if buildErr != nil {
		t.Fatalf("build nanobot: %v\n%s", buildErr, builtBin)
	}
	return builtBin
}

// child is the gateway running as a child process.
type child struct {
	cmd  *exec.Cmd
	logs *syncBuffer
	done chan struct{}
}

func startDaemon(t *testing.T, cfg string, flags ...string) *child {
	t.Helper()
	args := append([]string{"gateway", "-c", cfg}, flags...)
	d := &child{cmd: exec.Command(nanobotBinary(t), args...), logs: &syncBuffer{}, done: make(chan struct{})}
	d.cmd.Stdout, d.cmd.Stderr = d.logs, d.logs
	d.cmd.Env = append(os.Environ(), "NANOBOT_CONFIG=")
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.cmd.Wait(); close(d.done) }()
	t.Cleanup(func() { d.kill() })
	return d
}

// kill is kill -9.
func (d *child) kill() {
	d.cmd.Process.Signal(syscall.SIGKILL)
	<-d.done
}

// terminate is SIGTERM and a wait for a clean exit.
func (d *child) terminate(t *testing.T) {
	t.Helper()
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("daemon ignored SIGTERM; logs:\n%s", d.logs.String())
	}
	if code := d.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("daemon exited %d after SIGTERM; logs:\n%s", code, d.logs.String())
	}
}

func TestKillBetweenReceiveAndAnswer(t *testing.T) {
	tg := telegramtest.NewServer(t, botToken)
	model := openaitest.NewServer(t)
	hold := make(chan struct{})
	defer close(hold)
	model.Script(openaitest.Reply{Hold: hold}, openaitest.Reply{Text: "answer after the crash"})
	cfg := gatewayConfig(t, t.TempDir(), tg, model, nil)

	first := startDaemon(t, cfg)
	tg.SendText(owner, owner, "ada", "please answer despite the crash")
	if _, err := model.WaitRequests(waitCtx(t), 1); err != nil {
		t.Fatalf("the model was not asked: %v\n%s", err, first.logs.String())
	}
	first.kill()

	second := startDaemon(t, cfg)
	waitSentContaining(t, tg, owner, "answer after the crash")
	second.terminate(t)

	answers := 0
	for _, s := range tg.Sent() {
		if s.ChatID == owner {
			answers++
		}
	}
	if answers != 1 {
		t.Errorf("%d messages sent to the owner, want exactly 1: %+v", answers, tg.Sent())
	}
	reqs := model.Requests()
	users := 0
	for _, m := range reqs[len(reqs)-1].Messages {
		if m.Role == "user" && said(m) == "please answer despite the crash" {
			users++
		}
	}
	if users != 1 {
		t.Errorf("the resumed request holds the user message %d times, want 1", users)
	}
	if strings.Contains(first.logs.String()+second.logs.String(), botToken) {
		t.Error("the bot token appears in the daemon's logs")
	}
}

func TestKillDuringConsolidation(t *testing.T) {
	tg := telegramtest.NewServer(t, botToken)
	model := openaitest.NewServer(t)
	hold := make(chan struct{})
	defer close(hold)
	model.Script(
		openaitest.Reply{Text: "one"}, openaitest.Reply{Text: "two"}, openaitest.Reply{Text: "three"},
		openaitest.Reply{Hold: hold}, // the consolidation call, cut short by kill -9
	)
	dir := t.TempDir()
	cfg := gatewayConfig(t, dir, tg, model, map[string]string{"memory.window": "4"})

	d := startDaemon(t, cfg)
	for _, text := range []string{"one", "two", "three"} {
		tg.SendText(owner, owner, "ada", "message "+text)
		waitSentContaining(t, tg, owner, text)
	}
	reqs, err := model.WaitRequests(waitCtx(t), 4)
	if err != nil {
		t.Fatalf("no consolidation call: %v\n%s", err, d.logs.String())
	}
	if reqs[3].ToolChoice == nil {
		t.Fatalf("fourth request is not the forced save_memory call: %+v", reqs[3])
	}
	d.kill()

	db, err := sql.Open("sqlite3", filepath.Join(dir, "data", "nanobot.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var check string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity_check = %q, %v", check, err)
	}
	var total, distinct int
	db.QueryRow("SELECT count(*), count(DISTINCT role || content) FROM messages WHERE session = 'telegram:111'").Scan(&total, &distinct)
	if total != 6 || distinct != 6 {
		t.Errorf("after the crash: %d messages, %d distinct; want 6 and 6", total, distinct)
	}

	// After a restart consolidation runs again and succeeds.
	model.Script(
		openaitest.Reply{Text: "four"},
		openaitest.Reply{ToolCalls: []agent.ToolCall{{ID: "s", Name: "save_memory",
			Arguments: `{"history_entry":"Counted from one to four.","memory_update":"- Likes counting"}`}}},
	)
	d = startDaemon(t, cfg)
	tg.SendText(owner, owner, "ada", "message four")
	waitSentContaining(t, tg, owner, "four")
	if _, err := model.WaitRequests(waitCtx(t), 6); err != nil {
		t.Fatalf("consolidation did not run after restart: %v", err)
	}
	d.terminate(t)
	var doc string
	if err := db.QueryRow("SELECT doc FROM memory WHERE scope = 'global'").Scan(&doc); err != nil || doc != "- Likes counting" {
		t.Errorf("MEMORY = %q, %v", doc, err)
	}
	db.QueryRow("SELECT count(*), count(DISTINCT role || content) FROM messages WHERE session = 'telegram:111'").Scan(&total, &distinct)
	if total != 8 || distinct != 8 {
		t.Errorf("after restart: %d messages, %d distinct; want 8 and 8", total, distinct)
	}
}
