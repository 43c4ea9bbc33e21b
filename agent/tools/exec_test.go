package tools

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/safety"
)

var allow = safety.Verdict{Action: safety.Allow}

// newExec returns an exec tool over a fresh workspace that allows every
// command, with a small environment.
func newExec(t *testing.T) *Exec {
	t.Helper()
	return &Exec{
		Workspace: t.TempDir(),
		Restrict:  true,
		Policy:    &fakePolicy{verdict: allow},
		Env:       []string{"PATH=" + os.Getenv("PATH")},
	}
}

// runExec runs e with an audit record and returns both.
func runExec(t *testing.T, e *Exec, args map[string]string) (string, *agent.ToolEvent, error) {
	t.Helper()
	ev := &agent.ToolEvent{}
	raw := fmt.Sprintf(`{"command": %q}`, args["command"])
	if wd, ok := args["working_dir"]; ok {
		raw = fmt.Sprintf(`{"command": %q, "working_dir": %q}`, args["command"], wd)
	}
	out, err := e.Run(agent.WithEvent(t.Context(), ev), []byte(raw))
	return out, ev, err
}

func TestExecOutputAndExitCode(t *testing.T) {
	tests := []struct {
		name    string
		command string
		want    string
		code    int
	}{
		{"stdout", "echo hello", "hello\nexit code: 0", 0},
		{"stdout and stderr", "echo out; echo err >&2; exit 3", "out\nerr\nexit code: 3", 3},
		{"no output", "true", "(no output)\nexit code: 0", 0},
		{"no final newline", "printf abc", "abc\nexit code: 0", 0},
		{"command not found", "no-such-command-xyz 2>/dev/null", "(no output)\nexit code: 127", 127},
		{"no terminal input", "cat", "(no output)\nexit code: 0", 0},
		{"killed by a signal", "echo bye; kill -9 $$", "bye\nkilled by signal: killed\nexit code: -1", -1},
	}
	e := newExec(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ev, err := runExec(t, e, map[string]string{"command": tt.command})
			if err != nil {
				t.Fatalf("exec(%q): %v", tt.command, err)
			}
			if got != tt.want {
				t.Errorf("exec(%q) = %q, want %q", tt.command, got, tt.want)
			}
			if ev.ExitCode != tt.code || ev.Verdict != "allow" {
				t.Errorf("event exit code %d, verdict %q; want %d, allow", ev.ExitCode, ev.Verdict, tt.code)
			}
		})
	}
}

func TestExecWorkingDir(t *testing.T) {
	e := newExec(t)
	mkdir(t, filepath.Join(e.Workspace, "sub"))
	writeFile(t, filepath.Join(e.Workspace, "file"), "")
	realWS, err := filepath.EvalSymlinks(e.Workspace)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, dir, want, wantErr string
	}{
		{name: "default", want: realWS + "\nexit code: 0"},
		{name: "relative", dir: "sub", want: filepath.Join(realWS, "sub") + "\nexit code: 0"},
		{name: "outside", dir: "..", wantErr: "commands are restricted to the workspace"},
		{name: "absolute outside", dir: "/", wantErr: "commands are restricted to the workspace"},
		{name: "missing", dir: "nope", wantErr: "working_dir: nope does not exist"},
		{name: "file", dir: "file", wantErr: "working_dir file is not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := map[string]string{"command": "pwd -P"}
			if tt.dir != "" {
				args["working_dir"] = tt.dir
			}
			got, _, err := runExec(t, e, args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("exec in %q = %q, %v; want error containing %q", tt.dir, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("exec in %q = %q, %v; want %q", tt.dir, got, err, tt.want)
			}
		})
	}
}

func TestExecDeniedNeverRuns(t *testing.T) {
	e := newExec(t)
	policy := &fakePolicy{verdict: safety.Verdict{Action: safety.Deny, Category: "destroy", Reason: "deletes everything"}}
	e.Policy = policy
	got, ev, err := runExec(t, e, map[string]string{"command": "touch canary"})
	want := "command refused by safety policy: destroy: deletes everything"
	if err == nil || err.Error() != want {
		t.Fatalf("exec = %q, %v; want error %q", got, err, want)
	}
	if _, err := os.Stat(filepath.Join(e.Workspace, "canary")); err == nil {
		t.Fatal("the refused command ran: the canary file exists")
	}
	if len(policy.seen) != 1 || policy.seen[0] != "touch canary" {
		t.Errorf("policy judged %q, want the command once", policy.seen)
	}
	wantEv := agent.ToolEvent{Verdict: "deny", Category: "destroy", Reason: "deletes everything", ExitCode: -1}
	if diff := cmp.Diff(wantEv, *ev); diff != "" {
		t.Errorf("event (-want +got):\n%s", diff)
	}
}

