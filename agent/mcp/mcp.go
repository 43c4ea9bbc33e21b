// Package mcp turns Model Context Protocol servers into agent tools. Each
// configured server is started (stdio) or connected to (streamable HTTP)
// in the background, its tools offered as mcp_<server>_<tool>, and it is
// restarted with backoff when it dies or cannot be reached. A failing
// server never stops the daemon or the other servers.
//
// The MCP client is the package's own and small: JSON-RPC 2.0 over
// newline-delimited stdio or streamable HTTP, revisions 2024-11-05 to
// 2025-11-25, tools only. The official Go SDK builds the test servers of
// mcptest, so the tests check the client against the reference
// implementation; the daemon does not link it.
package mcp

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/agent"
)

// Approval values: what a call to a server's tools needs.
const (
	ApprovalDeny  = "deny"  // its tools are not offered
	ApprovalOwner = "owner" // each call is asked of the owner
	ApprovalAllow = "allow" // calls run
)

// DefaultTimeout bounds a tool call when a server sets none.
const DefaultTimeout = 30 * time.Second

// Server is the configuration of one server.
type Server struct {
	Name string
	// Command, Args and Env start a server spoken to over stdio. Env is
	// the whole environment of the process.
	Command string
	Args    []string
	Env     []string
	// URL and Headers reach a streamable HTTP server.
	URL     string
	Headers map[string]string
	// Timeout bounds each tool call.
	Timeout time.Duration
	// Tools, when set, are the only tools of the server offered.
	Tools    []string
	Approval string
}

func (s Server) transport() string {
	if s.URL != "" {
		return "http"
	}
	return "stdio"
}

// Approver asks the owner whether a call may run; the exec tool's approval
// through Telegram is one.
type Approver interface {
	Approve(ctx context.Context, command, reason string) (approved bool, approver string, err error)
}

// Options configure a Manager.
type Options struct {
	Logger *slog.Logger
	// Approver is asked about calls to servers with approval owner; nil
	// refuses them.
	Approver Approver
	// ApprovalTimeout bounds the wait for the owner (5 minutes when zero).
	ApprovalTimeout time.Duration
	// Changed is called, from a goroutine of the manager, whenever the
	// set of tools changes: a server came up, went away or was stopped.
	Changed func()
	// MinBackoff and MaxBackoff bound the wait between attempts to start a
	// server (1s and 5m when zero).
	MinBackoff, MaxBackoff time.Duration
	// Version is sent to servers as the client's version.
	Version string
}

// Manager runs the configured servers. It is safe for concurrent use.
type Manager struct {
	opts Options

	mu      sync.Mutex
	servers map[string]*server
	closed  bool
	wg      sync.WaitGroup // every server's goroutines
}

// New returns a manager with no servers; Apply starts them.
func New(opts Options) *Manager {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = time.Second
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = 5 * time.Minute
	}
	if opts.ApprovalTimeout <= 0 {
		opts.ApprovalTimeout = 5 * time.Minute
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	return &Manager{opts: opts, servers: map[string]*server{}}
}

// Apply makes the running servers those of cfgs: it starts the new ones,
// stops the removed ones and restarts those whose configuration changed,
// leaving the others alone. It returns at once; servers start in the
// background.
func (m *Manager) Apply(cfgs []Server) {
	want := make(map[string]Server, len(cfgs))
	for _, c := range cfgs {
		if c.Timeout <= 0 {
			c.Timeout = DefaultTimeout
		}
		want[c.Name] = c
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	changed := false
	for name, s := range m.servers {
		if c, ok := want[name]; ok && reflect.DeepEqual(c, s.cfg) {
			continue
		}
		m.opts.Logger.Info("mcp server stopping", "server", name)
		s.stop() // its goroutine ends in the background
		delete(m.servers, name)
		changed = true
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if _, ok := m.servers[name]; ok {
			continue
		}
		s, ctx := newServer(want[name], m)
		m.servers[name] = s
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			s.run(ctx)
		}()
	}
	if changed {
		m.changed()
	}
}

// changed tells the owner of the manager that the tools changed.
func (m *Manager) changed() {
	if m.opts.Changed != nil {
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			m.opts.Changed()
		}()
	}
}

// Tools returns the tools of the servers that are up, sorted by name.
func (m *Manager) Tools() []agent.Tool {
	m.mu.Lock()
	servers := slices.Collect(maps.Values(m.servers))
	m.mu.Unlock()
	var out []agent.Tool
	for _, s := range servers {
		out = append(out, s.offered()...)
	}
	slices.SortFunc(out, func(a, b agent.Tool) int { return strings.Compare(a.Spec().Name, b.Spec().Name) })
	return out
}

// Status is what a server is doing, for `nanobot status` and /readyz.
type Status struct {
	Name      string
	Transport string // "stdio" or "http"
	State     string // StateStarting, StateReady, StateFailed
	Tools     int    // tools offered
	Err       string // why it is not ready
	RetryAt   time.Time
	Restarts  int
	Missing   []string // configured tool names the server does not have
}

// Server states.
const (
	StateStarting = "starting"
	StateReady    = "ready"
	StateFailed   = "failed"
)

func (s Status) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s): %s", s.Name, s.Transport, s.State)
	if s.State == StateReady {
		fmt.Fprintf(&b, ", %d tools", s.Tools)
	}
	if s.Err != "" {
		b.WriteString(": " + s.Err)
	}
	if !s.RetryAt.IsZero() {
		fmt.Fprintf(&b, "; retry in %s", max(time.Until(s.RetryAt), 0).Round(time.Second))
	}
	if s.Restarts > 0 {
		fmt.Fprintf(&b, "; restarted %d times", s.Restarts)
	}
	if len(s.Missing) > 0 {
		fmt.Fprintf(&b, "; not offered by the server: %s", strings.Join(s.Missing, ", "))
	}
	return b.String()
}

// Status reports every server, sorted by name.
func (m *Manager) Status() []Status {
	m.mu.Lock()
	servers := slices.Collect(maps.Values(m.servers))
	m.mu.Unlock()
	out := make([]Status, 0, len(servers))
	for _, s := range servers {
		out = append(out, s.status())
	}
	slices.SortFunc(out, func(a, b Status) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// WaitStarted waits until every server has finished its first attempt to
// start, or ctx ends: a one-shot command waits so that its single turn has
// the tools, where the daemon does not.
func (m *Manager) WaitStarted(ctx context.Context) {
	m.mu.Lock()
	servers := slices.Collect(maps.Values(m.servers))
	m.mu.Unlock()
	for _, s := range servers {
		select {
		case <-s.attempted:
		case <-ctx.Done():
			return
		}
	}
}

// Close stops every server and waits for their processes to end.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	for name, s := range m.servers {
		s.stop()
		delete(m.servers, name)
	}
	m.mu.Unlock()
	m.wg.Wait()
}
