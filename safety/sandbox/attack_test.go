package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The attacks below are what a hostile model tried through the exec tool:
// each runs as a command and then checks, from outside, that nothing it
// aimed at changed. They run with every confinement the kernel offers and
// again with the ones underneath alone (the seccomp filter and the
// subreaper, without namespaces), as root and, when the tests run as root,
// as an unprivileged user.

// isolation is one set of confinements to attack.
type isolation struct {
	name    string
	disable Features
	cred    *syscall.Credential
}

func isolations(t *testing.T) []isolation {
	t.Helper()
	out := []isolation{
		{name: "all"},
		{name: "no namespaces", disable: Features{PIDNamespace: true}},
	}
	if os.Geteuid() == 0 {
		nobody := &syscall.Credential{Uid: 65534, Gid: 65534}
		out = append(out, isolation{name: "unprivileged", cred: nobody},
			isolation{name: "unprivileged, no namespaces", cred: nobody, disable: Features{PIDNamespace: true}})
	}
	return out
}

// attackBox builds a sandbox for iso in a layout its user can write.
func attackBox(t *testing.T, iso isolation, tune func(*Config)) (*Sandbox, layout) {
	t.Helper()
	if ABI() < 1 {
		t.Skip("the kernel offers no Landlock")
	}
	l := newLayout(t)
	l.cfg.Disable = iso.disable
	if iso.cred != nil {
		// The other user must reach the workspace and run the helper,
		// which a test's temporary directory does not let it.
		root, err := os.MkdirTemp("", "nanobot-attack-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(root) })
		os.Chmod(root, 0o755)
		l.ws, l.state = filepath.Join(root, "ws"), filepath.Join(root, "state")
		for _, d := range []string{l.ws, l.state} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
			os.Chown(d, int(iso.cred.Uid), int(iso.cred.Gid))
		}
		helper := filepath.Join(root, "helper")
		b, err := os.ReadFile(os.Args[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(helper, b, 0o755); err != nil {
			t.Fatal(err)
		}
		l.cfg.Workspace, l.cfg.StateDir, l.cfg.Helper, l.cfg.Credential = l.ws, l.state, helper, iso.cred
	}
	if tune != nil {
		tune(&l.cfg)
	}
	s := mustNew(t, l.cfg)
	st, err := s.Probe()
	if err != nil {
		t.Fatalf("probe: %v", err)
	}
	t.Logf("confinements: %+v", st.Features)
	return s, l
}

// runOut runs command and returns its output, failing on a sandbox error.
func runOut(t *testing.T, s *Sandbox, dir, command string) string {
	t.Helper()
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, err := s.Run(ctx, Job{Args: []string{"/bin/sh", "-c", command}, Dir: dir, Env: []string{"PATH=/usr/bin:/bin"}, Output: &out}); err != nil {
		t.Fatalf("Run(%q): %v", command, err)
	}
	return out.String()
}

// helperPid is the pid of the running helper.
func helperPid(t *testing.T, s *Sandbox) int {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sp == nil || s.sp.proc == nil {
		t.Fatal("no helper is running")
	}
	return s.sp.proc.Process.Pid
}

func TestAttackDescriptors(t *testing.T) {
	for _, iso := range isolations(t) {
		t.Run(iso.name, func(t *testing.T) {
			s, l := attackBox(t, iso, nil)
			// The shell tests its own descriptors (test is a builtin).
			out := runOut(t, s, l.ws, `for fd in 0 1 2 $(seq 3 255); do [ -e /proc/self/fd/$fd ] && printf '%s ' $fd; done; echo; echo '{"id":1,"pid":1,"done":true}' >&3 && echo WROTE`)
			if fds := strings.Fields(strings.SplitN(out, "\n", 2)[0]); strings.Join(fds, " ") != "0 1 2" {
				t.Errorf("the command holds descriptors %v, want 0 1 2 only (output %q)", fds, out)
			}
			if strings.Contains(out, "WROTE") {
				t.Errorf("the command wrote to descriptor 3: %q", out)
			}
			// Nor through /proc: the launcher and the helper are not
			// dumpable.
			out = runOut(t, s, l.ws, `for p in $PPID `+strconv.Itoa(helperPid(t, s))+`; do for fd in 0 1 2 3 4 5; do echo '{"id":1,"done":true}' > /proc/$p/fd/$fd 2>/dev/null && echo WROTE $p $fd; done; done; echo checked`)
			if strings.Contains(out, "WROTE") || !strings.Contains(out, "checked") {
				t.Errorf("the command wrote to the descriptors of its launcher or the helper: %q", out)
			}
		})
	}
}

// TestForgedReplyKillsNothing feeds the daemon's end of the helper
// connection the replies a command would forge if it could reach it: a
// start naming another process, then cancels the command. The daemon must
// not signal that process: it asks the helper to stop its own launcher.
func TestForgedReplyKillsNothing(t *testing.T) {
	victim := exec.Command("sleep", "60")
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { victim.Process.Kill(); victim.Wait() })
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	ours, err := net.FileConn(os.NewFile(uintptr(fds[0]), "daemon"))
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := net.FileConn(os.NewFile(uintptr(fds[1]), "helper"))
	if err != nil {
		t.Fatal(err)
	}
	defer theirs.Close()
	sp := &spawner{conn: ours.(*net.UnixConn), done: make(chan struct{}), errs: &bytes.Buffer{}, waiting: map[uint64]chan reply{}}
	ready := make(chan reply, 1)
	go sp.read(ready)
	theirs.Write([]byte(`{"ready":true}`))
	<-ready
	s := &Sandbox{status: Status{Mode: ModeAuto}, sp: sp}
	ctx, cancel := context.WithCancel(t.Context())
	got := make(chan request, 4)
	go func() {
		buf := make([]byte, 1<<16)
		for {
			n, err := theirs.Read(buf)
			if err != nil {
				close(got)
				return
			}
			var req request
			if json.Unmarshal(buf[:n], &req) == nil {
				got <- req
			}
			if req.Cancel {
				fmt.Fprintf(theirs, `{"id":%d,"done":true,"status":9}`, req.ID)
				continue
			}
			fmt.Fprintf(theirs, `{"id":%d,"started":true,"pid":%d}`, req.ID, victim.Process.Pid)
			cancel()
		}
	}()
	if _, err := s.Run(ctx, Job{Args: []string{"/bin/true"}, Output: &bytes.Buffer{}}); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if first := <-got; first.Cancel {
		t.Fatalf("first request is a cancel: %+v", first)
	}
	if second := <-got; !second.Cancel {
		t.Errorf("the daemon did not ask the helper to cancel: %+v", second)
	}
	if err := victim.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("the process named in the forged reply is gone: %v", err)
	}
	var ws syscall.WaitStatus
	if pid, _ := syscall.Wait4(victim.Process.Pid, &ws, syscall.WNOHANG, nil); pid != 0 {
		t.Errorf("the process named in the forged reply ended: %v", ws)
	}
}

