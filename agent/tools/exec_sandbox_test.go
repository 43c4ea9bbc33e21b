package tools

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/safety/sandbox"
)

// TestMain lets the test binary act as the sandbox helper.
func TestMain(m *testing.M) {
	sandbox.RunHelper()
	os.Exit(m.Run())
}

// confined is an exec tool that allows every command, running them under
// the sandbox, with a fake home, a directory outside the workspace and the
// bot's own files in a data directory.
type confined struct {
	exec                           *Exec
	root, ws, home, outside, data  string
	homeCanary, outCanary, cfg, db string
}

func newConfined(t *testing.T, limits sandbox.Limits, timeout time.Duration, cred *syscall.Credential) confined {
	t.Helper()
	if sandbox.ABI() < 1 {
		t.Skip("the kernel offers no Landlock")
	}
	root, err := os.MkdirTemp("", "nanobot-sandbox-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	c := confined{root: root, ws: filepath.Join(root, "ws"), home: filepath.Join(root, "home"),
		outside: filepath.Join(root, "outside"), data: filepath.Join(root, "data")}
	mkdir(t, c.ws, c.home, c.outside, c.data)
	c.homeCanary, c.outCanary = filepath.Join(c.home, "canary"), filepath.Join(c.outside, "canary")
	c.cfg, c.db = filepath.Join(c.data, "config.yaml"), filepath.Join(c.data, "nanobot.db")
	writeFile(t, c.homeCanary, "home canary")
	writeFile(t, c.outCanary, "outside canary")
	writeFile(t, c.cfg, "token: secret")
	writeFile(t, c.db, "SQLite format 3")
	helper := ""
	if cred != nil {
		// The other user must reach the workspace and run the helper.
		os.Chmod(root, 0o755)
		os.Chown(c.ws, int(cred.Uid), int(cred.Gid))
		helper = filepath.Join(root, "helper")
		copyFile(t, os.Args[0], helper)
	}
	sb, err := sandbox.New(sandbox.Config{
		Mode: sandbox.ModeLandlock, Workspace: c.ws, StateDir: filepath.Join(root, "state"), Shell: shell(),
		Hide: []string{c.cfg, c.db, c.data}, Limits: limits, ABI: sandbox.ABI(), Helper: helper, Credential: cred,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	c.exec = &Exec{
		Workspace: c.ws, Restrict: true, Timeout: timeout, Policy: &fakePolicy{verdict: allow}, Sandbox: sb,
		Env: []string{"PATH=/usr/local/go/bin:/usr/local/bin:/usr/bin:/bin", "HOME=" + c.home},
	}
	return c
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

func (c confined) unchanged(t *testing.T) {
	t.Helper()
	for path, want := range map[string]string{c.homeCanary: "home canary", c.outCanary: "outside canary", c.cfg: "token: secret"} {
		if b, err := os.ReadFile(path); err != nil || string(b) != want {
			t.Errorf("%s after the command: %q, %v; want %q", path, b, err, want)
		}
	}
}

func TestSandboxedExecRefuses(t *testing.T) {
	c := newConfined(t, sandbox.Limits{Memory: 256 << 20, Processes: 256, FileSize: 64 << 20}, time.Minute, nil)
	tests := []struct {
		name    string
		command string
		want    string // in the error
	}{
		{"write outside", "echo changed > " + c.outCanary, "write outside the workspace refused by the sandbox: " + c.outCanary},
		{"append outside", "echo more >> " + c.outCanary, "refused by the sandbox"},
		{"read the home", "cat " + c.homeCanary, "refused by the sandbox: " + c.homeCanary},
		{"read the config", "cat " + c.cfg, "refused by the sandbox: " + c.cfg},
		{"read the database", "cat " + c.db, "refused by the sandbox: " + c.db},
		{"delete outside", "rm -rf " + c.outside, "refused by the sandbox"},
		{"read the daemon's environment", fmt.Sprintf("cat /proc/%d/environ", os.Getpid()), "refused by the sandbox"},
	}
	if sandbox.ABI() >= 6 {
		tests = append(tests, struct{ name, command, want string }{"kill the daemon", fmt.Sprintf("kill -9 %d", os.Getpid()), "signal to a process outside the sandbox refused"})
	}
	if _, err := exec.LookPath("python3"); err == nil {
		tests = append(tests, struct{ name, command, want string }{"unbounded allocation",
			`python3 -c "exec('a = []\nwhile True: a.append(bytearray(10**6))')"`, "memory limit reached"})
	}
	pidns := false
	if box, ok := c.exec.Sandbox.(*sandbox.Sandbox); ok {
		st, _ := box.Probe()
		pidns = st.Features.PIDNamespace
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, ev, err := runExec(t, c.exec, map[string]string{"command": tt.command})
			if tt.name == "kill the daemon" && pidns && err == nil && strings.Contains(out, "No such process") {
				// In a PID namespace of its own the command cannot even
				// name the daemon.
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("exec(%q) = %q, %v; want an error with %q", tt.command, out, err, tt.want)
			}
			if ev.Verdict != "deny" || ev.Category != "sandbox" || ev.Reason == "" {
				t.Errorf("audit record: verdict %q, category %q, reason %q", ev.Verdict, ev.Category, ev.Reason)
			}
			c.unchanged(t)
		})
	}
	if _, err := os.Stat(c.outside); err != nil {
		t.Errorf("the directory outside the workspace is gone: %v", err)
	}
}

func TestSandboxedExecForkBomb(t *testing.T) {
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		// The process limit does not bind root: the bomb runs as nobody.
		cred = &syscall.Credential{Uid: 65534, Gid: 65534}
	}
	c := newConfined(t, sandbox.Limits{Processes: 48, Memory: 256 << 20}, 3*time.Second, cred)
	// A fork bomb in the spelling sh (dash) accepts, each call waiting for
	// its two offspring: it runs into the process limit until the timeout
	// kills it.
	out, _, err := runExec(t, c.exec, map[string]string{"command": "bomb(){ bomb|bomb; }; bomb"})
	if err == nil || !strings.Contains(err.Error(), "process limit reached") {
		t.Errorf("fork bomb = %q, %v; want an error naming the process limit", out, err)
	}
	// The classic :(){ :|:& };: returns at once; its offspring end with it.
	if out, _, err := runExec(t, c.exec, map[string]string{"command": "bomb(){ bomb|bomb& }; bomb"}); err != nil && !strings.Contains(err.Error(), "process limit") {
		t.Errorf("fork bomb in the background = %q, %v", out, err)
	}
	// The daemon and the sandbox carry on.
	c.exec.Timeout = time.Minute
	if out, _, err := runExec(t, c.exec, map[string]string{"command": "echo still here"}); err != nil || !strings.Contains(out, "still here") {
		t.Errorf("after the fork bomb: %q, %v", out, err)
	}
}

