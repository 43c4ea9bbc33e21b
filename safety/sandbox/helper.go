package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
	"kernel.org/pub/linux/libs/security/libcap/psx"
)

// helperFailed is the exit status of a helper that could not start or
// confine itself.
const helperFailed = 125

// helperPrefix starts the helper's error messages on standard error.
const helperPrefix = "nanobot sandbox: "

// RunHelper turns the process into the sandbox helper when EnvSpec is set:
// it applies the limits and the Landlock rules to itself, then starts the
// commands the daemon sends over descriptor 3 until the daemon closes it,
// and exits. Without EnvSpec it returns at once. Call it first thing in
// main, and in TestMain of tests that run commands through a Sandbox.
func RunHelper() {
	raw, ok := os.LookupEnv(EnvSpec)
	if !ok {
		return
	}
	os.Unsetenv(EnvSpec)
	conn, err := net.FileConn(os.NewFile(3, "sandbox"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "%sno connection to the daemon: %v\n", helperPrefix, err)
		os.Exit(helperFailed)
	}
	h := &helperConn{conn: conn.(*net.UnixConn), running: map[int]bool{}}
	if err := confine(raw); err != nil {
		h.send(reply{Err: err.Error()})
		os.Exit(helperFailed)
	}
	h.send(reply{Ready: true})
	h.serve()
	os.Exit(0)
}

// confine applies the instructions to the process.
func confine(raw string) error {
	var sp spec
	if err := json.Unmarshal([]byte(raw), &sp); err != nil {
		return fmt.Errorf("read instructions: %w", err)
	}
	if err := setLimits(sp.Limits); err != nil {
		return err
	}
	if err := dropCapabilities(); err != nil {
		return err
	}
	if sp.Landlock {
		return restrict(sp)
	}
	return nil
}

// helperConn is the helper's end of the connection.
type helperConn struct {
	conn    *net.UnixConn
	mu      sync.Mutex
	running map[int]bool // process groups of the commands running
}

func (h *helperConn) send(r reply) {
	b, _ := json.Marshal(r)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.conn.Write(b)
}

// serve starts commands until the daemon closes the connection, then
// kills the ones still running.
func (h *helperConn) serve() {
	buf := make([]byte, 1<<20)
	oob := make([]byte, syscall.CmsgSpace(4))
	for {
		n, oobn, _, _, err := h.conn.ReadMsgUnix(buf, oob)
		if err != nil || n == 0 {
			break
		}
		out := receivedFile(oob[:oobn])
		var req request
		if err := json.Unmarshal(buf[:n], &req); err != nil || out == nil || len(req.Args) == 0 {
			if out != nil {
				out.Close()
			}
			h.send(reply{ID: req.ID, Err: "bad request"})
			continue
		}
		h.start(req, out)
	}
	h.mu.Lock()
	for pid := range h.running {
		syscall.Kill(-pid, syscall.SIGKILL)
	}
	h.mu.Unlock()
}

// start starts one command in a process group of its own, writing to out.
func (h *helperConn) start(req request, out *os.File) {
	cmd, err := startStopped(req, out)
	out.Close()
	if err != nil {
		h.send(reply{ID: req.ID, Err: err.Error()})
		return
	}
	pid := cmd.Process.Pid
	h.mu.Lock()
	h.running[pid] = true
	h.mu.Unlock()
	h.send(reply{ID: req.ID, Pid: pid})
	go func() {
		cmd.Wait()
		// What the command left running in its group ends with it, a fork
		// bomb's offspring included.
		syscall.Kill(-pid, syscall.SIGKILL)
		h.mu.Lock()
		delete(h.running, pid)
		h.mu.Unlock()
		ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
		h.send(reply{ID: req.ID, Pid: pid, Done: true, Status: uint32(ws)})
	}()
}