func TestAttackDaemonProcess(t *testing.T) {
	daemon := os.Getpid()
	var cpuBefore unix.Rlimit
	if err := unix.Prlimit(daemon, unix.RLIMIT_CPU, nil, &cpuBefore); err != nil {
		t.Fatal(err)
	}
	niceBefore, _ := unix.Getpriority(unix.PRIO_PROCESS, 0)
	oomBefore, _ := os.ReadFile("/proc/self/oom_score_adj")
	for _, iso := range isolations(t) {
		t.Run(iso.name, func(t *testing.T) {
			s, l := attackBox(t, iso, nil)
			runOut(t, s, l.ws, "true") // the helper runs from here on
			for _, target := range []int{daemon, helperPid(t, s)} {
				p := strconv.Itoa(target)
				attacks := []string{
					"prlimit --pid " + p + " --cpu=1:1",
					"prlimit --pid " + p + " --as=1000000:1000000",
					"prlimit --pid " + p + " --nofile=3:3",
					"renice -n 19 -p " + p,
					"kill -STOP " + p,
					"kill -HUP -" + p,
					"echo 1000 > /proc/" + p + "/oom_score_adj",
					"taskset -p 1 " + p,
					"ionice -c 3 -p " + p,
					`/usr/bin/python3 -c 'import ctypes,sys; l=ctypes.CDLL(None); print("ATTACHED" if l.ptrace(16,` + p + `,0,0)==0 else "refused")'`,
					`/usr/bin/python3 -c 'import os,signal; os.kill(` + p + `, signal.SIGSTOP); print("SIGNALLED")'`,
					`/usr/bin/python3 -c 'import os,signal; fd=os.open("/proc/` + p + `", os.O_RDONLY|os.O_DIRECTORY); signal.pidfd_send_signal(fd, signal.SIGSTOP); print("SIGNALLED")'`,
				}
				for _, a := range attacks {
					out := runOut(t, s, l.ws, a+"; echo exit=$?")
					if strings.Contains(out, "ATTACHED") || strings.Contains(out, "SIGNALLED") {
						t.Errorf("%q reached pid %d: %s", a, target, out)
					}
				}
				if st := procState(target); st == "T" || st == "t" {
					t.Errorf("pid %d was stopped", target)
					syscall.Kill(target, syscall.SIGCONT)
				}
			}
			var cpu unix.Rlimit
			unix.Prlimit(daemon, unix.RLIMIT_CPU, nil, &cpu)
			if cpu != cpuBefore {
				t.Errorf("the daemon's cpu limit changed: %+v, was %+v", cpu, cpuBefore)
			}
			var as unix.Rlimit
			unix.Prlimit(daemon, unix.RLIMIT_AS, nil, &as)
			if as.Cur != unix.RLIM_INFINITY {
				t.Errorf("the daemon's address space limit changed: %+v", as)
			}
			if nice, _ := unix.Getpriority(unix.PRIO_PROCESS, 0); nice != niceBefore {
				t.Errorf("the daemon's priority changed: %d, was %d", nice, niceBefore)
			}
			if oom, _ := os.ReadFile("/proc/self/oom_score_adj"); !bytes.Equal(oom, oomBefore) {
				t.Errorf("the daemon's oom_score_adj changed: %q, was %q", oom, oomBefore)
			}
			// The helper still serves.
			if out := runOut(t, s, l.ws, "echo alive"); !strings.Contains(out, "alive") {
				t.Errorf("the helper no longer runs commands: %q", out)
			}
		})
	}
}

