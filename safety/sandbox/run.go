package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Job is one command for Run.
type Job struct {
	Args   []string  // the program, by absolute path, and its arguments
	Dir    string    // working directory
	Env    []string  // environment ("NAME=value")
	Output io.Writer // receives standard output and standard error
}

// waitDelay is how long Run waits for output after the command has exited
// or been killed, for children that escaped its process group.
const waitDelay = 2 * time.Second

// startTimeout bounds the start of the helper and its confinement.
const startTimeout = 30 * time.Second

// ErrClosed is returned by Run after Close.
var ErrClosed = errors.New("sandbox closed")

// Run runs job inside the sandbox, in a process group of its own, and
// returns its wait status. When ctx ends the whole group is killed and Run
// returns the status of the killed command; the caller tells a timeout by
// its context. An error means the command could not be run confined (and
// did not run).
func (s *Sandbox) Run(ctx context.Context, job Job) (syscall.WaitStatus, error) {
	if len(job.Args) == 0 {
		return 0, errors.New("sandbox: no command")
	}
	if s.status.Mode == ModeOff {
		return 0, errors.New("sandbox: off (tools.exec.sandbox: off)")
	}
	sp, err := s.acquire()
	if err != nil {
		return 0, err
	}
	defer s.release()
	r, w, err := os.Pipe()
	if err != nil {
		return 0, fmt.Errorf("sandbox: output pipe: %w", err)
	}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		io.Copy(job.Output, r)
	}()
	defer func() {
		select {
		case <-copied:
		case <-time.After(waitDelay):
		}
		r.Close()
		<-copied
	}()
	id, replies := sp.register()
	defer sp.unregister(id)
	err = sp.send(request{ID: id, command: command{Args: job.Args, Dir: job.Dir, Env: s.jobEnv(job.Env),
		Memory: s.limits.Memory, CPU: s.limits.CPUTime, Written: s.limits.DiskWritten}}, w)
	w.Close()
	if err != nil {
		return 0, err
	}
	// The daemon kills nothing itself: it asks the helper, which knows its
	// launchers' pids from starting them, never from anything a command
	// could have written.
	started, cancelled := false, false
	cancel := func() {
		if started && !cancelled {
			cancelled = true
			sp.send(request{ID: id, Cancel: true}, nil)
		}
	}
	ended := ctx.Done()
	for {
		select {
		case rep := <-replies:
			switch {
			case rep.Err != "":
				return 0, fmt.Errorf("sandbox: start the command: %s", rep.Err)
			case rep.Started:
				started = true
				if ctx.Err() != nil {
					cancel()
				}
			case rep.Done:
				return syscall.WaitStatus(rep.Status), nil
			}
		case <-ended:
			ended = nil // then wait for the exit
			cancel()
		case <-sp.done:
			select {
			case rep := <-replies:
				if rep.Done {
					return syscall.WaitStatus(rep.Status), nil
				}
			default:
			}
			return 0, fmt.Errorf("sandbox: the helper stopped: %w", sp.failure())
		}
	}
}

// Probe starts the helper, if it is not running yet, so that Status tells
// what the kernel let it use, and returns that status. A helper it started
// stops again: the first command starts it anew, so that an idle daemon
// keeps no second process.
func (s *Sandbox) Probe() (Status, error) {
	if s.status.Mode == ModeOff {
		return s.Status(), nil
	}
	s.mu.Lock()
	running := s.sp != nil && !s.sp.dead()
	s.mu.Unlock()
	if _, err := s.acquire(); err != nil {
		return s.Status(), err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.jobs--
	if !running && s.jobs == 0 && s.sp != nil {
		s.sp.stop()
		s.sp = nil
	}
	return s.status, nil
}

// Close stops the helper once the commands running have finished; Run
// fails afterwards.
func (s *Sandbox) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.jobs == 0 && s.sp != nil {
		s.sp.stop()
		s.sp = nil
	}
	return nil
}

// acquire returns the running helper, starting it when needed.
func (s *Sandbox) acquire() (*spawner, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	if s.sp != nil && !s.sp.dead() {
		s.jobs++
		return s.sp, nil
	}
	sp, err := s.startHelper()
	if err != nil {
		return nil, err
	}
	f := sp.features
	if s.status.Network == NetworkNone && !f.Seccomp && !f.NetNamespace {
		if s.status.Mode == ModeLandlock {
			sp.stop()
			return nil, fmt.Errorf("%w: tools.exec.network: none needs the seccomp filter or a network namespace, and the kernel allows neither: %s",
				ErrUnavailable, strings.Join(f.Why, "; "))
		}
		s.status.Network = NetworkAny
		s.status.Notes = append(s.status.Notes, "network none cannot be enforced (no seccomp filter, no network namespace), so network access stays open")
	}
	s.sp = sp
	s.status.Features = f
	s.jobs++
	return sp, nil
}

func (s *Sandbox) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.jobs--
	if s.closed && s.jobs == 0 && s.sp != nil {
		s.sp.stop()
		s.sp = nil
	}
}

// request asks the helper to start a command; its output descriptor
// travels with it.
type request struct {
	ID uint64 `json:"id"`
	command
	// Cancel asks the helper to end the command of ID.
	Cancel bool `json:"cancel,omitempty"`
}

// command is one command as the daemon asks for it and the helper hands it
// to a launcher.
type command struct {
	Args    []string      `json:"args,omitempty"`
	Dir     string        `json:"dir,omitempty"`
	Env     []string      `json:"env,omitempty"`
	Memory  int64         `json:"memory,omitempty"`  // per process, and for the command as a whole
	CPU     time.Duration `json:"cpu,omitempty"`     // per process
	Written int64         `json:"written,omitempty"` // for the command as a whole
}

