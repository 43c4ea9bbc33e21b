package sandbox

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Every command has a launcher of its own: the helper's executable started
// again with envLaunch, between the helper and the command. It confines
// itself further (the seccomp filter, no inherited descriptors), starts
// the command and outlives it: it is the command's
// reaper (the init of its PID namespace where the kernel allows one, a
// child subreaper otherwise), so that nothing the command started, in the
// background, in a new session or after a double fork, survives the
// command. It also adds up what the command as a whole uses and stops it
// past the limits.

// envLaunch turns the executable into a command's launcher; it holds the
// job.
const envLaunch = "NANOBOT_SANDBOX_JOB"

// launchJob is what a launcher does.
type launchJob struct {
	command
	// Processes bounds the command as a whole.
	Processes int `json:"processes,omitempty"`
	Filter    filterSpec
	Seccomp   bool `json:"seccomp,omitempty"`
	// Probe: confine, then exit at once (the helper finds out what works).
	Probe bool `json:"probe,omitempty"`
	// Shell sets the per-process limits before the command runs.
	Shell string `json:"shell,omitempty"`
}

// launchFailed is the exit status of a launcher that could not start its
// command; what went wrong is on standard error.
const launchFailed = 126

// watchEvery is how often a launcher adds up what its command uses.
const watchEvery = 50 * time.Millisecond

// runLauncher is the launcher's main: it never returns. The command's wait
// status goes to descriptor 3, which the command does not inherit.
func runLauncher(raw string) {
	runtime.LockOSThread()
	os.Unsetenv(envLaunch)
	status := os.NewFile(3, "status")
	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, helperPrefix+format+"\n", args...)
		os.Exit(launchFailed)
	}
	var job launchJob
	if err := json.Unmarshal([]byte(raw), &job); err != nil || (len(job.Args) == 0 && !job.Probe) {
		fail("read the command: %v", err)
	}
	if err := confineLauncher(job); err != nil {
		fail("%v", err)
	}
	if job.Probe {
		os.Exit(0)
	}
	syscall.CloseOnExec(3)
	l := &launcher{job: job, self: os.Getpid(), host: hostPid()}
	ws, err := l.run()
	if err != nil {
		fail("%v", err)
	}
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], uint32(ws))
	status.Write(b[:])
	os.Exit(0)
}

// confineLauncher applies what the launcher and its command share.
func confineLauncher(job launchJob) error {
	// Not dumpable: the command, as the same user, can neither trace the
	// launcher nor open its descriptors through /proc.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("protect the launcher: %w", err)
	}
	if os.Getpid() != 1 {
		if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
			return fmt.Errorf("become the command's reaper: %w", err)
		}
	}
	// The seccomp filter needs no_new_privs on the calling thread, and
	// the kernel copies both to the other threads as it synchronises
	// them: the usual way to set something on every thread signals each
	// by the ids /proc gives, which in a new PID namespace are not the
	// launcher's own.
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if job.Seccomp {
		if err := installFilter(job.Filter); err != nil {
			return err
		}
	}
	// Nothing but standard input, output and error reaches the command.
	if err := unix.CloseRange(4, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil && !errors.Is(err, syscall.ENOSYS) {
		return fmt.Errorf("close descriptors: %w", err)
	}
	return nil
}

// withLimits wraps args so that the memory and cpu time limits of each
// process are set by a shell just before the command replaces it: the
// launcher, a Go program that lives as long as the command, keeps neither
// for itself. Without a shell only the command's total is watched.
func (j launchJob) withLimits() []string {
	if (j.Memory <= 0 && j.CPU <= 0) || j.Shell == "" {
		return j.Args
	}
	var set []string
	if j.Memory > 0 {
		set = append(set, fmt.Sprintf("ulimit -d %d", max(j.Memory>>10, 1)))
	}
	if j.CPU > 0 {
		set = append(set, fmt.Sprintf("ulimit -t %d", int64(max(1, j.CPU.Seconds()))))
	}
	script := strings.Join(set, " && ") + ` && exec "$@"`
	return append([]string{j.Shell, "-c", script, "nanobot-limits"}, j.Args...)
}

