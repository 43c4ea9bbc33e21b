package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/safety"
	"github.com/nanobot-go/nanobot/safety/sandbox"
)

// Defaults of Exec.
const (
	DefaultExecTimeout     = 60 * time.Second
	DefaultMaxOutput       = 10000
	DefaultApprovalTimeout = 5 * time.Minute
)

// Values of Exec.Approval: what happens to a command the policy says to ask
// about.
const (
	ApprovalDeny  = "deny"  // refuse it (the default)
	ApprovalOwner = "owner" // ask the owner through the Approver
	ApprovalAllow = "allow" // run it
)

// waitDelay is how long Wait waits for output after the shell has exited or
// been killed, for children that escaped the process group.
const waitDelay = 2 * time.Second

// CommandChecker judges a shell command before it runs; *safety.Policy is one.
type CommandChecker interface {
	Check(command string) safety.Verdict
}

// Sandbox runs a command confined by the kernel and tells from its output
// what it refused; *sandbox.Sandbox is one.
type Sandbox interface {
	Run(ctx context.Context, job sandbox.Job) (syscall.WaitStatus, error)
	Refusals(output, dir string) []string
}

// Approver asks a person whether a command may run. It returns when they
// answer or ctx ends; silence is not approval.
type Approver interface {
	Approve(ctx context.Context, command, reason string) (approved bool, approver string, err error)
}

// Exec is the exec tool: a shell command run with sh -c after the safety
// policy has judged it.
type Exec struct {
	// Workspace is where commands run by default.
	Workspace string
	// Restrict confines working_dir to the workspace.
	Restrict bool
	// Timeout kills the command's whole process group; DefaultExecTimeout
	// when zero.
	Timeout time.Duration
	// MaxOutput is how many characters of stdout and stderr are kept, head
	// and tail; DefaultMaxOutput when zero.
	MaxOutput int
	// Policy judges every command. Without one nothing runs.
	Policy CommandChecker
	// Approver is asked about commands the policy says to ask about when
	// Approval is ApprovalOwner.
	Approver Approver
	// Approval is ApprovalDeny (also when empty), ApprovalOwner or
	// ApprovalAllow.
	Approval string
	// ApprovalTimeout bounds the wait for the owner; DefaultApprovalTimeout
	// when zero.
	ApprovalTimeout time.Duration
	// Secrets never reach the child's environment or the model.
	Secrets []string
	// Redactor removes secrets from the output; when nil, one is built from
	// Secrets.
	Redactor *safety.Redactor
	// Env is the environment the child's is taken from; os.Environ() when
	// nil. A command gets only safety.BaseEnv and the variables of PassEnv.
	Env []string
	// PassEnv names the variables of Env passed on besides safety.BaseEnv;
	// an entry "NAME=value" sets NAME to value. A variable holding one of
	// Secrets is never passed (tools.exec.env).
	PassEnv []string
	// Sandbox, when set, runs every command, approved ones too: the filter
	// decides what may start, the sandbox what it can reach.
	Sandbox Sandbox
	// Confinement tells the model what the sandbox allows, in the tool's
	// description.
	Confinement string
}

var (
	_ agent.Tool     = (*Exec)(nil)
	_ CommandChecker = (*safety.Policy)(nil)
	_ Sandbox        = (*sandbox.Sandbox)(nil)
)

type execParams struct {
	Command    string `json:"command"`
	WorkingDir string `json:"working_dir"`
}