// reply is the helper's answer: ready, a command's pid, its exit, or an
// error.
type reply struct {
	ID       uint64    `json:"id"`
	Ready    bool      `json:"ready,omitempty"`
	Features *Features `json:"features,omitempty"`
	Started  bool      `json:"started,omitempty"`
	Done     bool      `json:"done,omitempty"`
	Status   uint32    `json:"status,omitempty"`
	Err      string    `json:"err,omitempty"`
}

// spawner is the daemon's end of a running helper.
type spawner struct {
	conn *net.UnixConn
	proc *exec.Cmd
	done chan struct{} // closed when the connection ends
	errs *bytes.Buffer // the helper's standard error

	features Features // what the helper could use

	mu      sync.Mutex
	next    uint64
	waiting map[uint64]chan reply
	err     error
}

// startHelper starts the helper and waits until it is confined.
func (s *Sandbox) startHelper() (*spawner, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("sandbox: socket pair: %w", err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "sandbox"), os.NewFile(uintptr(fds[1]), "sandbox-helper")
	defer theirs.Close()
	fc, err := net.FileConn(ours)
	ours.Close()
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	sp := &spawner{conn: fc.(*net.UnixConn), done: make(chan struct{}), errs: &bytes.Buffer{}, waiting: map[uint64]chan reply{}}
	cmd := exec.Command(s.helper)
	cmd.Env = []string{EnvSpec + "=" + s.spec, noExitPause}
	cmd.Dir = "/" // any user can enter it, unlike the workspace at times
	cmd.ExtraFiles = []*os.File{theirs}
	cmd.Stderr = &lockedBuffer{b: sp.errs, mu: &sp.mu}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: s.cred}
	if err := os.MkdirAll(s.home, 0o700); err != nil {
		return nil, fmt.Errorf("sandbox home: %w", err)
	}
	if err := os.MkdirAll(s.tmp, 0o700); err != nil {
		return nil, fmt.Errorf("sandbox temporary directory: %w", err)
	}
	if s.cred != nil {
		os.Chown(s.home, int(s.cred.Uid), int(s.cred.Gid))
		os.Chown(s.tmp, int(s.cred.Uid), int(s.cred.Gid))
	}
	if err := cmd.Start(); err != nil {
		sp.conn.Close()
		return nil, fmt.Errorf("sandbox: start the helper: %w", err)
	}
	sp.proc = cmd
	ready := make(chan reply, 1)
	go sp.read(ready)
	select {
	case rep := <-ready:
		if rep.Err != "" {
			sp.stop()
			return nil, fmt.Errorf("sandbox: could not confine commands: %s", rep.Err)
		}
		if rep.Features != nil {
			sp.features = *rep.Features
		}
	case <-sp.done:
		return nil, fmt.Errorf("sandbox: the helper stopped before it was ready: %w", sp.failure())
	case <-time.After(startTimeout):
		sp.stop()
		return nil, errors.New("sandbox: the helper did not get ready")
	}
	return sp, nil
}

// read dispatches the helper's replies until the connection ends.
func (sp *spawner) read(ready chan<- reply) {
	defer func() {
		if sp.proc != nil {
			sp.proc.Wait()
		}
		close(sp.done)
	}()
	buf := make([]byte, 64<<10)
	first := true
	for {
		n, err := sp.conn.Read(buf)
		if err != nil || n == 0 {
			sp.mu.Lock()
			if sp.err == nil {
				sp.err = errors.New("connection closed")
				if err != nil {
					sp.err = err
				}
			}
			sp.mu.Unlock()
			return
		}
		var rep reply
		if json.Unmarshal(buf[:n], &rep) != nil {
			continue
		}
		if first {
			first = false
			ready <- rep
			continue
		}
		sp.mu.Lock()
		ch := sp.waiting[rep.ID]
		sp.mu.Unlock()
		if ch != nil {
			ch <- rep
		}
	}
}

func (sp *spawner) register() (uint64, chan reply) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.next++
	ch := make(chan reply, 4)
	sp.waiting[sp.next] = ch
	return sp.next, ch
}

func (sp *spawner) unregister(id uint64) {
	sp.mu.Lock()
	delete(sp.waiting, id)
	sp.mu.Unlock()
}

// send writes a request with the command's output descriptor, if any.
func (sp *spawner) send(req request, out *os.File) error {
	b, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	var oob []byte
	if out != nil {
		oob = syscall.UnixRights(int(out.Fd()))
	}
	if _, _, err := sp.conn.WriteMsgUnix(b, oob, nil); err != nil {
		return fmt.Errorf("sandbox: send the command to the helper: %w", err)
	}
	return nil
}

func (sp *spawner) dead() bool {
	select {
	case <-sp.done:
		return true
	default:
		return false
	}
}

// stop ends the helper: closing the connection makes it exit, after
// ending its commands; one that has not within helperGrace is killed.
func (sp *spawner) stop() {
	sp.conn.Close()
	if sp.proc == nil {
		return
	}
	go func() {
		select {
		case <-sp.done:
		case <-time.After(helperGrace):
			sp.proc.Process.Kill()
		}
	}()
}

// helperGrace is how long a helper has to exit once asked.
const helperGrace = 10 * time.Second

// failure says why the helper stopped, with what it wrote on standard
// error.
func (sp *spawner) failure() error {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if msg := bytes.TrimSpace(sp.errs.Bytes()); len(msg) > 0 {
		return fmt.Errorf("%w: %s", sp.err, msg)
	}
	return sp.err
}

// lockedBuffer is a buffer written by os/exec's copying goroutine and read
// by failure.
type lockedBuffer struct {
	b  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() > 4096 {
		return len(p), nil
	}
	return l.b.Write(p)
}
