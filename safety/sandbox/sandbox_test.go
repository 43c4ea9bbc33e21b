package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestMain lets the test binary act as the sandbox helper.
func TestMain(m *testing.M) {
	RunHelper()
	os.Exit(m.Run())
}

// needLandlock skips tests that need the kernel's Landlock.
func needLandlock(t testing.TB) int {
	t.Helper()
	abi := ABI()
	if abi < 1 {
		t.Skip("the kernel offers no Landlock")
	}
	return abi
}

type layout struct {
	ws, state, outside, data string
	cfg                      Config
}

// newLayout makes a workspace, a state directory, a directory outside both
// and a data directory with a config and a database, all absolute.
func newLayout(t *testing.T) layout {
	t.Helper()
	root := t.TempDir()
	l := layout{
		ws:      filepath.Join(root, "ws"),
		state:   filepath.Join(root, "state"),
		outside: filepath.Join(root, "outside"),
		data:    filepath.Join(root, "data"),
	}
	for _, d := range []string{l.ws, l.state, l.outside, l.data} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(l.outside, "canary"), "untouched")
	write(t, filepath.Join(l.data, "config.yaml"), "token: secret")
	write(t, filepath.Join(l.data, "notes.txt"), "shared notes")
	l.cfg = Config{
		Mode: ModeLandlock, Workspace: l.ws, StateDir: l.state, Shell: "/bin/sh",
		Hide:   []string{filepath.Join(l.data, "config.yaml")},
		Limits: Limits{FileSize: 1 << 20},
		ABI:    ABI(),
	}
	return l
}