func TestExecWithSafetyPolicy(t *testing.T) {
	e := newExec(t)
	policy, err := safety.NewPolicy(safety.PolicyConfig{Workspace: e.Workspace, Deny: []string{"touch"}})
	if err != nil {
		t.Fatal(err)
	}
	e.Policy = policy
	got, ev, err := runExec(t, e, map[string]string{"command": "echo ok && touch canary"})
	if err == nil || !strings.HasPrefix(err.Error(), "command refused by safety policy: ") {
		t.Fatalf("exec = %q, %v; want a refusal by the deny rule", got, err)
	}
	if _, err := os.Stat(filepath.Join(e.Workspace, "canary")); err == nil {
		t.Fatal("the refused command ran: the canary file exists")
	}
	if ev.Verdict != "deny" || ev.Reason == "" {
		t.Errorf("event = %+v, want a denial with a reason", *ev)
	}
	got, _, err = runExec(t, e, map[string]string{"command": "echo ok"})
	if err != nil || got != "ok\nexit code: 0" {
		t.Errorf("exec(echo ok) = %q, %v; want it allowed", got, err)
	}
}

func TestExecWithoutPolicyRefuses(t *testing.T) {
	e := newExec(t)
	e.Policy = nil
	_, _, err := runExec(t, e, map[string]string{"command": "touch canary"})
	if err == nil || !strings.Contains(err.Error(), "command refused by safety policy: policy: no safety policy is configured") {
		t.Fatalf("error = %v, want a refusal", err)
	}
	if _, err := os.Stat(filepath.Join(e.Workspace, "canary")); err == nil {
		t.Fatal("the command ran without a policy")
	}
}

// fakeApprover answers approval requests as told; with wait it waits for
// the deadline instead.
type fakeApprover struct {
	approved bool
	who      string
	err      error
	wait     bool

	mu    sync.Mutex
	asked []string
}

func (a *fakeApprover) Approve(ctx context.Context, command, reason string) (bool, string, error) {
	a.mu.Lock()
	a.asked = append(a.asked, command+" | "+reason)
	a.mu.Unlock()
	if a.wait {
		<-ctx.Done()
		return false, "", ctx.Err()
	}
	return a.approved, a.who, a.err
}