// startStopped starts the command so that it stops right after executing
// its program (it traces itself until then), sets its memory and cpu time
// limits and lets it go: the limits hold from its first instruction, for
// all it starts. The helper keeps neither limit for itself, as a Go
// program that lives long.
func startStopped(req request, out *os.File) (*exec.Cmd, error) {
	// Ptrace requests must come from the thread that started the child.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var cmd *exec.Cmd
	var err error
	// The processes of a command just ended may still count against the
	// process limit for a moment.
	traced := true
	for wait := 10 * time.Millisecond; ; wait *= 2 {
		cmd = &exec.Cmd{Path: req.Args[0], Args: req.Args, Dir: req.Dir, Env: req.Env, Stdout: out, Stderr: out,
			SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Ptrace: traced}}
		err = cmd.Start()
		if traced && (errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.ENOSYS)) {
			// A seccomp profile refuses ptrace: set the limits just after
			// the start instead, a moment late.
			traced = false
			continue
		}
		if !errors.Is(err, syscall.EAGAIN) || wait > 4*time.Second {
			break
		}
		time.Sleep(wait)
	}
	if err != nil {
		return nil, err
	}
	pid := cmd.Process.Pid
	var ws syscall.WaitStatus
	if !traced {
		if err := setCommandLimits(pid, req); err != nil {
			syscall.Kill(-pid, syscall.SIGKILL)
			cmd.Wait()
			return nil, err
		}
		return cmd, nil
	}
	if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil || !ws.Stopped() {
		syscall.Kill(-pid, syscall.SIGKILL)
		cmd.Wait()
		return nil, fmt.Errorf("the command did not stop at its start (%v, %v)", ws, err)
	}
	if err := setCommandLimits(pid, req); err != nil {
		syscall.Kill(-pid, syscall.SIGKILL)
		cmd.Wait()
		return nil, err
	}
	if err := syscall.PtraceDetach(pid); err != nil {
		syscall.Kill(-pid, syscall.SIGKILL)
		cmd.Wait()
		return nil, fmt.Errorf("start the command: %w", err)
	}
	return cmd, nil
}

// setCommandLimits sets the memory and cpu time limits of a command.
func setCommandLimits(pid int, req request) error {
	limit := func(res int, v uint64) error {
		if v == 0 {
			return nil
		}
		return unix.Prlimit(pid, res, &unix.Rlimit{Cur: v, Max: v}, nil)
	}
	cpu := uint64(0)
	if req.CPU > 0 {
		cpu = uint64(max(1, req.CPU.Seconds()))
	}
	if err := errors.Join(limit(unix.RLIMIT_DATA, uint64(max(req.Memory, 0))), limit(unix.RLIMIT_CPU, cpu)); err != nil {
		return fmt.Errorf("set the limits of the command: %w", err)
	}
	return nil
}

// receivedFile returns the descriptor passed with a message.
func receivedFile(oob []byte) *os.File {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	for _, m := range msgs {
		fds, err := syscall.ParseUnixRights(&m)
		if err != nil || len(fds) == 0 {
			continue
		}
		for _, fd := range fds[1:] {
			syscall.Close(fd)
		}
		syscall.CloseOnExec(fds[0])
		return os.NewFile(uintptr(fds[0]), "output")
	}
	return nil
}

// rootCapabilities are dropped from the bounding set of a helper running
// as root, so that its commands lose them at exec: reading other
// processes' memory and environment, administering the system, raw
// devices, modules, reboot, handle-based opens that bypass paths.
var rootCapabilities = []uintptr{unix.CAP_SYS_PTRACE, unix.CAP_SYS_ADMIN, unix.CAP_SYS_MODULE, unix.CAP_SYS_RAWIO,
	unix.CAP_SYS_BOOT, unix.CAP_DAC_READ_SEARCH, unix.CAP_NET_ADMIN, unix.CAP_MKNOD, unix.CAP_BPF, unix.CAP_PERFMON,
	unix.CAP_SYS_TIME, unix.CAP_SYSLOG, unix.CAP_AUDIT_CONTROL, unix.CAP_MAC_ADMIN, unix.CAP_MAC_OVERRIDE}

// dropCapabilities drops rootCapabilities on every thread (the bounding
// set is per thread, and any thread may start a command).
func dropCapabilities() error {
	if os.Geteuid() != 0 {
		return nil
	}
	for _, c := range rootCapabilities {
		if _, _, errno := psx.Syscall3(unix.SYS_PRCTL, unix.PR_CAPBSET_DROP, c, 0); errno != 0 && errno != syscall.EINVAL {
			return fmt.Errorf("drop capability %d: %w", c, errno)
		}
	}
	return nil
}

// setLimits sets soft and hard limits, never above the current hard limit.
func setLimits(l Limits) error {
	set := func(res int, v uint64, what string) error {
		if v == 0 {
			return nil
		}
		var cur syscall.Rlimit
		if err := syscall.Getrlimit(res, &cur); err != nil {
			return fmt.Errorf("read the %s limit: %w", what, err)
		}
		v = min(v, cur.Max)
		if err := syscall.Setrlimit(res, &syscall.Rlimit{Cur: v, Max: v}); err != nil {
			return fmt.Errorf("set the %s limit: %w", what, err)
		}
		return nil
	}
	const rlimitNproc = 6 // RLIMIT_NPROC on Linux
	cpu := uint64(0)
	if l.CPUTime > 0 {
		cpu = uint64(max(1, l.CPUTime.Seconds()))
	}
	return errors.Join(
		set(syscall.RLIMIT_DATA, uint64(max(l.Memory, 0)), "memory"),
		set(rlimitNproc, uint64(max(l.Processes, 0)), "process"),
		set(syscall.RLIMIT_FSIZE, uint64(max(l.FileSize, 0)), "file size"),
		set(syscall.RLIMIT_CPU, cpu, "cpu time"),
	)
}

