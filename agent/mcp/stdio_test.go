package mcp

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stubbornEnv makes TestStdioStubbornHelper a server that ignores the end
// of its stdin and SIGTERM.
const stubbornEnv = "NANOBOT_MCPTEST_STUBBORN"

func TestStdioStubbornHelper(t *testing.T) {
	if os.Getenv(stubbornEnv) != "1" {
		t.Skip("runs only as the child of TestStdioCloseKillsAStubbornServer")
	}
	signal.Ignore(syscall.SIGTERM)
	fmt.Println("ready")
	time.Sleep(time.Hour)
}

func TestStdioCloseKillsAStubbornServer(t *testing.T) {
	cfg := Server{Command: os.Args[0], Args: []string{"-test.run=^TestStdioStubbornHelper$"}, Env: append(os.Environ(), stubbornEnv+"=1")}
	tr, err := startStdio(cfg, &tail{})
	if err != nil {
		t.Fatal(err)
	}
	tr.terminate = 50 * time.Millisecond
	ready := make(chan struct{}, 1)
	tr.start(func(line []byte) bool {
		if strings.TrimSpace(string(line)) == "ready" {
			ready <- struct{}{}
		}
		return false
	})
	wait(t, ready) // SIGTERM is ignored from now on
	pid := tr.cmd.Process.Pid
	_ = tr.close()
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("process %d after close: kill 0 = %v, want ESRCH (killed and reaped)", pid, err)
	}
	wait(t, tr.done())
	if err := tr.err(); err == nil || !strings.Contains(err.Error(), "signal: killed") {
		t.Errorf("connection ended with %v, want the kill", err)
	}
}

func TestStdioExitStatus(t *testing.T) {
	stderr := &tail{}
	tr, err := startStdio(Server{Command: "sh", Args: []string{"-c", "echo 'no config found' >&2; exit 3"}}, stderr)
	if err != nil {
		t.Fatal(err)
	}
	tr.start(func([]byte) bool { return false })
	wait(t, tr.done())
	if err := tr.err(); err == nil || err.Error() != "the server exited: exit status 3" {
		t.Errorf("connection ended with %v", err)
	}
	if got := stderr.last(); got != "no config found" {
		t.Errorf("stderr tail = %q", got)
	}
	_ = tr.close()
}