func TestExecAsk(t *testing.T) {
	const refused = "command refused by safety policy: package_install: installs globally; "
	tests := []struct {
		name     string
		approval string
		approver *fakeApprover
		ran      bool
		wantErr  string
		verdict  string
		who      string
		outcome  string // ToolEvent.Approval
	}{
		{name: "approval unset", approval: "", wantErr: refused + "it needs the owner's approval, which is not enabled (tools.exec.approval)", verdict: "deny"},
		{name: "approval deny", approval: ApprovalDeny, wantErr: refused + "it needs the owner's approval, which is not enabled (tools.exec.approval)", verdict: "deny"},
		{name: "approval allow", approval: ApprovalAllow, ran: true, verdict: "ask", who: "config (tools.exec.approval: allow)", outcome: agent.ApprovalApproved},
		{name: "owner without approver", approval: ApprovalOwner, wantErr: refused + "it needs the owner's approval, but no approver is configured", verdict: "deny"},
		{name: "owner approves", approval: ApprovalOwner, approver: &fakeApprover{approved: true, who: "telegram:42"}, ran: true, verdict: "ask", who: "telegram:42", outcome: agent.ApprovalApproved},
		{name: "owner denies", approval: ApprovalOwner, approver: &fakeApprover{approved: false, who: "telegram:42"}, wantErr: refused + "the owner denied it", verdict: "deny", who: "telegram:42", outcome: agent.ApprovalDenied},
		{name: "owner silent", approval: ApprovalOwner, approver: &fakeApprover{wait: true}, wantErr: refused + "the owner did not answer within 50ms, which counts as a denial", verdict: "deny", outcome: agent.ApprovalTimedOut},
		{name: "approver fails", approval: ApprovalOwner, approver: &fakeApprover{err: errors.New("telegram unreachable")}, wantErr: refused + "asking the owner failed (telegram unreachable), which counts as a denial", verdict: "deny", outcome: agent.ApprovalFailed},
		{name: "approved with an error", approval: ApprovalOwner, approver: &fakeApprover{approved: true, err: errors.New("odd")}, wantErr: "which counts as a denial", verdict: "deny", outcome: agent.ApprovalFailed},
		{name: "unknown approval setting", approval: "sometimes", wantErr: refused + "it needs the owner's approval", verdict: "deny"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newExec(t)
			e.Policy = &fakePolicy{verdict: safety.Verdict{Action: safety.Ask, Category: "package_install", Reason: "installs globally"}}
			e.Approval = tt.approval
			e.ApprovalTimeout = 50 * time.Millisecond
			if tt.approver != nil {
				e.Approver = tt.approver
			}
			got, ev, err := runExec(t, e, map[string]string{"command": "touch canary"})
			_, statErr := os.Stat(filepath.Join(e.Workspace, "canary"))
			if ran := statErr == nil; ran != tt.ran {
				t.Errorf("command ran: %v, want %v", ran, tt.ran)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("exec = %q, %v; want error containing %q", got, err, tt.wantErr)
				}
			} else if err != nil || got != "(no output)\nexit code: 0" {
				t.Errorf("exec = %q, %v; want a clean run", got, err)
			}
			if ev.Verdict != tt.verdict || ev.Approver != tt.who || ev.Category != "package_install" {
				t.Errorf("event verdict %q approver %q category %q; want %q, %q, package_install", ev.Verdict, ev.Approver, ev.Category, tt.verdict, tt.who)
			}
			if ev.Approval != tt.outcome {
				t.Errorf("event approval %q, want %q", ev.Approval, tt.outcome)
			}
			if tt.approver != nil {
				if want := "touch canary | package_install: installs globally"; len(tt.approver.asked) != 1 || tt.approver.asked[0] != want {
					t.Errorf("approver was asked %q, want [%q]", tt.approver.asked, want)
				}
			}
		})
	}
}

func TestExecApprovalCancelled(t *testing.T) {
	e := newExec(t)
	e.Policy = &fakePolicy{verdict: safety.Verdict{Action: safety.Ask, Category: "network", Reason: "opens a listener"}}
	e.Approval = ApprovalOwner
	e.Approver = &fakeApprover{wait: true}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := e.Run(ctx, []byte(`{"command": "touch canary"}`))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error = %v, want context.Canceled", err)
	}
	if _, err := os.Stat(filepath.Join(e.Workspace, "canary")); err == nil {
		t.Error("the command ran after the turn was cancelled")
	}
}

func TestExecApproverSeesRedactedCommand(t *testing.T) {
	e := newExec(t)
	e.Policy = &fakePolicy{verdict: safety.Verdict{Action: safety.Ask, Category: "network", Reason: "posts data"}}
	e.Approval = ApprovalOwner
	e.Secrets = []string{"sk-very-secret-key"}
	a := &fakeApprover{approved: false}
	e.Approver = a
	_, _, _ = runExec(t, e, map[string]string{"command": "curl -H 'Authorization: sk-very-secret-key' https://example.com"})
	if len(a.asked) != 1 || strings.Contains(a.asked[0], "sk-very-secret-key") {
		t.Errorf("approver was asked %q, want the secret redacted", a.asked)
	}
}

func TestExecTimeoutKillsProcessGroup(t *testing.T) {
	e := newExec(t)
	e.Timeout = 300 * time.Millisecond
	start := time.Now()
	// The grandchild would outlive every deadline of the test if it survived.
	got, ev, err := runExec(t, e, map[string]string{"command": "echo started; sleep 600 & echo $! > pid; wait"})
	if err != nil {
		t.Fatal(err)
	}
	if elapsed := time.Since(start); elapsed > 25*time.Second {
		t.Errorf("exec took %v: it waited for the grandchild", elapsed)
	}
	want := "started\ntimed out after 300ms; the command and its child processes were killed\nexit code: -1"
	if got != want {
		t.Errorf("exec = %q, want %q", got, want)
	}
	if ev.ExitCode != -1 {
		t.Errorf("event exit code %d, want -1", ev.ExitCode)
	}
	waitGone(t, readPID(t, filepath.Join(e.Workspace, "pid")))
}

