package admin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// readyTimeout bounds one readiness check so a wedged dependency turns into a
// 503 instead of a hanging probe.
const readyTimeout = 2 * time.Second

// Server is the admin HTTP endpoint: /healthz, /readyz and /metrics.
type Server struct {
	addr         string
	logger       *slog.Logger
	srv          *http.Server
	readyTimeout time.Duration

	mu   sync.Mutex
	ln   net.Listener
	done chan struct{} // closed when the serve goroutine has returned

	details func(context.Context) []string // guarded by mu
}

// NewServer returns a server for addr ("host:port"). ready reports why the
// daemon cannot do its work (nil means ready); a nil ready is always ready.
// A nil m serves no /metrics. Nothing listens until Start.
func NewServer(addr string, m *Metrics, ready func(context.Context) error, logger *slog.Logger) *Server {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{addr: addr, logger: logger, readyTimeout: readyTimeout}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeText(w, http.StatusOK, "ok")
	})
	mux.HandleFunc("GET /readyz", s.readyz(ready))
	if m != nil {
		mux.Handle("GET /metrics", m.handler(logger))
	}
	s.srv = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       60 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	return s
}

func (s *Server) readyz(ready func(context.Context) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if ready == nil {
			writeText(w, http.StatusOK, "ready")
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), s.readyTimeout)
		defer cancel()
		var extra string
		s.mu.Lock()
		details := s.details
		s.mu.Unlock()
		if details != nil {
			if lines := details(ctx); len(lines) > 0 {
				extra = "\n" + strings.Join(lines, "\n")
			}
		}
		if err := ready(ctx); err != nil {
			s.logger.Debug("not ready", "err", err)
			writeText(w, http.StatusServiceUnavailable, "not ready: "+err.Error()+extra)
			return
		}
		writeText(w, http.StatusOK, "ready"+extra)
	}
}

func writeText(w http.ResponseWriter, status int, body string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = fmt.Fprintln(w, body)
}

// SetDetails adds lines to /readyz after its first one: parts that are
// reported without deciding readiness (the MCP servers).
func (s *Server) SetDetails(details func(context.Context) []string) {
	s.mu.Lock()
	s.details = details
	s.mu.Unlock()
}

// Start listens on the address now, so a bad or busy address fails here,
// and serves in a goroutine that Shutdown waits for.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln != nil {
		return errors.New("admin server already started")
	}
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("admin listen: %w", err)
	}
	s.ln = ln
	s.done = make(chan struct{})
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.logger.Error("admin server stopped", "err", err)
		}
	}()
	s.logger.Info("admin endpoint listening", "addr", ln.Addr().String())
	return nil
}

// Addr returns the address the server listens on (the resolved port when it
// was started on ":0"), or the configured address before Start.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return s.addr
	}
	return s.ln.Addr().String()
}

// Shutdown stops accepting connections, waits for in-flight requests and for
// the serve goroutine, within ctx. It is a no-op if the server never started.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	done := s.done
	s.mu.Unlock()
	if done == nil {
		return nil
	}
	if err := s.srv.Shutdown(ctx); err != nil {
		return fmt.Errorf("admin shutdown: %w", err)
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("admin shutdown: %w", ctx.Err())
	}
}
