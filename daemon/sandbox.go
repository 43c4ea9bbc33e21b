package daemon

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync"

	"github.com/nanobot-go/nanobot/agent/tools"
	"github.com/nanobot-go/nanobot/config"
	"github.com/nanobot-go/nanobot/safety/sandbox"
)

// sandboxConfig turns the exec settings of cfg into the sandbox's.
func sandboxConfig(cfg *config.Config, abi int) sandbox.Config {
	e := cfg.Tools.Exec
	memory, _ := e.Limits.Memory.Bytes() // validated by Load
	fileSize, _ := e.Limits.FileSize.Bytes()
	written, _ := e.Limits.DiskWritten.Bytes()
	data := filepath.Dir(cfg.Storage.Path)
	return sandbox.Config{
		Mode:      sandbox.Mode(e.Sandbox),
		Workspace: cfg.Agent.Workspace,
		StateDir:  filepath.Join(data, "sandbox"),
		Read:      e.SandboxPaths.Read,
		Write:     e.SandboxPaths.Write,
		Hide:      append(protectedPaths(cfg), data),
		Shell:     tools.Shell(),
		Network:   sandbox.Network(e.Network),
		Limits: sandbox.Limits{Memory: memory, Processes: e.Limits.Processes, FileSize: fileSize, CPUTime: e.Limits.CPUTime,
			DiskWritten: written},
		ABI: abi,
	}
}

// newSandbox builds the sandbox for cfg. Without Landlock in landlock mode
// the error is a *config.Error: the program exits with status 78.
func newSandbox(cfg *config.Config, abi int) (*sandbox.Sandbox, error) {
	sb, err := sandbox.New(sandboxConfig(cfg, abi))
	switch {
	case errors.Is(err, sandbox.ErrUnavailable):
		return nil, &config.Error{File: cfg.Path, Key: "tools.exec.sandbox", Problem: err.Error() +
			": run on a kernel with Landlock enabled (Linux 5.13 or later, lsm=landlock), allow landlock_create_ruleset," +
			" landlock_add_rule and landlock_restrict_self in the container's seccomp profile, or set tools.exec.sandbox: auto"}
	case err != nil:
		return nil, fmt.Errorf("exec sandbox: %w", err)
	}
	return sb, nil
}

// sandboxes keeps the sandbox of the running config: reused while its
// settings stay the same, replaced (and closed once its commands end) when
// a reload changes them.
type sandboxes struct {
	abi int
	mu  sync.Mutex
	cur *sandbox.Sandbox
	cfg sandbox.Config
}

// get returns the sandbox for cfg.
func (s *sandboxes) get(cfg *config.Config) (*sandbox.Sandbox, error) {
	want := sandboxConfig(cfg, s.abi)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur != nil && reflect.DeepEqual(want, s.cfg) {
		return s.cur, nil
	}
	sb, err := newSandbox(cfg, s.abi)
	if err != nil {
		return nil, err
	}
	if s.cur != nil {
		s.cur.Close()
	}
	s.cur, s.cfg = sb, want
	return sb, nil
}

// status describes the current sandbox; ok is false before the first get.
func (s *sandboxes) status() (sandbox.Status, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil {
		return sandbox.Status{}, false
	}
	return s.cur.Status(), true
}

// probe starts the current sandbox's helper, so that its status tells
// what the kernel allows per command; ok is false before the first get.
func (s *sandboxes) probe() (sandbox.Status, bool, error) {
	s.mu.Lock()
	cur := s.cur
	s.mu.Unlock()
	if cur == nil {
		return sandbox.Status{}, false, nil
	}
	st, err := cur.Probe()
	return st, true, err
}

func (s *sandboxes) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur != nil {
		s.cur.Close()
		s.cur = nil
	}
}

// confinement tells the model what the sandbox lets commands do.
func confinement(st sandbox.Status) string {
	if !st.Landlock {
		return ""
	}
	s := "Sandboxed: reads the system's software, writes only the workspace (and a private HOME and TMPDIR);" +
		" other processes and Unix sockets are out of reach; background processes end with the command."
	if st.Network != sandbox.NetworkAny {
		s += " Network: " + map[sandbox.Network]string{sandbox.NetworkWeb: "only ports 80 and 443.", sandbox.NetworkNone: "none."}[st.Network]
	}
	return s
}

// readyDetails are the lines /readyz adds: what the sandbox does.
func (r *Daemon) readyDetails() []string {
	if st, ok := r.boxes.status(); ok {
		return []string{"sandbox: " + st.Summary()}
	}
	return nil
}

// ShellProblem is what `nanobot status` lists as missing when the exec tool
// is on and its shell cannot run (an image without one), or "".
func ShellProblem(cfg *config.Config, shell string) string {
	if !cfg.Tools.Exec.Enabled {
		return ""
	}
	if err := tools.CheckShell(shell); err != nil {
		return fmt.Sprintf("tools.exec: %v: every command of the exec tool fails; run where %s exists (the image's full or slim target) or set tools.exec.enabled: false", err, shell)
	}
	return ""
}

// SandboxLines describe the sandbox of cfg for `nanobot status`.
func SandboxLines(cfg *config.Config, abi int) []string {
	if !cfg.Tools.Exec.Enabled {
		return []string{"sandbox\tno shell tool"}
	}
	var lines []string
	if sb, err := newSandbox(cfg, abi); err != nil {
		lines = append(lines, "sandbox\tNOT AVAILABLE, the gateway will not start: "+err.Error())
	} else {
		// Starting the helper finds out what the kernel allows per command.
		st, err := sb.Probe()
		sb.Close()
		if err != nil {
			lines = append(lines, "sandbox\tNOT AVAILABLE, commands will not run: "+err.Error())
		} else {
			lines = append(lines, "sandbox\t"+st.Summary())
		}
	}
	paths := func(ps []string) string {
		if len(ps) == 0 {
			return "none"
		}
		return strings.Join(ps, ", ")
	}
	p := cfg.Tools.Exec.SandboxPaths
	return append(lines, fmt.Sprintf("sandbox paths\tread: %s; write: %s", paths(p.Read), paths(p.Write)))
}

// announceSandbox says once, at start, what the exec sandbox does, loudly
// when it is not there.
func (r *Daemon) announceSandbox() {
	st, ok, err := r.boxes.probe()
	if ok {
		if err := tools.CheckShell(tools.Shell()); err != nil {
			r.logger.Warn("exec tool has no shell; every shell command fails", "err", err)
		}
	}
	switch {
	case !ok:
	case err != nil:
		r.logger.Warn("exec sandbox cannot start; shell commands will fail until it can", "err", err)
	case st.Mode == sandbox.ModeOff:
		r.logger.Warn("exec sandbox off; shell commands run with the filter alone", "key", "tools.exec.sandbox")
	case !st.Landlock:
		r.logger.Warn("exec sandbox NOT AVAILABLE; shell commands run with the filter alone and resource limits", "reason", st.Reason,
			"per_command", st.Features.String())
	default:
		r.logger.Info("exec sandbox on", "landlock_abi", st.ABI, "network", string(st.Network), "per_command", st.Features.String(),
			"notes", strings.Join(st.Notes, "; "))
	}
}