// Spec describes exec.
func (e *Exec) Spec() agent.ToolSpec {
	return agent.ToolSpec{
		Name: "exec",
		Description: fmt.Sprintf("Run a command with sh -c in the workspace; returns its output (stdout and stderr) and exit code. "+
			"Dangerous commands are refused. At most %s; output cut to %d characters (head and tail). "+
			"No terminal or stdin: use non-interactive flags.%s", fmtDuration(e.timeout()), e.maxOutput(), e.confinement()),
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "command": {"type": "string"},
    "working_dir": {"type": "string", "description": "Default: the workspace."}
  },
  "required": ["command"],
  "additionalProperties": false
}`),
	}
}

// Run judges the command, asks for approval when the policy says so, runs it
// and returns its output and exit code. A non-zero exit code is a normal
// result; a refusal is an error.
func (e *Exec) Run(ctx context.Context, args json.RawMessage) (string, error) {
	var p execParams
	if err := decodeArgs(args, &p); err != nil {
		return "", err
	}
	if strings.TrimSpace(p.Command) == "" {
		return "", errors.New(`"command" is required`)
	}
	ev := agent.EventFrom(ctx)
	if ev == nil {
		ev = &agent.ToolEvent{} // nobody records this call
	}
	ev.ExitCode = -1 // not run, until it is
	if err := e.authorize(ctx, p.Command, ev); err != nil {
		return "", err
	}
	dir, err := e.workDir(p.WorkingDir)
	if err != nil {
		return "", err
	}
	return e.run(ctx, p.Command, dir, ev)
}

// authorize applies the policy and, for "ask", the approval setting. It
// records the outcome in ev: Verdict is "deny" for everything refused, "ask"
// for an asked-about command that was approved, "allow" otherwise.
func (e *Exec) authorize(ctx context.Context, command string, ev *agent.ToolEvent) error {
	v := safety.Verdict{Action: safety.Deny, Category: "policy", Reason: "no safety policy is configured"}
	if e.Policy != nil {
		v = e.Policy.Check(command)
	}
	ev.Verdict, ev.Category, ev.Reason = string(v.Action), v.Category, v.Reason
	switch v.Action {
	case safety.Allow:
		return nil
	case safety.Ask:
		return e.approve(ctx, command, v, ev)
	default:
		ev.Verdict = string(safety.Deny)
		return fmt.Errorf("command refused by safety policy: %s", describe(v))
	}
}

// approve settles a command the policy asks about.
func (e *Exec) approve(ctx context.Context, command string, v safety.Verdict, ev *agent.ToolEvent) error {
	refuse := func(why string) error {
		ev.Verdict = string(safety.Deny)
		ev.Reason = v.Reason + "; " + why
		return fmt.Errorf("command refused by safety policy: %s; %s", describe(v), why)
	}
	switch e.Approval {
	case ApprovalAllow:
		ev.Approver = "config (tools.exec.approval: allow)"
		ev.Approval = agent.ApprovalApproved
		return nil
	case ApprovalOwner:
	default:
		return refuse("it needs the owner's approval, which is not enabled (tools.exec.approval)")
	}
	if e.Approver == nil {
		return refuse("it needs the owner's approval, but no approver is configured")
	}
	timeout := e.ApprovalTimeout
	if timeout <= 0 {
		timeout = DefaultApprovalTimeout
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	approved, who, err := e.Approver.Approve(actx, e.redact(command), describe(v))
	expired := actx.Err() != nil
	cancel()
	ev.Approver = who
	switch {
	case err == nil && approved:
		ev.Approval = agent.ApprovalApproved
		return nil
	case ctx.Err() != nil:
		ev.Verdict, ev.Approval = string(safety.Deny), agent.ApprovalFailed
		return fmt.Errorf("stopped while waiting for the owner's approval: %w", ctx.Err())
	case expired:
		ev.Approval = agent.ApprovalTimedOut
		return refuse(fmt.Sprintf("the owner did not answer within %s, which counts as a denial", fmtDuration(timeout)))
	case err != nil:
		ev.Approval = agent.ApprovalFailed
		return refuse(fmt.Sprintf("asking the owner failed (%v), which counts as a denial", err))
	default:
		ev.Approval = agent.ApprovalDenied
		return refuse("the owner denied it")
	}
}

// describe renders a verdict as "category: reason".
func describe(v safety.Verdict) string {
	reason := v.Reason
	if reason == "" {
		reason = "no reason given"
	}
	if v.Category == "" {
		return reason
	}
	return v.Category + ": " + reason
}

// workDir resolves working_dir against the workspace.
func (e *Exec) workDir(wd string) (string, error) {
	ws, err := filepath.Abs(e.Workspace)
	if err != nil {
		return "", fmt.Errorf("workspace: %w", err)
	}
	dir := ws
	if strings.TrimSpace(wd) != "" {
		dir = wd
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(ws, dir)
		}
		dir = filepath.Clean(dir)
		if e.Restrict {
			confined, err := safety.Confine(ws, wd, nil)
			if err != nil {
				return "", fmt.Errorf("working_dir: %w (commands are restricted to the workspace %s)", err, ws)
			}
			if !within(realPath(ws), realPath(confined)) {
				return "", fmt.Errorf("working_dir %s is outside the workspace %s", wd, ws)
			}
			dir = confined
		}
	} else {
		wd = "the workspace"
	}
	fi, err := os.Stat(dir)
	switch {
	case err != nil:
		return "", fmt.Errorf("working_dir: %w", fileError(wd, err))
	case !fi.IsDir():
		return "", fmt.Errorf("working_dir %s is not a directory", wd)
	}
	return dir, nil
}

func (e *Exec) confinement() string {
	if e.Confinement == "" {
		return ""
	}
	return " " + e.Confinement
}

// run runs the command and renders its result.
func (e *Exec) run(ctx context.Context, command, dir string, ev *agent.ToolEvent) (string, error) {
	timeout := e.timeout()
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	limit := e.maxOutput()
	// Room for limit/2 characters of up to 4 bytes each on either side, and
	// a margin for secrets cut at the edges.
	out := newHeadTail(2*limit+256, 2*limit+256)
	env := e.Env
	if env == nil {
		env = os.Environ()
	}
	env = safety.CommandEnv(env, e.PassEnv, e.Secrets)
	var ws syscall.WaitStatus
	var err error
	if e.Sandbox != nil {
		ws, err = e.Sandbox.Run(runCtx, sandbox.Job{Args: []string{shell(), "-c", command}, Dir: dir, Env: env, Output: out})
		if err != nil {
			return "", fmt.Errorf("run the command in the sandbox: %w", err)
		}
	} else if ws, err = runPlain(runCtx, command, dir, env, out); err != nil {
		return "", err
	}
	ev.ExitCode = ws.ExitStatus()
	if ctx.Err() != nil {
		return "", fmt.Errorf("command interrupted: %w", ctx.Err())
	}
	timedOut := runCtx.Err() != nil && !ws.Exited()

	var sb strings.Builder
	text := out.render(limit, e.redact, e.Secrets)
	if text == "" {
		sb.WriteString("(no output)\n")
	} else {
		sb.WriteString(text)
		if !strings.HasSuffix(text, "\n") {
			sb.WriteByte('\n')
		}
	}
	if timedOut {
		fmt.Fprintf(&sb, "timed out after %s; the command and its child processes were killed\n", fmtDuration(timeout))
	} else if ws.Signaled() {
		fmt.Fprintf(&sb, "killed by signal: %v\n", ws.Signal())
	}
	fmt.Fprintf(&sb, "exit code: %d", ev.ExitCode)
	if e.Sandbox != nil {
		if notes := e.Sandbox.Refusals(sb.String(), dir); len(notes) > 0 {
			// Never a success: the model is told what the kernel refused.
			ev.Verdict, ev.Category, ev.Reason = string(safety.Deny), "sandbox", strings.Join(notes, "; ")
			return "", fmt.Errorf("%s\n%s", strings.Join(notes, "\n"), sb.String())
		}
	}
	return sb.String(), nil
}

// runPlain runs the command without a sandbox, in a process group of its
// own so that a timeout kills what it started too.
func runPlain(ctx context.Context, command, dir string, env []string, out io.Writer) (syscall.WaitStatus, error) {
	cmd := exec.CommandContext(ctx, shell(), "-c", command)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return killGroup(cmd.Process.Pid) }
	cmd.WaitDelay = waitDelay
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start the command: %w", err)
	}
	// A non-zero exit, a kill, or output still held open by a child that
	// escaped the group all leave a ProcessState: they are results.
	err := cmd.Wait()
	if cmd.ProcessState == nil {
		return 0, fmt.Errorf("run the command: %w", err)
	}
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	return ws, nil
}

// killGroup kills the process group led by pid.
func killGroup(pid int) error {
	err := syscall.Kill(-pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return nil // already gone
	}
	return err
}

func (e *Exec) timeout() time.Duration {
	if e.Timeout > 0 {
		return e.Timeout
	}
	return DefaultExecTimeout
}

func (e *Exec) maxOutput() int {
	if e.MaxOutput > 0 {
		return e.MaxOutput
	}
	return DefaultMaxOutput
}

// redact removes the configured secrets from s.
func (e *Exec) redact(s string) string {
	switch {
	case e.Redactor != nil:
		return e.Redactor.Redact(s)
	case len(e.Secrets) > 0:
		return safety.NewRedactor(e.Secrets...).Redact(s)
	default:
		return s
	}
}

// fmtDuration renders d the way a person writes it: 60s, 5m, 300ms.
func fmtDuration(d time.Duration) string {
	switch {
	case d >= 2*time.Minute && d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	case d >= time.Second && d%time.Second == 0:
		return fmt.Sprintf("%ds", d/time.Second)
	default:
		return d.String()
	}
}

// Shell is the shell commands run with.
func Shell() string { return shell() }

// CheckShell says why path cannot run commands: it is missing, not a
// file, or not executable by this process (an image without a shell).
func CheckShell(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("shell: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("shell %s is not a file", path)
	}
	if err := unix.Access(path, unix.X_OK); err != nil {
		return fmt.Errorf("shell %s is not executable: %w", path, err)
	}
	return nil
}

// shell is /bin/sh, or the first sh on PATH where there is none (the
// distroless debug image keeps busybox's sh in /busybox).
func shell() string {
	if _, err := os.Stat("/bin/sh"); err == nil {
		return "/bin/sh"
	}
	if p, err := exec.LookPath("sh"); err == nil {
		return p
	}
	return "/bin/sh"
}
