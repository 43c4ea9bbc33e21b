package mcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/agent"
)

// stableUptime is how long a server must stay up for its backoff to start
// again from the minimum; one that dies sooner keeps backing off.
const stableUptime = time.Minute

// connectTimeout bounds starting a server and listing its tools, beyond
// the per-call timeout.
const connectTimeout = 30 * time.Second

// server runs one configured server: it connects, serves calls, and
// reconnects with backoff until stopped.
type server struct {
	cfg       Server
	m         *Manager
	cancel    context.CancelFunc // ends the context run was given
	attempted chan struct{}      // closed when the first attempt has ended
	once      sync.Once

	mu       sync.Mutex
	session  *session
	tools    []agent.Tool
	missing  []string
	state    string
	err      string
	retryAt  time.Time
	restarts int
	stderr   *tail
}

// newServer returns the server and the context to run it with, which stop cancels.
func newServer(cfg Server, m *Manager) (*server, context.Context) {
	ctx, cancel := context.WithCancel(context.Background())
	return &server{cfg: cfg, m: m, cancel: cancel, attempted: make(chan struct{}), state: StateStarting}, ctx
}

func (s *server) stop() { s.cancel() }

func (s *server) log() *slog.Logger { return s.m.opts.Logger.With("server", s.cfg.Name) }

// run connects and reconnects until ctx ends.
func (s *server) run(ctx context.Context) {
	log := s.log()
	delay := s.m.opts.MinBackoff
	for ctx.Err() == nil {
		started := time.Now()
		sess, err := s.connect(ctx)
		if err == nil {
			log.Info("mcp server ready", "transport", s.cfg.transport(), "tools", len(s.offered()), "dur", time.Since(started).Round(time.Millisecond))
			s.once.Do(func() { close(s.attempted) })
			s.m.changed()
			err = s.serve(ctx, sess)
			if ctx.Err() != nil {
				break
			}
			if time.Since(started) >= stableUptime {
				delay = s.m.opts.MinBackoff
			}
			s.mu.Lock()
			s.restarts++
			s.mu.Unlock()
		}
		if ctx.Err() != nil {
			break
		}
		reason := s.describe(err)
		s.mu.Lock()
		s.state, s.err, s.retryAt = StateFailed, reason, time.Now().Add(delay)
		s.mu.Unlock()
		s.once.Do(func() { close(s.attempted) })
		log.Warn("mcp server not available; retrying", "err", reason, "retry_in", delay)
		select {
		case <-ctx.Done():
		case <-time.After(delay):
		}
		delay = min(delay*2, s.m.opts.MaxBackoff)
	}
	s.once.Do(func() { close(s.attempted) })
	s.mu.Lock()
	sess := s.session
	s.session, s.tools = nil, nil
	s.mu.Unlock()
	if sess != nil {
		_ = sess.close()
	}
	log.Info("mcp server stopped")
}

// serve waits until the connection ends or the server is stopped,
// relisting the tools whenever the server says they changed, and forgets
// its tools.
func (s *server) serve(ctx context.Context, sess *session) error {
	var err error
	for err == nil && ctx.Err() == nil {
		select {
		case <-sess.done():
			err = sess.err()
			if err == nil {
				err = errors.New("the connection closed")
			}
			err = fmt.Errorf("disconnected: %w", err)
		case <-sess.toolsChanged():
			s.relist(ctx, sess)
		case <-ctx.Done():
		}
	}
	s.mu.Lock()
	s.session, s.tools = nil, nil
	s.mu.Unlock()
	_ = sess.close() // for stdio: closes stdin, then SIGTERM, then SIGKILL
	if ctx.Err() == nil {
		s.m.changed()
	}
	return err
}

