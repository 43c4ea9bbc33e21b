package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/mcp"
	"github.com/nanobot-go/nanobot/agent/mcp/mcptest"
)

// TestMCPHelperServer is the stdio server the other tests start.
func TestMCPHelperServer(t *testing.T) { mcptest.Serve(t) }

func stdioServer(name string, env ...string) mcp.Server {
	cmd, args := mcptest.Command("TestMCPHelperServer")
	return mcp.Server{Name: name, Command: cmd, Args: args, Env: append(append(os.Environ(), mcptest.ServeEnv+"=1"), env...), Timeout: 10 * time.Second}
}

// harness is a manager whose tool changes the test can wait for.
type harness struct {
	t       *testing.T
	m       *mcp.Manager
	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every change
}

func newHarness(t *testing.T, opts mcp.Options) *harness {
	h := &harness{t: t, changed: make(chan struct{})}
	opts.Changed = func() {
		h.mu.Lock()
		close(h.changed)
		h.changed = make(chan struct{})
		h.mu.Unlock()
	}
	if opts.MinBackoff == 0 {
		opts.MinBackoff = 20 * time.Millisecond
	}
	h.m = mcp.New(opts)
	t.Cleanup(h.m.Close)
	return h
}

// waitFor waits, through the manager's change notices, until cond holds.
func (h *harness) waitFor(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		h.mu.Lock()
		ch := h.changed
		h.mu.Unlock()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			h.t.Fatalf("%s: not within 60 s; status %v", what, h.m.Status())
		}
	}
}

func (h *harness) tool(name string) agent.Tool {
	h.t.Helper()
	var found agent.Tool
	h.waitFor("tool "+name+" offered", func() bool {
		for _, tl := range h.m.Tools() {
			if tl.Spec().Name == name {
				found = tl
				return true
			}
		}
		return false
	})
	return found
}

func run(t *testing.T, tl agent.Tool, args string) (string, error) {
	t.Helper()
	return tl.Run(t.Context(), json.RawMessage(args))
}

func TestStdioServer(t *testing.T) {
	h := newHarness(t, mcp.Options{})
	h.m.Apply([]mcp.Server{stdioServer("test")})
	echo := h.tool("mcp_test_echo")
	spec := echo.Spec()
	if spec.Description != "Echo the text back." || !strings.Contains(string(spec.Parameters), `"text"`) || strings.Contains(string(spec.Parameters), "$schema") {
		t.Errorf("spec = %+v, params %s", spec, spec.Parameters)
	}
	got, err := run(t, echo, `{"text":"hello"}`)
	if err != nil || got != agent.Untrusted("echo: hello") {
		t.Errorf("echo = %q, %v", got, err)
	}
	got, err = run(t, h.tool("mcp_test_picture"), `{}`)
	if err != nil || !strings.Contains(got, "a red dot\n[image: image/png, 12 bytes, not shown]") {
		t.Errorf("picture = %q, %v", got, err)
	}
	if _, err := run(t, h.tool("mcp_test_fail"), `{}`); err == nil || !strings.Contains(err.Error(), "fail failed: the widget is broken") {
		t.Errorf("fail: error %v", err)
	}
	st := h.m.Status()
	if len(st) != 1 || st[0].State != mcp.StateReady || st[0].Tools != 7 || st[0].Transport != "stdio" {
		t.Errorf("status = %+v", st)
	}
}