// procState is the state letter of pid in /proc.
func procState(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if f := strings.Fields(s[i+1:]); i >= 0 && len(f) > 0 {
		return f[0]
	}
	return ""
}

func TestAttackBackgroundProcesses(t *testing.T) {
	for _, iso := range isolations(t) {
		t.Run(iso.name, func(t *testing.T) {
			s, l := attackBox(t, iso, nil)
			marker := fmt.Sprintf("30%05d", time.Now().UnixNano()%100000)
			cmd := strings.Join([]string{
				"setsid sleep " + marker + " &",
				"nohup sleep " + marker + " >/dev/null 2>&1 &",
				"(sleep " + marker + " &) ",
				"setsid sh -c 'sleep " + marker + " & sleep " + marker + "' >/dev/null 2>&1 &",
				`/usr/bin/python3 -c 'import os,time
if os.fork()==0:
    os.setsid()
    if os.fork()==0:
        os.execvp("sleep", ["sleep", "` + marker + `"])
' &`,
				"sleep 0.2; echo started",
			}, "\n")
			out := runOut(t, s, l.ws, cmd)
			if !strings.Contains(out, "started") {
				t.Fatalf("the command did not run: %q", out)
			}
			// A command that kills its launcher first leaves its
			// processes to the helper, which ends them.
			runOut(t, s, l.ws, "setsid sleep "+marker+" & nohup sleep "+marker+" >/dev/null 2>&1 & kill -9 $PPID; sleep 0.2; setsid sleep "+marker+" & echo killed")
			if left := processesWith("sleep\x00" + marker); len(left) > 0 {
				t.Errorf("%d background processes outlived the command: %v", len(left), left)
				for _, p := range left {
					syscall.Kill(p, syscall.SIGKILL)
				}
			}
		})
	}
}

// processesWith lists the processes whose command line holds s.
func processesWith(s string) []int {
	var out []int
	for _, p := range procTree() {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(p.pid) + "/cmdline")
		if err == nil && bytes.Contains(b, []byte(s)) && procState(p.pid) != "Z" {
			out = append(out, p.pid)
		}
	}
	return out
}

func TestAttackNetworkNone(t *testing.T) {
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	uport := strconv.Itoa(udp.LocalAddr().(*net.UDPAddr).Port)
	tport := strconv.Itoa(tcp.Addr().(*net.TCPAddr).Port)
	for _, iso := range isolations(t) {
		t.Run(iso.name, func(t *testing.T) {
			s, l := attackBox(t, iso, func(c *Config) { c.Network = NetworkNone })
			if st := s.Status(); st.Network != NetworkNone {
				t.Fatalf("network %s, want none: %v", st.Network, st.Notes)
			}
			attacks := []string{
				`/usr/bin/python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b"LEAK", ("127.0.0.1", ` + uport + `)); print("SENT")'`,
				`/usr/bin/python3 -c 'import socket; s=socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); s.sendto(b"LEAK", ("::ffff:127.0.0.1", ` + uport + `)); print("SENT")'`,
				"echo LEAK > /dev/udp/127.0.0.1/" + uport,
				"bash -c 'echo LEAK > /dev/udp/127.0.0.1/" + uport + "' && echo SENT",
				"bash -c 'exec 3<>/dev/tcp/127.0.0.1/" + tport + "' && echo SENT",
				`/usr/bin/python3 -c 'import socket; s=socket.socket(socket.AF_PACKET, socket.SOCK_RAW); print("SENT")'`,
			}
			for _, a := range attacks {
				if out := runOut(t, s, l.ws, a); strings.Contains(out, "SENT") {
					t.Errorf("%q: %s", a, out)
				}
			}
			// A packet from the daemon itself is the first to arrive.
			c, err := net.Dial("udp", udp.LocalAddr().String())
			if err != nil {
				t.Fatal(err)
			}
			c.Write([]byte("CONTROL"))
			c.Close()
			udp.SetReadDeadline(time.Now().Add(10 * time.Second))
			buf := make([]byte, 64)
			n, _, err := udp.ReadFrom(buf)
			if err != nil || string(buf[:n]) != "CONTROL" {
				t.Errorf("first datagram = %q, %v; want the daemon's CONTROL", buf[:n], err)
			}
		})
	}
}

