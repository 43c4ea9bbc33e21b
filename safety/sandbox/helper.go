package sandbox

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
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
// and exits. With envLaunch set it is a command's launcher instead (see
// launch.go). Without either it returns at once. Call it first thing in
// main, and in TestMain of tests that run commands through a Sandbox.
func RunHelper() {
	if raw, ok := os.LookupEnv(envLaunch); ok {
		runLauncher(raw)
	}
	raw, ok := os.LookupEnv(EnvSpec)
	if !ok {
		return
	}
	os.Unsetenv(EnvSpec)
	// FileConn works on a copy: the original descriptor is closed, so that
	// no child can inherit the connection.
	f := os.NewFile(3, "sandbox")
	conn, err := net.FileConn(f)
	f.Close()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%sno connection to the daemon: %v\n", helperPrefix, err)
		os.Exit(helperFailed)
	}
	h := &helperConn{conn: conn.(*net.UnixConn), jobs: map[uint64]*exec.Cmd{}}
	sp, err := confine(raw)
	if err != nil {
		h.send(reply{Err: err.Error()})
		os.Exit(helperFailed)
	}
	h.spec = sp
	h.features = h.probe()
	h.send(reply{Ready: true, Features: &h.features})
	h.serve()
	os.Exit(0)
}

// confine applies the instructions to the process.
func confine(raw string) (spec, error) {
	var sp spec
	if err := json.Unmarshal([]byte(raw), &sp); err != nil {
		return sp, fmt.Errorf("read instructions: %w", err)
	}
	// Not dumpable: a command of the same user can neither trace the
	// helper nor open its descriptors through /proc.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return sp, fmt.Errorf("protect the helper: %w", err)
	}
	// What a dead launcher leaves comes to the helper, which ends it.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return sp, fmt.Errorf("become the commands' reaper: %w", err)
	}
	if err := setLimits(sp.Limits); err != nil {
		return sp, err
	}
	if err := dropCapabilities(); err != nil {
		return sp, err
	}
	if sp.Landlock {
		return sp, restrict(sp)
	}
	return sp, nil
}

// helperConn is the helper's end of the connection.
type helperConn struct {
	conn     *net.UnixConn
	spec     spec
	features Features

	mu   sync.Mutex
	jobs map[uint64]*exec.Cmd // the launchers running, by request
}

func (h *helperConn) send(r reply) {
	b, _ := json.Marshal(r)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.conn.Write(b)
}

// serve starts and stops commands until the daemon closes the connection,
// then kills the ones still running.
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
		err = json.Unmarshal(buf[:n], &req)
		switch {
		case err == nil && req.Cancel:
			if out != nil {
				out.Close()
			}
			h.cancel(req.ID)
		case err != nil || out == nil || len(req.Args) == 0:
			if out != nil {
				out.Close()
			}
			h.send(reply{ID: req.ID, Err: "bad request"})
		default:
			h.start(req, out)
		}
	}
	h.mu.Lock()
	for _, cmd := range h.jobs {
		cmd.Process.Signal(syscall.SIGKILL)
	}
	h.mu.Unlock()
	h.sweepOrphans()
}

// cancel asks the launcher of a request to end its command, and kills the
// launcher if it has not within launcherGrace.
func (h *helperConn) cancel(id uint64) {
	h.mu.Lock()
	cmd := h.jobs[id]
	h.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGTERM)
	time.AfterFunc(launcherGrace, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.jobs[id] == cmd {
			cmd.Process.Signal(syscall.SIGKILL)
		}
	})
}

// launcherGrace is how long a launcher has to end its command when asked.
const launcherGrace = 3 * time.Second