// mustNew builds a sandbox that is closed at the end of the test.
func mustNew(t *testing.T, cfg Config) *Sandbox {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func write(t *testing.T, name, text string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// run runs a shell command through s in dir and returns its combined
// output and error.
func run(t *testing.T, s *Sandbox, dir, command string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	ws, err := s.Run(t.Context(), Job{Args: []string{"/bin/sh", "-c", command}, Dir: dir,
		Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/root"}, Output: &out})
	if err != nil {
		t.Fatalf("Run(%q): %v", command, err)
	}
	if !ws.Exited() || ws.ExitStatus() != 0 {
		return out.String(), fmt.Errorf("exit status %d, signal %v", ws.ExitStatus(), ws.Signal())
	}
	return out.String(), nil
}

func TestSandboxConfines(t *testing.T) {
	needLandlock(t)
	l := newLayout(t)
	l.cfg.Read = []string{l.data} // a readable tree holding a hidden file
	s := mustNew(t, l.cfg)
	tests := []struct {
		name    string
		command string
		ok      bool
		want    string // in the output
	}{
		{"write in the workspace", "echo hi > a.txt && mkdir -p d/e && cat a.txt", true, "hi"},
		{"private home", `echo "$HOME" && touch ~/.cache-test && ls -a ~`, true, ".cache-test"},
		{"private temporary directory", `f=$(mktemp) && echo ok > "$f" && cat "$f"`, true, "ok"},
		{"system software", "ls /usr/bin >/dev/null && date -u +%Y", true, "20"},
		{"write outside", "echo changed > " + l.outside + "/canary", false, "Permission denied"},
		{"create outside", "touch " + l.outside + "/new", false, ""},
		{"delete outside", "rm -rf " + l.outside, false, ""},
		{"read outside", "cat " + l.outside + "/canary", false, "Permission denied"},
		{"hidden inside a readable tree", "cat " + l.data + "/config.yaml", false, "Permission denied"},
		{"sibling of a hidden file", "cat " + l.data + "/notes.txt", true, "shared notes"},
		{"directory of a hidden file", "ls " + l.data, true, "config.yaml"},
		{"file size limit", "head -c 2000000 /dev/zero > big.bin", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := run(t, s, l.ws, tt.command)
			if (err == nil) != tt.ok || !strings.Contains(out, tt.want) {
				t.Errorf("%s: err %v, output %q; want ok=%v and %q", tt.command, err, out, tt.ok, tt.want)
			}
		})
	}
	if b, err := os.ReadFile(filepath.Join(l.outside, "canary")); err != nil || string(b) != "untouched" {
		t.Errorf("canary after the commands: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(l.outside, "new")); err == nil {
		t.Error("a file was created outside the workspace")
	}
}

func TestSandboxWithoutLandlock(t *testing.T) {
	l := newLayout(t)
	l.cfg.ABI = 0
	if _, err := New(l.cfg); !errors.Is(err, ErrUnavailable) {
		t.Errorf("New(landlock mode, no Landlock) = %v, want ErrUnavailable", err)
	}
	l.cfg.Mode = ModeAuto
	s := mustNew(t, l.cfg)
	st := s.Status()
	if st.Landlock || st.Reason == "" || !strings.Contains(st.Summary(), "NOT AVAILABLE") {
		t.Errorf("status without Landlock = %+v, summary %q", st, st.Summary())
	}
	// The limits still apply, through the helper.
	out, err := run(t, s, l.ws, "head -c 2000000 /dev/zero > big.bin")
	if err == nil {
		t.Errorf("file size limit without Landlock: no error, output %q", out)
	}
	l.cfg.ABI, l.cfg.Mode, l.cfg.Network = 3, ModeLandlock, NetworkWeb
	if _, err := New(l.cfg); !errors.Is(err, ErrUnavailable) {
		t.Errorf("New(network web on ABI 3) = %v, want ErrUnavailable", err)
	}
	l.cfg.Mode = ModeAuto
	if s := mustNew(t, l.cfg); s.Status().Network != NetworkAny || len(s.Status().Notes) == 0 {
		t.Errorf("auto, network web on ABI 3: %+v", s.Status())
	}
}

func TestSandboxOff(t *testing.T) {
	l := newLayout(t)
	l.cfg.Mode = ModeOff
	s, err := New(l.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if st := s.Status(); st.Landlock || !strings.Contains(st.Summary(), "off") {
		t.Errorf("status with the sandbox off = %+v", st)
	}
	if _, err := s.Run(t.Context(), Job{Args: []string{"/bin/true"}, Output: io.Discard}); err == nil {
		t.Error("Run with the sandbox off: no error")
	}
}

func TestRunKillsOnCancel(t *testing.T) {
	needLandlock(t)
	l := newLayout(t)
	s := mustNew(t, l.cfg)
	ctx, cancel := context.WithCancel(t.Context())
	out := &notifyWriter{started: make(chan struct{})}
	done := make(chan syscall.WaitStatus, 1)
	go func() {
		ws, _ := s.Run(ctx, Job{Args: []string{"/bin/sh", "-c", "echo started; sleep 60 & sleep 60"}, Dir: l.ws, Output: out})
		done <- ws
	}()
	select {
	case <-out.started:
	case <-time.After(60 * time.Second):
		t.Fatal("the command did not start")
	}
	cancel()
	select {
	case ws := <-done:
		if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Errorf("cancelled command: status %v", ws)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	// The helper keeps serving.
	if out, err := run(t, s, l.ws, "echo again"); err != nil || out != "again\n" {
		t.Errorf("after a cancelled command: %q %v", out, err)
	}
}

// notifyWriter closes started at the first output.
type notifyWriter struct {
	once    sync.Once
	started chan struct{}
}

func (w *notifyWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.started) })
	return len(p), nil
}

func TestSandboxNetworkNone(t *testing.T) {
	if needLandlock(t) < 4 {
		t.Skip("network rules need Landlock ABI 4")
	}
	l := newLayout(t)
	l.cfg.Network = NetworkNone
	s := mustNew(t, l.cfg)
	// bash's /dev/tcp connects with a plain TCP socket.
	out, err := run(t, s, l.ws, `bash -c 'exec 3<>/dev/tcp/127.0.0.1/9'`)
	if err == nil || !strings.Contains(out, "Permission denied") {
		t.Errorf("connect with network none: %v %q", err, out)
	}
}

func TestExpandHides(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"a/b/c", "a/x", "a/b/y"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(root, "a/b/c/secret"), "")
	write(t, filepath.Join(root, "a/b/c/other"), "")
	if err := os.Symlink(filepath.Join(root, "a/b/c/secret"), filepath.Join(root, "a/link")); err != nil {
		t.Fatal(err)
	}
	sp := spec{Read: []string{filepath.Join(root, "a")}, Hide: []string{filepath.Join(root, "a/b/c/secret")}}
	var got []string
	for _, r := range expand(sp) {
		got = append(got, strings.TrimPrefix(r.path, root+"/"))
	}
	slices.Sort(got)
	want := []string{"a", "a/b", "a/b/c", "a/b/c/other", "a/b/y", "a/x"} // a, a/b and a/b/c listable only
	if !slices.Equal(got, want) {
		t.Errorf("expand = %v, want %v", got, want)
	}
}

func TestRefusalsOfTheFilter(t *testing.T) {
	s := &Sandbox{status: Status{Mode: ModeLandlock, Landlock: true, Network: NetworkAny, Features: Features{Seccomp: true, PIDNamespace: true}}}
	tests := []struct {
		name, output string
		want         []string
	}{
		{"prlimit", "prlimit: failed to set the CPU time limit: Operation not permitted\n",
			[]string{"other processes are out of a command's reach in the sandbox: their limits, priority, memory and signals"}},
		{"strace", "strace: attach: ptrace(PTRACE_SEIZE, 77): Operation not permitted\n",
			[]string{"other processes are out of a command's reach in the sandbox: their limits, priority, memory and signals"}},
		{"unix socket", "Traceback (most recent call last):\nPermissionError: [Errno 13] Permission denied\n",
			[]string{"socket refused by the sandbox: Unix domain sockets always, internet sockets with tools.exec.network: none"}},
		{"file", "PermissionError: [Errno 13] Permission denied: 'x.txt'\n", nil},
	}
	for _, tt := range tests {
		if got := s.Refusals(tt.output, "/ws"); !slices.Equal(got, tt.want) {
			t.Errorf("%s: Refusals(%q) = %q, want %q", tt.name, tt.output, got, tt.want)
		}
	}
}

func TestRefusals(t *testing.T) {
	s := &Sandbox{
		status: Status{Mode: ModeLandlock, Landlock: true, Network: NetworkWeb, Limits: Limits{Memory: 1 << 30, Processes: 256, FileSize: 1 << 30}},
		home:   "/state/home", read: []string{"/usr", "/etc/passwd"}, write: []string{"/ws", "/state/home"},
		hide: []string{"/data/config.yaml"},
	}
	tests := []struct {
		name, output string
		want         []string
	}{
		{"dash redirect", "sh: 1: cannot create /home/owner/notes.txt: Permission denied\n",
			[]string{"write outside the workspace refused by the sandbox: /home/owner/notes.txt"}},
		{"cat", "cat: /home/owner/.bashrc: Permission denied\n",
			[]string{"read outside the allowed paths refused by the sandbox: /home/owner/.bashrc"}},
		{"rm system", "rm: cannot remove '/usr/bin/ls': Permission denied\n",
			[]string{"write outside the workspace refused by the sandbox: /usr/bin/ls"}},
		{"python", "PermissionError: [Errno 13] Permission denied: '/data/config.yaml'\n",
			[]string{"access to nanobot's own files refused by the sandbox: /data/config.yaml"}},
		{"relative in workspace", "touch: cannot touch 'x': Permission denied\n", nil},
		{"kill bash", "bash: line 1: kill: (4242) - Operation not permitted\n",
			[]string{"signal to a process outside the sandbox refused by the sandbox: pid 4242"}},
		{"kill dash", "sh: 1: kill: Operation not permitted\n",
			[]string{"signal to a process outside the sandbox refused by the sandbox"}},
		{"connect", "curl: (7) Failed to connect to example.com port 22 after 1 ms: Permission denied\n",
			[]string{"network connection refused by the sandbox (tools.exec.network: web)"}},
		{"fork bomb", "sh: 1: Cannot fork\n", []string{"process limit reached: at most 256 processes (tools.exec.limits.processes)"}},
		{"allocation", "MemoryError\n", []string{"memory limit reached: 1GiB for the command (tools.exec.limits.memory)"}},
		{"file size", "killed by signal: file size limit exceeded\n", []string{"file size limit reached (tools.exec.limits.file_size)"}},
		{"helper", helperPrefix + "could not confine the command: landlock: boom\n",
			[]string{"the sandbox could not be set up, so nothing ran: could not confine the command: landlock: boom"}},
		{"ordinary output", "hello\nexit code: 0\n", nil},
		{"whole-command limit", "\n" + helperPrefix + stoppedPrefix + "it wrote more than 2GiB to files (tools.exec.limits.disk_written)\n",
			[]string{"the sandbox stopped the command: it wrote more than 2GiB to files (tools.exec.limits.disk_written)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := s.Refusals(tt.output, "/ws"); !slices.Equal(got, tt.want) {
				t.Errorf("Refusals(%q) = %q, want %q", tt.output, got, tt.want)
			}
		})
	}
}

// BenchmarkEchoHello is the cost the sandbox adds to one command: echo
// hello through sh, plain and through the helper, with every confinement
// and with the ones underneath alone. It reports the median.
func BenchmarkEchoHello(b *testing.B) {
	needLandlock(b)
	root := b.TempDir()
	ws, state := filepath.Join(root, "ws"), filepath.Join(root, "state")
	os.MkdirAll(ws, 0o755)
	modes := []struct {
		name    string
		disable *Features // nil: no sandbox
	}{
		{"plain", nil},
		{"sandboxed", &Features{}},
		{"sandboxed, no namespaces", &Features{PIDNamespace: true}},
	}
	for _, mode := range modes {
		var s *Sandbox
		if mode.disable != nil {
			var err error
			s, err = New(Config{Mode: ModeLandlock, Workspace: ws, StateDir: state, Shell: "/bin/sh", ABI: ABI(),
				Limits: Limits{Memory: 1 << 30, Processes: 256, FileSize: 1 << 30}, Disable: *mode.disable})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
		}
		b.Run(mode.name, func(b *testing.B) {
			var times []time.Duration
			for b.Loop() {
				var out bytes.Buffer
				start := time.Now()
				if s != nil {
					if _, err := s.Run(b.Context(), Job{Args: []string{"/bin/sh", "-c", "echo hello"}, Dir: ws, Env: []string{"PATH=/usr/bin:/bin"}, Output: &out}); err != nil {
						b.Fatal(err)
					}
				} else {
					cmd := exec.Command("/bin/sh", "-c", "echo hello")
					cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = ws, []string{"PATH=/usr/bin:/bin"}, &out, &out
					if err := cmd.Run(); err != nil {
						b.Fatal(err)
					}
				}
				times = append(times, time.Since(start))
				if out.String() != "hello\n" {
					b.Fatalf("output %q", out.String())
				}
			}
			slices.Sort(times)
			b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "ms-median")
		})
	}
}

func TestUserTasks(t *testing.T) {
	// This process alone has several threads.
	if n := userTasks(os.Getuid()); n < 1 {
		t.Errorf("userTasks(%d) = %d, want at least this process", os.Getuid(), n)
	}
	if n := userTasks(1 << 30); n != 0 {
		t.Errorf("userTasks of a user with no processes = %d", n)
	}
}
