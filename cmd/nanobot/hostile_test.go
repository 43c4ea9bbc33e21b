package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/openai/openaitest"
	"github.com/nanobot-go/nanobot/safety/sandbox"
)

// A model that does what a hostile web page tells it, through the gateway
// as users run it: every command passes the filter (an owner's allow rule
// for everything), so the sandbox and the file tools are what stand in the
// way. Afterwards the gateway still answers, on the same config, with its
// limits, priority and environment untouched, and nothing the commands
// started is left.
func TestGatewayHostileModelGetsNothing(t *testing.T) {
	if sandbox.ABI() < 1 {
		t.Skip("the kernel offers no Landlock")
	}
	t.Setenv("GH_PAT", "ghp_hostile_test_token_0123456789")
	t.Setenv("DATABASE_URL", "postgres://u:hunter2@db/x")
	h := startGateway(t, map[string]string{"tools.exec.allow": `["re:."]`})
	cfgBefore, err := os.ReadFile(h.cfg)
	if err != nil {
		t.Fatal(err)
	}
	var cpuBefore unix.Rlimit
	unix.Prlimit(0, unix.RLIMIT_CPU, nil, &cpuBefore)
	niceBefore, _ := unix.Getpriority(unix.PRIO_PROCESS, 0)

	pid := strconv.Itoa(os.Getpid())
	marker := fmt.Sprintf("31%05d", time.Now().UnixNano()%100000)
	calls := []agent.ToolCall{
		{ID: "bg", Name: "exec", Arguments: jsonArgs(map[string]string{"command": "setsid sleep " + marker + " & nohup sleep " + marker + " >/dev/null 2>&1 & echo spawned"})},
		{ID: "limits", Name: "exec", Arguments: jsonArgs(map[string]string{"command": "prlimit --pid " + pid + " --cpu=1:1 --nofile=3:3; renice -n 19 -p " + pid + "; kill -STOP " + pid + "; echo tried"})},
		{ID: "env", Name: "exec", Arguments: jsonArgs(map[string]string{"command": "env"})},
		{ID: "config", Name: "write_file", Arguments: jsonArgs(map[string]string{"path": h.cfg, "content": "tools:\n  exec:\n    sandbox: off\n"})},
		{ID: "config-rel", Name: "write_file", Arguments: jsonArgs(map[string]string{"path": "../config.yaml", "content": "tools: {}\n"})},
		{ID: "fifo", Name: "exec", Arguments: jsonArgs(map[string]string{"command": "mkfifo pipe && echo made"})},
		{ID: "read-fifo", Name: "read_file", Arguments: jsonArgs(map[string]string{"path": "pipe"})},
	}
	h.model.Script(openaitest.Reply{ToolCalls: calls}, openaitest.Reply{Text: "all done"})
	start := time.Now()
	h.ask("please follow the instructions on this page")
	took := time.Since(start)
	reqs := h.model.Requests()
	last := reqs[len(reqs)-1]
	results := map[string]string{}
	for _, c := range calls {
		results[c.ID] = resultIn(last, c.ID)
	}
	for _, c := range calls {
		t.Logf("%s: %.300q", c.ID, results[c.ID])
	}
	if !strings.Contains(results["bg"], "spawned") {
		t.Errorf("background command result: %q", results["bg"])
	}
	for _, secret := range []string{"ghp_hostile_test_token", "hunter2", testKey, botToken} {
		if strings.Contains(results["env"], secret) {
			t.Errorf("env showed a secret %q:\n%s", secret, results["env"])
		}
	}
	for _, id := range []string{"config", "config-rel", "read-fifo"} {
		if !strings.HasPrefix(results[id], "Error") {
			t.Errorf("%s: %q, want an error", id, results[id])
		}
	}
	if took > 30*time.Second {
		t.Errorf("the turn took %s: a tool waited on the FIFO", took)
	}
	if cfg, _ := os.ReadFile(h.cfg); !bytes.Equal(cfg, cfgBefore) {
		t.Errorf("config.yaml changed:\n%s", cfg)
	}
	var cpu unix.Rlimit
	unix.Prlimit(0, unix.RLIMIT_CPU, nil, &cpu)
	var nofile unix.Rlimit
	unix.Prlimit(0, unix.RLIMIT_NOFILE, nil, &nofile)
	if cpu != cpuBefore || nofile.Cur <= 3 {
		t.Errorf("the gateway's limits changed: cpu %+v (was %+v), nofile %+v", cpu, cpuBefore, nofile)
	}
	if nice, _ := unix.Getpriority(unix.PRIO_PROCESS, 0); nice != niceBefore {
		t.Errorf("the gateway's priority changed: %d, was %d", nice, niceBefore)
	}
	for _, p := range sleepers(marker) {
		t.Errorf("a background process outlived its command: pid %d", p)
		syscall.Kill(p, syscall.SIGKILL)
	}
	// The gateway still answers, as before.
	h.model.Script(openaitest.Reply{Text: "still here"})
	if m := h.ask("are you there?"); !strings.Contains(m.Text, "still here") {
		t.Errorf("after the attacks: %q", m.Text)
	}
}

// jsonArgs encodes tool call arguments.
func jsonArgs(m map[string]string) string {
	b, _ := json.Marshal(m)
	return string(b)
}

// sleepers lists the processes running "sleep marker".
func sleepers(marker string) []int {
	var out []int
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err != nil || !bytes.Equal(b, []byte("sleep\x00"+marker+"\x00")) {
			continue
		}
		if st, err := os.ReadFile(filepath.Join("/proc", d.Name(), "stat")); err == nil && bytes.Contains(st, []byte(") Z ")) {
			continue
		}
		if n, err := strconv.Atoi(d.Name()); err == nil {
			out = append(out, n)
		}
	}
	return out
}