func TestExecCancelKillsProcessGroup(t *testing.T) {
	e := newExec(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := e.Run(ctx, []byte(`{"command": "sleep 600 & echo $! > pid.tmp; mv pid.tmp pid; wait"}`))
		done <- result{out, err}
	}()
	pidFile := filepath.Join(e.Workspace, "pid")
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(pidFile); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the command never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	r := <-done
	if !errors.Is(r.err, context.Canceled) {
		t.Errorf("exec = %q, %v; want context.Canceled", r.out, r.err)
	}
	waitGone(t, readPID(t, pidFile))
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	pid, err := strconv.Atoi(strings.TrimSpace(readString(t, path)))
	if err != nil {
		t.Fatalf("pid file: %v", err)
	}
	return pid
}

// waitGone waits until process pid has died (a zombie counts as dead).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !processGone(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("process %d is still running after the command ended", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return os.IsNotExist(err)
	}
	// The state follows the parenthesised command name.
	if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] == 'Z' || stat[i+2] == 'X'
	}
	return false
}

func TestExecOutputCap(t *testing.T) {
	e := newExec(t)
	e.MaxOutput = 100
	got, _, err := runExec(t, e, map[string]string{"command": "seq 1 100000"})
	if err != nil {
		t.Fatal(err)
	}
	var full strings.Builder
	for i := 1; i <= 100000; i++ {
		fmt.Fprintf(&full, "%d\n", i)
	}
	all := full.String()
	want := fmt.Sprintf("%s\n… [%d characters cut] …\n%s\nexit code: 0", all[:50], len(all)-100, all[len(all)-50:])
	// The tail ends with the output's own newline.
	want = strings.Replace(want, "\n\nexit code", "\nexit code", 1)
	if got != want {
		t.Errorf("exec(seq) =\n%q\nwant\n%q", got, want)
	}
}