// connect starts or reaches the server and lists its tools.
func (s *server) connect(ctx context.Context) (*session, error) {
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	var stderr io.Writer
	if s.cfg.URL == "" {
		s.stderr = &tail{}
		stderr = s.stderr
	}
	sess, err := dial(ctx, s.cfg, s.m.opts.Version, stderr, s.log())
	if err != nil {
		return nil, err
	}
	if err := s.list(ctx, sess); err != nil {
		_ = sess.close()
		return nil, err
	}
	s.mu.Lock()
	s.session, s.state, s.err, s.retryAt = sess, StateReady, "", time.Time{}
	s.mu.Unlock()
	return sess, nil
}

// list reads the server's tools and builds the offered ones.
func (s *server) list(ctx context.Context, sess *session) error {
	all, err := sess.listTools(ctx)
	if err != nil {
		return fmt.Errorf("list tools: %w", err)
	}
	tools, missing := s.adapt(all)
	s.mu.Lock()
	s.tools, s.missing = tools, missing
	s.mu.Unlock()
	return nil
}

// relist follows a server's notice that its tools changed.
func (s *server) relist(ctx context.Context, sess *session) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	if err := s.list(ctx, sess); err != nil {
		s.log().Warn("mcp server tools could not be listed again", "err", err)
		return
	}
	s.m.changed()
}

// adapt turns the server's tools into agent tools, keeping those the
// configuration names (all when it names none), and reports the names it
// asked for that the server lacks.
func (s *server) adapt(all []toolInfo) (tools []agent.Tool, missing []string) {
	seen := map[string]bool{}
	have := map[string]bool{}
	for _, t := range all {
		have[t.Name] = true
		if len(s.cfg.Tools) > 0 && !slices.Contains(s.cfg.Tools, t.Name) {
			continue
		}
		name := toolName(s.cfg.Name, t.Name, seen)
		seen[name] = true
		tools = append(tools, newTool(s, name, t))
	}
	for _, n := range s.cfg.Tools {
		if !have[n] {
			missing = append(missing, n)
		}
	}
	return tools, missing
}

// offered is the tools the model may call now.
func (s *server) offered() []agent.Tool {
	if s.cfg.Approval == ApprovalDeny {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.tools)
}

// current is the live session, or why there is none.
func (s *server) current() (*session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.session == nil {
		why := s.err
		if why == "" {
			why = "it is starting"
		}
		return nil, fmt.Errorf("MCP server %s is not available (%s); try again later", s.cfg.Name, why)
	}
	return s.session, nil
}

// broken closes a session whose calls fail at the transport, so that run
// reconnects.
func (s *server) broken(sess *session) {
	s.mu.Lock()
	same := s.session == sess
	s.mu.Unlock()
	if same {
		_ = sess.close()
	}
}

func (s *server) status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{Name: s.cfg.Name, Transport: s.cfg.transport(), State: s.state, Err: s.err, RetryAt: s.retryAt,
		Restarts: s.restarts, Missing: slices.Clone(s.missing)}
	if s.state == StateReady {
		st.Tools = len(s.tools)
		if s.cfg.Approval == ApprovalDeny {
			st.Tools = 0
			st.Err = "approval is deny: its tools are not offered"
		}
	}
	return st
}

// describe words a failure to start or a death, with the last line the
// server wrote on stderr.
func (s *server) describe(err error) string {
	msg := "unknown error"
	if err != nil {
		msg = err.Error()
	}
	if s.stderr != nil {
		if last := s.stderr.last(); last != "" {
			msg += " (stderr: " + last + ")"
		}
	}
	return msg
}

// tail keeps the last line a server wrote on stderr.
type tail struct {
	mu   sync.Mutex
	line []byte
	cur  []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, b := range p {
		if b == '\n' {
			if len(bytes.TrimSpace(t.cur)) > 0 {
				t.line = append(t.line[:0], t.cur...)
			}
			t.cur = t.cur[:0]
			continue
		}
		if len(t.cur) < 500 {
			t.cur = append(t.cur, b)
		}
	}
	return len(p), nil
}

func (t *tail) last() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(bytes.TrimSpace(t.cur)) > 0 {
		return strings.TrimSpace(string(t.cur))
	}
	return strings.TrimSpace(string(t.line))
}