func TestHTTPServerWithHeaders(t *testing.T) {
	url := mcptest.NewHTTPServer(t, 0, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer test-token" {
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	h := newHarness(t, mcp.Options{})
	h.m.Apply([]mcp.Server{{Name: "web", URL: url, Headers: map[string]string{"Authorization": "Bearer test-token"}, Tools: []string{"add", "nope"}}})
	got, err := run(t, h.tool("mcp_web_add"), `{"a":2,"b":40}`)
	if err != nil || got != agent.Untrusted("42") {
		t.Errorf("add = %q, %v", got, err)
	}
	if n := len(h.m.Tools()); n != 1 {
		t.Errorf("%d tools offered, want only add", n)
	}
	if st := h.m.Status()[0]; st.Transport != "http" || !cmp.Equal(st.Missing, []string{"nope"}) || !strings.Contains(st.String(), "not offered by the server: nope") {
		t.Errorf("status = %+v (%s)", st, st)
	}
}

func TestHTTPToolListChanges(t *testing.T) {
	srv := mcptest.NewServer(0)
	url := mcptest.ServeHTTP(t, srv, nil)
	h := newHarness(t, mcp.Options{})
	h.m.Apply([]mcp.Server{{Name: "web", URL: url}})
	h.tool("mcp_web_echo")

	// The server announces the change on the standalone event stream.
	mcptest.AddTool(srv, "late")
	if got, err := run(t, h.tool("mcp_web_late"), `{}`); err != nil || got != agent.Untrusted("late here") {
		t.Errorf("late = %q, %v", got, err)
	}
	mcptest.RemoveTool(srv, "echo")
	h.waitFor("echo withdrawn", func() bool {
		for _, tl := range h.m.Tools() {
			if tl.Spec().Name == "mcp_web_echo" {
				return false
			}
		}
		return true
	})
	if st := h.m.Status()[0]; st.State != mcp.StateReady || st.Tools != 7 || st.Restarts != 0 {
		t.Errorf("status = %+v, want ready with 7 tools and no restart", st)
	}
}

func TestMissingCommandDoesNotStopOthers(t *testing.T) {
	h := newHarness(t, mcp.Options{MinBackoff: time.Hour})
	h.m.Apply([]mcp.Server{{Name: "ghost", Command: "nanobot-test-no-such-mcp-server"}, stdioServer("test")})
	h.m.WaitStarted(t.Context())
	if _, err := run(t, h.tool("mcp_test_echo"), `{"text":"still here"}`); err != nil {
		t.Fatal(err)
	}
	var ghost mcp.Status
	for _, st := range h.m.Status() {
		if st.Name == "ghost" {
			ghost = st
		}
	}
	if ghost.State != mcp.StateFailed || !strings.Contains(ghost.Err, "executable file not found") || ghost.RetryAt.IsZero() {
		t.Errorf("ghost status = %+v", ghost)
	}
	if s := ghost.String(); !strings.Contains(s, "ghost (stdio): failed: ") || !strings.Contains(s, "retry in") {
		t.Errorf("ghost status line = %q", s)
	}
}

func TestCallTimeout(t *testing.T) {
	h := newHarness(t, mcp.Options{})
	srv := stdioServer("slow")
	srv.Timeout = 200 * time.Millisecond
	h.m.Apply([]mcp.Server{srv})
	_, err := run(t, h.tool("mcp_slow_hang"), `{}`)
	if err == nil || !strings.Contains(err.Error(), "MCP server slow did not answer within 200ms") {
		t.Fatalf("hang: error %v", err)
	}
	// The server still answers other calls.
	if got, err := run(t, h.tool("mcp_slow_echo"), `{"text":"x"}`); err != nil || !strings.Contains(got, "echo: x") {
		t.Errorf("echo after a timeout = %q, %v", got, err)
	}
}

func pidOf(t *testing.T, h *harness, server string) int {
	t.Helper()
	got, err := run(t, h.tool("mcp_"+server+"_pid"), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(got, "\n")
	pid, err := strconv.Atoi(lines[1])
	if err != nil {
		t.Fatalf("pid = %q", got)
	}
	return pid
}

func TestKilledServerIsRestarted(t *testing.T) {
	h := newHarness(t, mcp.Options{})
	h.m.Apply([]mcp.Server{stdioServer("test")})
	pid := pidOf(t, h, "test")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	h.waitFor("restart", func() bool {
		st := h.m.Status()
		return len(st) == 1 && st[0].Restarts >= 1 && st[0].State == mcp.StateReady
	})
	if again := pidOf(t, h, "test"); again == pid {
		t.Errorf("the same process %d answers after being killed", pid)
	}
	if got, err := run(t, h.tool("mcp_test_echo"), `{"text":"back"}`); err != nil || !strings.Contains(got, "echo: back") {
		t.Errorf("echo after the restart = %q, %v", got, err)
	}
}

func TestApplyRestartsOnlyWhatChanged(t *testing.T) {
	h := newHarness(t, mcp.Options{})
	h.m.Apply([]mcp.Server{stdioServer("a"), stdioServer("b")})
	a, b := pidOf(t, h, "a"), pidOf(t, h, "b")

	h.m.Apply([]mcp.Server{stdioServer("a"), stdioServer("b", "CHANGED=1"), stdioServer("c")})
	h.tool("mcp_c_echo")
	h.waitFor("b restarted", func() bool {
		got, err := run(t, h.tool("mcp_b_env"), `{"text":"CHANGED"}`)
		return err == nil && strings.Contains(got, "CHANGED=1")
	})
	if got := pidOf(t, h, "a"); got != a {
		t.Errorf("a was restarted (%d, then %d) though unchanged", a, got)
	}
	if got := pidOf(t, h, "b"); got == b {
		t.Errorf("b was not restarted after its env changed")
	}

	h.m.Apply([]mcp.Server{stdioServer("a")})
	h.waitFor("b and c stopped", func() bool { return len(h.m.Status()) == 1 && len(h.m.Tools()) == 7 })
	if got := pidOf(t, h, "a"); got != a {
		t.Errorf("a was restarted when b and c were removed")
	}
}

// approver answers with a fixed decision and records what it was asked.
type approver struct {
	mu       sync.Mutex
	approve  bool
	err      error
	asked    []string
	whyAsked []string
}

func (a *approver) Approve(_ context.Context, command, reason string) (bool, string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, command)
	a.whyAsked = append(a.whyAsked, reason)
	return a.approve, "telegram:1", a.err
}

func TestApproval(t *testing.T) {
	ap := &approver{}
	h := newHarness(t, mcp.Options{Approver: ap})
	owner := stdioServer("guarded")
	owner.Approval = mcp.ApprovalOwner
	denied := stdioServer("off")
	denied.Approval = mcp.ApprovalDeny
	h.m.Apply([]mcp.Server{owner, denied})
	echo := h.tool("mcp_guarded_echo")

	ev := &agent.ToolEvent{}
	_, err := echo.Run(agent.WithEvent(t.Context(), ev), json.RawMessage(`{"text":"secret plan"}`))
	if err == nil || !strings.Contains(err.Error(), "the owner denied it") {
		t.Fatalf("denied call: error %v", err)
	}
	if len(ap.asked) != 1 || ap.asked[0] != `mcp_guarded_echo {"text":"secret plan"}` || !strings.Contains(ap.whyAsked[0], "MCP server guarded") {
		t.Errorf("asked %q (%q)", ap.asked, ap.whyAsked)
	}
	if ev.Verdict != "deny" || ev.Category != "mcp" || ev.Reason != "server guarded" || ev.Approver != "telegram:1" {
		t.Errorf("audit event = %+v", ev)
	}

	ap.approve = true
	ev = &agent.ToolEvent{}
	got, err := echo.Run(agent.WithEvent(t.Context(), ev), json.RawMessage(`{"text":"ok"}`))
	if err != nil || !strings.Contains(got, "echo: ok") || ev.Verdict != "ask" {
		t.Errorf("approved call = %q, %v, event %+v", got, err, ev)
	}
	ap.err = errors.New("telegram down")
	if _, err := echo.Run(t.Context(), json.RawMessage(`{"text":"x"}`)); err == nil || !strings.Contains(err.Error(), "counts as a denial") {
		t.Errorf("failed approval: error %v", err)
	}

	h.waitFor("both servers up", func() bool {
		st := h.m.Status()
		return len(st) == 2 && st[0].State == mcp.StateReady && st[1].State == mcp.StateReady
	})
	for _, tl := range h.m.Tools() {
		if strings.HasPrefix(tl.Spec().Name, "mcp_off_") {
			t.Errorf("%s offered though its server's approval is deny", tl.Spec().Name)
		}
	}
}

// TestReadOnlyHint: a tool the server marks read-only is one whose calls
// may run in parallel, unless its calls wait for the owner's approval.
func TestReadOnlyHint(t *testing.T) {
	h := newHarness(t, mcp.Options{Approver: &approver{}})
	owner := stdioServer("guarded")
	owner.Approval = mcp.ApprovalOwner
	h.m.Apply([]mcp.Server{stdioServer("test"), owner})
	for name, want := range map[string]bool{"mcp_test_add": true, "mcp_test_echo": false, "mcp_guarded_add": false} {
		ro, ok := h.tool(name).(agent.ReadOnlyTool)
		if !ok || ro.ReadOnly() != want {
			t.Errorf("%s: read-only %v, want %v", name, ok && ro.ReadOnly(), want)
		}
	}
}

func TestCleanSchema(t *testing.T) {
	tests := []struct {
		name string
		in   any
		want string
	}{
		{"nil", nil, `{"properties":{},"type":"object"}`},
		{"no properties", map[string]any{"type": "object"}, `{"properties":{},"type":"object"}`},
		{"drops keywords", json.RawMessage(`{"$schema":"https://json-schema.org/draft/2020-12/schema","$id":"x","type":"object","properties":{"q":{"type":"string","$comment":"c"}},"required":["q","gone"]}`),
			`{"properties":{"q":{"type":"string"}},"required":["q"],"type":"object"}`},
		{"inlines refs", json.RawMessage(`{"type":"object","$defs":{"P":{"type":"object","properties":{"x":{"type":"integer"}}}},"properties":{"p":{"$ref":"#/$defs/P"},"r":{"$ref":"#/elsewhere"}}}`),
			`{"properties":{"p":{"properties":{"x":{"type":"integer"}},"type":"object"},"r":{}},"type":"object"}`},
		{"recursive ref", json.RawMessage(`{"type":"object","definitions":{"N":{"type":"object","properties":{"next":{"$ref":"#/definitions/N"}}}},"properties":{"n":{"$ref":"#/definitions/N"}}}`), ""},
		{"not an object", json.RawMessage(`[1,2]`), `{"properties":{},"type":"object"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(mcp.CleanSchema(tt.in))
			if tt.want == "" {
				if !json.Valid([]byte(got)) || strings.Contains(got, "$ref") || len(got) > 10000 {
					t.Errorf("CleanSchema = %s", got)
				}
				return
			}
			if got != tt.want {
				t.Errorf("CleanSchema = %s, want %s", got, tt.want)
			}
		})
	}
}