func TestExecOutputCapSmall(t *testing.T) {
	e := newExec(t)
	e.MaxOutput = 10
	got, _, err := runExec(t, e, map[string]string{"command": "printf 0123456789abcdefghij"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "01234\n… [10 characters cut] …\nfghij\nexit code: 0"; got != want {
		t.Errorf("exec = %q, want %q", got, want)
	}
}

func TestExecEnvironment(t *testing.T) {
	e := newExec(t)
	e.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"PLAIN=visible",
		"FOO_TOKEN=tok-abcdef",
		"AWS_SECRET=aws-abcdef",
		"OPENAI_API_KEY=sk-abcdef",
		"DB_PASSWORD=pw-abcdef",
		"CARRIER=prefix-configured-secret-suffix",
	}
	e.Secrets = []string{"configured-secret"}
	e.PassEnv = []string{"PLAIN", "CARRIER"}
	got, _, err := runExec(t, e, map[string]string{"command": "env"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, "PLAIN=visible") {
		t.Errorf("env lost a plain variable:\n%s", got)
	}
	for _, leak := range []string{"FOO_TOKEN", "tok-abcdef", "AWS_SECRET", "OPENAI_API_KEY", "DB_PASSWORD", "CARRIER", "configured-secret"} {
		if strings.Contains(got, leak) {
			t.Errorf("the child saw %q:\n%s", leak, got)
		}
	}
}

func TestExecDefaultEnvironment(t *testing.T) {
	t.Setenv("NANOBOT_TEST_TOKEN", "tok-from-parent")
	t.Setenv("NANOBOT_TEST_PLAIN", "plain-from-parent")
	t.Setenv("NANOBOT_TEST_OTHER", "other-from-parent")
	e := newExec(t)
	e.Env = nil
	e.PassEnv = []string{"NANOBOT_TEST_PLAIN"}
	got, _, err := runExec(t, e, map[string]string{"command": "env"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(got, "tok-from-parent") || strings.Contains(got, "other-from-parent") || !strings.Contains(got, "plain-from-parent") {
		t.Errorf("env of the child:\n%s\nwant the listed variable only", got)
	}
}

func TestExecRedactsOutput(t *testing.T) {
	const secret = "sk-live-0123456789abcdef"
	tests := []struct {
		name     string
		redactor *safety.Redactor
		max      int
		content  string
	}{
		{"configured secrets", nil, 0, "key=" + secret + "\n"},
		{"explicit redactor", safety.NewRedactor(secret), 0, "key=" + secret + "\n"},
		// 20 characters are shown on either side; the secret straddles both cuts.
		{"secret across the head cut", nil, 40, strings.Repeat("a", 10) + secret + strings.Repeat("b", 100000)},
		{"secret across the tail cut", nil, 40, strings.Repeat("b", 100000) + secret + strings.Repeat("c", 10)},
		{"secret across the cut of short output", nil, 40, strings.Repeat("a", 10) + secret + strings.Repeat("c", 10)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newExec(t)
			e.Secrets = []string{secret}
			e.Redactor = tt.redactor
			e.MaxOutput = tt.max
			writeFile(t, filepath.Join(e.Workspace, "out.txt"), tt.content)
			got, _, err := runExec(t, e, map[string]string{"command": "cat out.txt"})
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i+4 <= len(secret); i++ {
				if part := secret[i : i+4]; strings.Contains(got, part) {
					t.Fatalf("output shows %q of the secret:\n%q", part, got)
				}
			}
		})
	}
}

func TestExecSpecMentionsLimits(t *testing.T) {
	e := &Exec{Timeout: 90 * time.Second, MaxOutput: 5000}
	if d := e.Spec().Description; !strings.Contains(d, "90s") || !strings.Contains(d, "5000 characters") {
		t.Errorf("description %q does not state the limits", d)
	}
}

func TestFmtDuration(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want string
	}{
		{60 * time.Second, "60s"}, {5 * time.Minute, "5m"}, {90 * time.Second, "90s"},
		{300 * time.Millisecond, "300ms"}, {1500 * time.Millisecond, "1.5s"},
	}
	for _, tt := range tests {
		if got := fmtDuration(tt.in); got != tt.want {
			t.Errorf("fmtDuration(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// The daemon's environment holds credentials under all kinds of names; a
// command sees only the allow-listed variables and the ones the owner names.
func TestExecEnvironmentAllowList(t *testing.T) {
	e := newExec(t)
	e.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=/home/owner",
		"LANG=C.UTF-8",
		"LC_ALL=C.UTF-8",
		"GH_PAT=ghp-leak-1",
		"DATABASE_URL=postgres://u:pw-leak-2@h/db",
		"OPENAI_APIKEY=sk-leak-3",
		"PGPASS=leak-4",
		"SLACK_WEBHOOK=https://hooks.slack.test/leak-5",
		"AWS_SECRET_ACCESS_KEY=leak-6",
		"FOO_TOKEN=leak-7",
		"ZQX_WOMBAT=leak-8",
		"OWNER_LISTED=visible-9",
		"PROVIDER_KEY_COPY=prefix-configured-secret",
	}
	e.Secrets = []string{"configured-secret"}
	e.PassEnv = []string{"OWNER_LISTED", "PROVIDER_KEY_COPY", "FIXED=fixed-10"}
	got, _, err := runExec(t, e, map[string]string{"command": "env"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"PATH=" + os.Getenv("PATH"), "HOME=/home/owner", "LANG=C.UTF-8", "LC_ALL=C.UTF-8", "OWNER_LISTED=visible-9", "FIXED=fixed-10"} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("env lacks %s:\n%s", want, got)
		}
	}
	for _, leak := range []string{"GH_PAT", "DATABASE_URL", "OPENAI_APIKEY", "PGPASS", "SLACK_WEBHOOK", "AWS_SECRET_ACCESS_KEY", "FOO_TOKEN", "ZQX_WOMBAT", "PROVIDER_KEY_COPY", "leak-", "configured-secret"} {
		if strings.Contains(got, leak) {
			t.Errorf("the child saw %q:\n%s", leak, got)
		}
	}
}