func TestAttackUnixSockets(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	path := filepath.Join(dir, "engine.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	os.Chmod(path, 0o777)
	abstract, err := net.Listen("unix", "@nanobot-test-"+strconv.Itoa(os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	defer abstract.Close()
	accepted := make(chan string, 8)
	for _, l := range []net.Listener{ln, abstract} {
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				b := make([]byte, 16)
				n, _ := c.Read(b)
				accepted <- string(b[:n])
				c.Close()
			}
		}()
	}
	for _, iso := range isolations(t) {
		t.Run(iso.name, func(t *testing.T) {
			s, l := attackBox(t, iso, nil)
			attacks := []string{
				`/usr/bin/python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.connect("` + path + `"); s.send(b"LEAK"); print("SENT")'`,
				`/usr/bin/python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.connect("\0nanobot-test-` + strconv.Itoa(os.Getpid()) + `"); s.send(b"LEAK"); print("SENT")'`,
				`/usr/bin/python3 -c 'import socket; s=socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.sendto(b"LEAK", "/dev/log"); print("SENT")'`,
			}
			for _, a := range attacks {
				if out := runOut(t, s, l.ws, a); strings.Contains(out, "SENT") {
					t.Errorf("%q: %s", a, out)
				}
			}
			// Pipes between a command's own programs still work.
			if out := runOut(t, s, l.ws, `/usr/bin/python3 -c 'import socket; a,b=socket.socketpair(); a.send(b"ok"); print(b.recv(2).decode())'`); !strings.Contains(out, "ok") {
				t.Errorf("socketpair refused: %q", out)
			}
		})
	}
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("CONTROL"))
	c.Close()
	if got := <-accepted; got != "CONTROL" {
		t.Errorf("first connection carried %q, want the daemon's CONTROL", got)
	}
}

func TestAttackLimitsWholeCommand(t *testing.T) {
	for _, iso := range isolations(t) {
		t.Run(iso.name, func(t *testing.T) {
			s, l := attackBox(t, iso, func(c *Config) {
				c.Limits = Limits{Memory: 256 << 20, Processes: 64, FileSize: 64 << 20, DiskWritten: 96 << 20}
			})
			tests := []struct{ name, command, want string }{
				{"memory", `for i in 1 2 3; do /usr/bin/python3 -c 'import time; a=bytearray(150*1024*1024); a[::4096]=b"x"*len(a[::4096]); time.sleep(30)' & done; wait; echo DONE`, "memory together"},
				{"processes", `for i in $(seq 100); do sleep 5 & done; wait; echo DONE`, "processes at once"},
				{"disk", `for i in 1 2 3; do head -c 60000000 /dev/zero > f$i.bin; done; sync; sleep 30; echo DONE`, "wrote more than"},
			}
			for _, tt := range tests {
				start := time.Now()
				out := runOut(t, s, l.ws, tt.command)
				if tt.name == "processes" && (iso.cred != nil || os.Geteuid() != 0) && strings.Contains(out, "fork") {
					// The kernel's per-user limit binds an unprivileged
					// user first: the command's, or the test's own.
					tt.want = "fork"
					out = strings.ReplaceAll(out, "DONE", "")
				}
				if strings.Contains(out, "DONE") || !strings.Contains(out, tt.want) {
					t.Errorf("%s: %q after %s; want it stopped with %q", tt.name, out, time.Since(start).Round(time.Millisecond), tt.want)
				}
				if refusals := s.Refusals(out, l.ws); len(refusals) == 0 {
					t.Errorf("%s: no refusal reported for %q", tt.name, out)
				}
			}
		})
	}
}