func TestSandboxedExecWorks(t *testing.T) {
	c := newConfined(t, sandbox.Limits{Memory: 1 << 30, Processes: 256, FileSize: 1 << 30}, time.Minute, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "served page\n")
	}))
	defer srv.Close()
	type work struct {
		name, command, want string
		needs               string // a program that must be installed
	}
	tests := []work{
		{"files and directories", "mkdir -p a/b && echo hi > a/b/c.txt && cat a/b/c.txt", "hi", ""},
		{"private home", `touch ~/.settings && ls -a ~ && test "$HOME" != ` + c.home, ".settings", ""},
		{"temporary files", `f=$(mktemp) && echo tmp > "$f" && cat "$f"`, "tmp", ""},
		{"pipeline", `printf 'b\na\nb\n' | sort | uniq -c`, "2 b", ""},
		{"git", "git init -q repo && cd repo && echo x > f && git add f && git -c user.name=t -c user.email=t@example.com commit -qm init && git log --oneline | wc -l", "1", "git"},
		{"c program", `printf '#include <stdio.h>\nint main(void){puts("hello from c");return 0;}\n' > hello.c && cc -o hello hello.c && ./hello`, "hello from c", "cc"},
		{"python script", `printf 'open("py.txt", "w").write("written by python")\n' > w.py && python3 w.py && cat py.txt`, "written by python", "python3"},
		{"curl to a local server", "curl -s -o page.html " + srv.URL + " && cat page.html", "served page", "curl"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.needs != "" {
				if _, err := exec.LookPath(tt.needs); err != nil {
					t.Skipf("%s is not installed", tt.needs)
				}
			}
			out, _, err := runExec(t, c.exec, map[string]string{"command": tt.command})
			if err != nil || !strings.Contains(out, tt.want) || !strings.Contains(out, "exit code: 0") {
				t.Errorf("exec(%q) = %q, %v; want %q and exit code 0", tt.command, out, err, tt.want)
			}
		})
	}
}