// start starts the launcher of one command, writing to out.
func (h *helperConn) start(req request, out *os.File) {
	defer out.Close()
	status, w, err := os.Pipe()
	if err != nil {
		h.send(reply{ID: req.ID, Err: err.Error()})
		return
	}
	defer w.Close()
	h.mu.Lock()
	cmd, err := h.launch(req, out, w)
	if err == nil {
		h.jobs[req.ID] = cmd
	}
	h.mu.Unlock()
	if err != nil {
		status.Close()
		h.send(reply{ID: req.ID, Err: err.Error()})
		return
	}
	h.send(reply{ID: req.ID, Started: true})
	go func() {
		defer status.Close()
		w.Close()
		var b [4]byte
		_, rerr := io.ReadFull(status, b[:])
		cmd.Wait()
		h.mu.Lock()
		delete(h.jobs, req.ID)
		h.mu.Unlock()
		ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
		if rerr == nil && ws.Exited() && ws.ExitStatus() == 0 {
			ws = syscall.WaitStatus(binary.LittleEndian.Uint32(b[:]))
		} else {
			// The launcher died before its command was done (a command
			// killed it): what it started is the helper's now.
			h.sweepOrphans()
		}
		h.send(reply{ID: req.ID, Done: true, Status: uint32(ws)})
	}()
}

// launch starts a launcher for req with the namespaces the kernel allows.
func (h *helperConn) launch(req request, out, status *os.File) (*exec.Cmd, error) {
	job := launchJob{command: req.command, Processes: h.spec.Limits.Processes,
		Seccomp: h.features.Seccomp, Shell: h.spec.Shell,
		Filter: filterSpec{Network: h.spec.Network, Isolated: h.features.PIDNamespace}}
	if !h.features.PIDNamespace {
		job.Filter.Protect = protectedPids()
	}
	b, err := json.Marshal(job)
	if err != nil {
		return nil, err
	}
	cmd := &exec.Cmd{Path: h.spec.Exe, Args: []string{h.spec.Exe}, Env: []string{envLaunch + "=" + string(b), noExitPause},
		Stdout: out, Stderr: out, ExtraFiles: []*os.File{status},
		SysProcAttr: h.namespaces(h.features)}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the command's launcher: %w", err)
	}
	return cmd, nil
}

// noExitPause keeps a race-enabled build of the helper's executable from
// pausing a second at each exit (its launchers exit once per command);
// other builds ignore it.
const noExitPause = "GORACE=atexit_sleep_ms=0"

// protectedPids are the processes no command may signal when no PID
// namespace hides them: the daemon and the helper, and their groups.
func protectedPids() []int {
	self, parent := os.Getpid(), os.Getppid()
	out := []int{self, parent}
	for _, p := range []int{self, parent} {
		if g, err := syscall.Getpgid(p); err == nil && g > 1 {
			out = append(out, g)
		}
	}
	return out
}