// restrict applies the Landlock rules of sp to the process, with the best
// ABI the kernel offers.
func restrict(sp spec) error {
	abi, err := llsys.LandlockGetABIVersion()
	if err != nil || abi < 1 {
		return fmt.Errorf("%w (ABI %d): %v", ErrUnavailable, abi, err)
	}
	cfg := landlock.V11
	switch sp.Network {
	case NetworkAny, "":
		cfg.HandledAccessNet = 0
	case NetworkWeb:
		cfg.HandledAccessNet = llsys.AccessNetConnectTCP | llsys.AccessNetBindTCP
	}
	cfg = cfg.BestEffort()
	var rules []landlock.Rule
	for _, r := range expand(sp) {
		fi, err := os.Stat(r.path)
		if err != nil {
			continue // gone, or not ours to see
		}
		var rule landlock.FSRule
		switch {
		case r.listOnly:
			rule = landlock.PathAccess(llsys.AccessFSReadDir, r.path)
		case r.write && fi.IsDir():
			rule = landlock.RWDirs(r.path)
			if abi >= 2 {
				rule = rule.WithRefer() // moving files between directories
			}
		case r.write:
			rule = landlock.RWFiles(r.path)
		case fi.IsDir():
			rule = landlock.RODirs(r.path)
		default:
			rule = landlock.ROFiles(r.path)
		}
		rules = append(rules, rule.IgnoreIfMissing())
	}
	for _, d := range sp.Devices {
		if _, err := os.Stat(d); err == nil {
			rules = append(rules, landlock.RWFiles(d).IgnoreIfMissing())
		}
	}
	if sp.Network == NetworkWeb {
		rules = append(rules, landlock.ConnectTCP(80), landlock.ConnectTCP(443))
	}
	if err := cfg.Restrict(rules...); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	return nil
}

// rule is one tree a command may use.
type rule struct {
	path     string
	write    bool
	internal bool
	listOnly bool // only list the directories of the tree: it holds a hidden path
}

// expand turns the paths of sp into rules, leaving the hidden paths out:
// a tree holding one is replaced by its other entries, level by level.
// The workspace, home and temporary directory are kept even inside a
// hidden directory (a workspace inside the data directory).
func expand(sp spec) []rule {
	var work []rule
	for _, p := range sp.Read {
		work = append(work, rule{path: p})
	}
	for i, p := range sp.Write {
		work = append(work, rule{path: p, write: true, internal: i < sp.Internal})
	}
	hidden := func(p string) bool {
		for _, h := range sp.Hide {
			if within(p, h) {
				return true
			}
		}
		return false
	}
	var out []rule
	for len(work) > 0 {
		r := work[0]
		work = work[1:]
		if hidden(r.path) && !r.internal {
			continue
		}
		inner := ""
		for _, h := range sp.Hide {
			if h != r.path && within(h, r.path) {
				inner = h
				break
			}
		}
		if inner == "" {
			out = append(out, r)
			continue
		}
		// Grant the other entries of this directory; the one on the way to
		// the hidden path is split in turn.
		next := r.path + "/" + strings.SplitN(strings.TrimPrefix(inner, r.path+"/"), "/", 2)[0]
		if r.path == "/" {
			next = "/" + strings.SplitN(strings.TrimPrefix(inner, "/"), "/", 2)[0]
		}
		entries, err := os.ReadDir(r.path)
		if err != nil {
			continue
		}
		// Names stay listable (ls /usr); only the hidden file's content is
		// out of reach.
		out = append(out, rule{path: r.path, listOnly: true})
		for _, e := range entries {
			p := filepath.Join(r.path, e.Name())
			if p == next && p == inner {
				continue
			}
			if e.Type()&fs.ModeSymlink != 0 {
				if t, err := filepath.EvalSymlinks(p); err != nil || hidden(t) {
					continue // a link to a hidden file would grant the file
				}
			}
			work = append(work, rule{path: p, write: r.write, internal: r.internal})
		}
	}
	return out
}