// launcher runs one command.
type launcher struct {
	job  launchJob
	self int // the launcher's pid, as its own namespace sees it (1 in a PID namespace of its own)
	host int // its pid as /proc, mounted outside that namespace, names it
	main int // the command's first process
}

// hostPid is the pid /proc/self names: the launcher's pid in the namespace
// /proc was mounted in, which is not its own when it runs in a new one.
func hostPid() int {
	s, err := os.Readlink("/proc/self")
	if err != nil {
		return os.Getpid()
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return os.Getpid()
	}
	return n
}

// sweepFor bounds the sweep: a process stuck in the kernel (a dead NFS or
// FUSE mount) cannot die, and the launcher reports rather than waits.
const sweepFor = 10 * time.Second

// What a launcher says on standard error when it stops a command, or
// cannot end all of it.
const (
	stoppedPrefix = "the command was stopped: "
	notEnded      = "some processes of the command could not be ended"
)

// reaped is one child the launcher waited for.
type reaped struct {
	pid int
	ws  syscall.WaitStatus
}

// run starts the command, watches it until it exits, then ends everything
// it left behind and returns its wait status. The launcher reaps every
// child itself, the command's first process among them.
func (l *launcher) run() (syscall.WaitStatus, error) {
	// The helper asks a launcher to stop its command with SIGTERM.
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM)
	main, err := l.start()
	if err != nil {
		return 0, err
	}
	l.main = main
	reaps := make(chan reaped, 64)
	go reapAll(reaps)
	tick := time.NewTicker(watchEvery)
	defer tick.Stop()
	var status syscall.WaitStatus
	var sweeping time.Time
	sweep := func() {
		if sweeping.IsZero() {
			sweeping = time.Now()
		}
		l.killAll()
	}
	for {
		select {
		case r, ok := <-reaps:
			if !ok {
				return status, nil // nothing of the command is left
			}
			if r.pid == main {
				status = r.ws
				sweep()
			} else if !sweeping.IsZero() {
				l.killAll() // the orphans of the one just reaped
			}
		case <-stop:
			sweep()
		case <-tick.C:
			switch {
			case !sweeping.IsZero() && time.Since(sweeping) > sweepFor:
				fmt.Fprintf(os.Stderr, "\n%s%s\n", helperPrefix, notEnded)
				return status, nil
			case !sweeping.IsZero():
				l.killAll()
			default:
				if why := l.over(); why != "" {
					fmt.Fprintf(os.Stderr, "\n%s%s%s\n", helperPrefix, stoppedPrefix, why)
					sweep()
				}
			}
		}
	}
}

// reapAll waits for every child until none is left, then closes out.
func reapAll(out chan<- reaped) {
	defer close(out)
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return
		}
		out <- reaped{pid: pid, ws: ws}
	}
}

// start starts the command in a process group of its own with standard
// input from /dev/null, retrying for a moment while the processes of a
// command just ended still count against the process limit.
func (l *launcher) start() (int, error) {
	null, err := os.Open(os.DevNull)
	if err != nil {
		return 0, err
	}
	defer null.Close()
	attr := &syscall.ProcAttr{Dir: l.job.Dir, Env: l.job.Env, Files: []uintptr{null.Fd(), 1, 2},
		Sys: &syscall.SysProcAttr{Setpgid: true}}
	args := l.job.withLimits()
	for wait := 10 * time.Millisecond; ; wait *= 2 {
		pid, err := syscall.ForkExec(args[0], args, attr)
		if err == nil {
			return pid, nil
		}
		if !errors.Is(err, syscall.EAGAIN) || wait > 4*time.Second {
			return 0, fmt.Errorf("start the command: %w", err)
		}
		time.Sleep(wait)
	}
}