// sweepOrphans kills and reaps the helper's children that are not
// launchers: what a dead launcher's command left.
func (h *helperConn) sweepOrphans() {
	deadline := time.Now().Add(sweepFor)
	for time.Now().Before(deadline) {
		h.mu.Lock()
		launchers := map[int]bool{}
		for _, cmd := range h.jobs {
			launchers[cmd.Process.Pid] = true
		}
		var orphans []int
		for _, pid := range children() {
			if !launchers[pid] {
				orphans = append(orphans, pid)
			}
		}
		h.mu.Unlock()
		if len(orphans) == 0 {
			return
		}
		for _, pid := range orphans {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		for _, pid := range orphans {
			var ws syscall.WaitStatus
			syscall.Wait4(pid, &ws, 0, nil)
		}
	}
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
	// No signal or socket scope: Landlock confines each thread of a Go
	// program with a domain of its own, and a scoped domain may not
	// signal the processes another thread started, so the helper could
	// not stop its own launchers. Signals are the seccomp filter's and the
	// PID namespace's to keep in, and it refuses Unix sockets outright.
	cfg.Scoped = 0
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
	// The helper starts each command through its own executable (the
	// kernel asks for reading as well as executing): commands may run it,
	// confined as they are, never write it.
	if sp.Exe != "" {
		rules = append(rules, landlock.PathAccess(llsys.AccessFSExecute|llsys.AccessFSReadFile, sp.Exe).IgnoreIfMissing())
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

// Features are the confinements the kernel let the helper use, beside
// Landlock.
type Features struct {
	// PIDNamespace: each command runs in a PID namespace of its own, so
	// it sees no other process by number and everything it starts ends
	// with it.
	PIDNamespace bool `json:"pidns,omitempty"`
	// UserNamespace: that namespace sits in a user namespace of its own
	// (an unprivileged helper needs one to make it).
	UserNamespace bool `json:"userns,omitempty"`
	// NetNamespace: with network none, each command has a network
	// namespace with no interface but a loopback of its own.
	NetNamespace bool `json:"netns,omitempty"`
	// Seccomp: each command runs under the system call filter.
	Seccomp bool `json:"seccomp,omitempty"`
	// Why lists what could not be had, and why.
	Why []string `json:"why,omitempty"`
}

// namespaces is how a launcher is started with f.
func (h *helperConn) namespaces(f Features) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if f.PIDNamespace {
		attr.Cloneflags |= syscall.CLONE_NEWPID
	}
	if f.NetNamespace {
		attr.Cloneflags |= syscall.CLONE_NEWNET
	}
	if f.UserNamespace {
		attr.Cloneflags |= syscall.CLONE_NEWUSER
		uid, gid := os.Getuid(), os.Getgid()
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		attr.GidMappingsEnableSetgroups = false
	}
	return attr
}

// probe finds out which confinements work here by starting a launcher that
// only confines itself, with less each time one fails.
func (h *helperConn) probe() Features {
	want := Features{PIDNamespace: true, Seccomp: true}
	// Root makes a PID namespace without a user namespace, and keeps its
	// view of files owned by others; anyone else needs one.
	want.UserNamespace = os.Geteuid() != 0
	want.NetNamespace = h.spec.Network == NetworkNone
	off := h.spec.Disable
	want.PIDNamespace = want.PIDNamespace && !off.PIDNamespace
	var why []string
	if want.UserNamespace && want.PIDNamespace && h.spec.Landlock {
		// Mapping a user namespace writes /proc/<pid>/uid_map, which the
		// helper's own Landlock rules forbid.
		want.PIDNamespace = false
		why = append(why, "no PID namespace per command: an unprivileged helper needs a user namespace for one, which it cannot map under Landlock")
	}
	want.UserNamespace = want.UserNamespace && want.PIDNamespace
	want.NetNamespace = want.NetNamespace && want.PIDNamespace && !off.NetNamespace
	want.Seccomp = !off.Seccomp
	try := func(f Features) error {
		job := launchJob{Probe: true, Seccomp: f.Seccomp, Filter: filterSpec{Network: h.spec.Network}}
		b, _ := json.Marshal(job)
		var errs bytes.Buffer
		cmd := &exec.Cmd{Path: h.spec.Exe, Args: []string{h.spec.Exe}, Env: []string{envLaunch + "=" + string(b), noExitPause},
			Stderr: &errs, SysProcAttr: h.namespaces(f)}
		if err := cmd.Run(); err != nil {
			if msg := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(errs.String()), helperPrefix)); msg != "" {
				return errors.New(msg)
			}
			return err
		}
		return nil
	}
	if err := try(want); err == nil {
		want.Why = why
		return want
	} else if want.PIDNamespace {
		why = append(why, fmt.Sprintf("no PID namespace per command (%v)", err))
		want.PIDNamespace, want.UserNamespace, want.NetNamespace = false, false, false
	}
	if err := try(want); err == nil {
		want.Why = why
		return want
	} else if want.Seccomp {
		why = append(why, fmt.Sprintf("no seccomp filter (%v)", err))
		want.Seccomp = false
	}
	want.Why = why
	return want
}