// killAll kills every process the command left. As their reaper the
// launcher inherits each orphan, so killing its children until none is
// left ends the whole tree, however it was detached. In a PID namespace of
// its own one signal reaches them all.
func (l *launcher) killAll() {
	if l.self == 1 {
		syscall.Kill(-1, syscall.SIGKILL)
		return
	}
	for _, pid := range children() {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// children lists the launcher's children, as /proc tells.
func children() []int {
	var out []int
	tasks, _ := os.ReadDir("/proc/self/task")
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/children")
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	if len(tasks) > 0 && hasChildrenFile() {
		return out
	}
	// Without the children files (CONFIG_PROC_CHILDREN), scan every process.
	out = out[:0]
	self := hostPid()
	for _, p := range procTree() {
		if p.ppid == self {
			out = append(out, p.pid)
		}
	}
	return out
}

// hasChildrenFile reports whether the kernel lists a task's children.
func hasChildrenFile() bool {
	_, err := os.Stat("/proc/self/task/" + strconv.Itoa(unix.Gettid()) + "/children")
	return err == nil
}

// proc is what the launcher reads of a process.
type proc struct{ pid, ppid int }

// procTree lists every process /proc shows, with its parent.
func procTree() []proc {
	dirs, _ := os.ReadDir("/proc")
	var out []proc
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + d.Name() + "/stat")
		if err != nil {
			continue
		}
		// The name in parentheses may hold anything; the fields follow
		// the last parenthesis.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		out = append(out, proc{pid: pid, ppid: ppid})
	}
	return out
}

// over says which limit the command as a whole has passed, if any: the
// memory its processes hold, their number, or the bytes they wrote to
// files. The kernel's own limits bind each process; these bind their sum,
// checked every watchEvery.
func (l *launcher) over() string {
	j := l.job
	if j.Memory <= 0 && j.Processes <= 0 && j.Written <= 0 {
		return ""
	}
	tree := descendants(procTree(), l.host)
	if j.Processes > 0 && len(tree) > j.Processes {
		return fmt.Sprintf("it ran more than %d processes at once (tools.exec.limits.processes)", j.Processes)
	}
	var memory, written int64
	if j.Written > 0 {
		written = ioWritten(l.host) // includes the children it reaped
	}
	for _, pid := range tree {
		if j.Memory > 0 {
			memory += residentBytes(pid)
		}
		if j.Written > 0 {
			written += ioWritten(pid)
		}
	}
	switch {
	case j.Memory > 0 && memory > j.Memory:
		return fmt.Sprintf("its processes held more than %s of memory together (tools.exec.limits.memory)", formatSize(j.Memory))
	case j.Written > 0 && written > j.Written:
		return fmt.Sprintf("it wrote more than %s to files (tools.exec.limits.disk_written)", formatSize(j.Written))
	}
	return ""
}

// descendants lists the processes below root in tree.
func descendants(tree []proc, root int) []int {
	kids := map[int][]int{}
	for _, p := range tree {
		kids[p.ppid] = append(kids[p.ppid], p.pid)
	}
	var out []int
	next := kids[root]
	for len(next) > 0 {
		pid := next[0]
		next = next[1:]
		out = append(out, pid)
		next = append(next, kids[pid]...)
	}
	return out
}

// residentBytes is the private memory a process holds: its anonymous and
// shared-memory pages (the program's file pages are shared with others).
func residentBytes(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	var total int64
	for _, line := range strings.Split(string(b), "\n") {
		name, rest, ok := strings.Cut(line, ":")
		if !ok || (name != "RssAnon" && name != "RssShmem") {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 2 && f[1] == "kB" {
			n, _ := strconv.ParseInt(f[0], 10, 64)
			total += n << 10
		}
	}
	return total
}

// ioWritten is what a process (and the children it reaped) had written to
// files: bytes that reached the page cache or the disk, less those of
// files truncated or removed before they were written back.
func ioWritten(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/io")
	if err != nil {
		return 0
	}
	var written, cancelled int64
	for _, line := range strings.Split(string(b), "\n") {
		name, rest, _ := strings.Cut(line, ":")
		n, _ := strconv.ParseInt(strings.TrimSpace(rest), 10, 64)
		switch name {
		case "write_bytes":
			written = n
		case "cancelled_write_bytes":
			cancelled = n
		}
	}
	return max(written-cancelled, 0)
}
