package admin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// startServer starts s on a free loopback port and shuts it down at the end
// of the test.
func startServer(t *testing.T, m *Metrics, ready func(context.Context) error) *Server {
	t.Helper()
	s := NewServer("127.0.0.1:0", m, ready, nil)
	if err := s.Start(); err != nil {
		t.Fatalf("Start() = %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown() = %v", err)
		}
	})
	return s
}

func get(t *testing.T, method, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read %s: %v", url, err)
	}
	return resp.StatusCode, string(body)
}

func TestHealthz(t *testing.T) {
	s := startServer(t, NewMetrics(), func(context.Context) error { return errors.New("database locked") })
	// Liveness does not depend on readiness.
	code, body := get(t, http.MethodGet, "http://"+s.Addr()+"/healthz")
	if code != http.StatusOK || body != "ok\n" {
		t.Errorf("GET /healthz = %d %q, want 200 %q", code, body, "ok\n")
	}
	code, _ = get(t, http.MethodHead, "http://"+s.Addr()+"/healthz")
	if code != http.StatusOK {
		t.Errorf("HEAD /healthz = %d, want 200", code)
	}
	code, _ = get(t, http.MethodPost, "http://"+s.Addr()+"/healthz")
	if code != http.StatusMethodNotAllowed {
		t.Errorf("POST /healthz = %d, want 405", code)
	}
	code, _ = get(t, http.MethodGet, "http://"+s.Addr()+"/nope")
	if code != http.StatusNotFound {
		t.Errorf("GET /nope = %d, want 404", code)
	}
}

func TestReadyzFlips(t *testing.T) {
	var reason atomic.Pointer[string]
	ready := func(ctx context.Context) error {
		if _, ok := ctx.Deadline(); !ok {
			return errors.New("readiness check has no deadline")
		}
		if r := reason.Load(); r != nil {
			return errors.New(*r)
		}
		return nil
	}
	s := startServer(t, nil, ready)
	url := "http://" + s.Addr() + "/readyz"

	steps := []struct {
		name     string
		reason   string
		wantCode int
		wantBody string
	}{
		{"ready", "", http.StatusOK, "ready\n"},
		{"database unwritable", "database: attempt to write a readonly database", http.StatusServiceUnavailable,
			"not ready: database: attempt to write a readonly database\n"},
		{"telegram silent", "telegram: no successful call in the last minute", http.StatusServiceUnavailable,
			"not ready: telegram: no successful call in the last minute\n"},
		{"ready again", "", http.StatusOK, "ready\n"},
	}
	for _, st := range steps {
		if st.reason == "" {
			reason.Store(nil)
		} else {
			reason.Store(&st.reason)
		}
		code, body := get(t, http.MethodGet, url)
		if code != st.wantCode || body != st.wantBody {
			t.Errorf("%s: GET /readyz = %d %q, want %d %q", st.name, code, body, st.wantCode, st.wantBody)
		}
	}
}

func TestReadyzNilFunc(t *testing.T) {
	s := startServer(t, nil, nil)
	if code, body := get(t, http.MethodGet, "http://"+s.Addr()+"/readyz"); code != http.StatusOK || body != "ready\n" {
		t.Errorf("GET /readyz = %d %q, want 200 %q", code, body, "ready\n")
	}
	// Without metrics there is no /metrics.
	if code, _ := get(t, http.MethodGet, "http://"+s.Addr()+"/metrics"); code != http.StatusNotFound {
		t.Errorf("GET /metrics without metrics = %d, want 404", code)
	}
}

func TestReadyzTimeout(t *testing.T) {
	s := NewServer("127.0.0.1:0", nil, func(ctx context.Context) error {
		<-ctx.Done() // a wedged dependency
		return ctx.Err()
	}, nil)
	s.readyTimeout = 50 * time.Millisecond
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	code, body := get(t, http.MethodGet, "http://"+s.Addr()+"/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "deadline exceeded") {
		t.Errorf("GET /readyz with a wedged check = %d %q, want 503 mentioning the deadline", code, body)
	}
}

func TestMetricsExposition(t *testing.T) {
	m := NewMetrics()
	s := startServer(t, m, nil)

	m.InboundMessage("telegram")
	m.InboundMessage("telegram")
	m.InboundMessage("cli")
	m.Turn(TurnAnswered)
	m.Turn(TurnBudget)
	m.ModelCall(OutcomeOK, 1500*time.Millisecond, 120, 30, 96)
	m.ModelCall(OutcomeError, 200*time.Millisecond, 0, 0, 0)
	m.ModelCall(OutcomeOK, time.Second, -5, -1, -3) // nonsense usage is ignored, not a panic
	m.ToolCall("exec", "deny")
	m.ToolCall("read_file", "allow")
	m.TelegramError("sendMessage")
	m.SetQueue(QueuePending, 3)
	m.SetQueue(QueueRunning, 1)
	m.SetQueue(QueuePending, 2)
	m.Consolidation(OutcomeOK)

	code, body := get(t, http.MethodGet, "http://"+s.Addr()+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("GET /metrics = %d", code)
	}
	want := []string{
		`nanobot_inbound_messages_total{channel="telegram"} 2`,
		`nanobot_inbound_messages_total{channel="cli"} 1`,
		`nanobot_turns_total{outcome="answered"} 1`,
		`nanobot_turns_total{outcome="budget"} 1`,
		`nanobot_turns_total{outcome="failed"} 0`,
		`nanobot_turns_total{outcome="stopped"} 0`,
		`nanobot_model_calls_total{outcome="ok"} 2`,
		`nanobot_model_calls_total{outcome="error"} 1`,
		`nanobot_model_call_duration_seconds_count 3`,
		`nanobot_model_call_duration_seconds_sum 2.7`,
		`nanobot_model_call_duration_seconds_bucket{le="0.25"} 1`,
		`nanobot_model_call_duration_seconds_bucket{le="2.5"} 3`,
		`nanobot_model_tokens_total{kind="prompt"} 120`,
		`nanobot_model_tokens_total{kind="completion"} 30`,
		`nanobot_model_cached_tokens_total 96`,
		`nanobot_tool_calls_total{tool="exec",verdict="deny"} 1`,
		`nanobot_tool_calls_total{tool="read_file",verdict="allow"} 1`,
		`nanobot_telegram_api_errors_total{method="sendMessage"} 1`,
		`nanobot_queue_depth{state="pending"} 2`,
		`nanobot_queue_depth{state="running"} 1`,
		`nanobot_consolidations_total{outcome="ok"} 1`,
		`nanobot_consolidations_total{outcome="error"} 0`,
		`# TYPE nanobot_model_call_duration_seconds histogram`,
		`# TYPE nanobot_queue_depth gauge`,
		`go_goroutines `,
		`process_resident_memory_bytes `,
	}
	lines := strings.Split(body, "\n")
	for _, w := range want {
		if !hasLinePrefix(lines, w) {
			t.Errorf("/metrics has no line starting %q", w)
		}
	}
}

func hasLinePrefix(lines []string, prefix string) bool {
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			return true
		}
	}
	return false
}

// Two Metrics never share state: each has its own registry.
func TestMetricsIndependent(t *testing.T) {
	a, b := NewMetrics(), NewMetrics()
	a.Turn(TurnFailed)
	s := startServer(t, b, nil)
	_, body := get(t, http.MethodGet, "http://"+s.Addr()+"/metrics")
	if !strings.Contains(body, `nanobot_turns_total{outcome="failed"} 0`) {
		t.Errorf("a turn recorded in one Metrics shows up in another")
	}
}

// The cached counter reads 0 from the start, so a cache share computed
// before the first cached call is 0 rather than missing.
func TestCachedTokensBeforeAnyCall(t *testing.T) {
	m := NewMetrics()
	s := startServer(t, m, nil)
	_, body := get(t, http.MethodGet, "http://"+s.Addr()+"/metrics")
	for _, w := range []string{`nanobot_model_cached_tokens_total 0`, `# TYPE nanobot_model_cached_tokens_total counter`} {
		if !hasLinePrefix(strings.Split(body, "\n"), w) {
			t.Errorf("before any call, /metrics has no line starting %q", w)
		}
	}
}

func TestNilMetricsRecordsNothing(t *testing.T) {
	var m *Metrics
	m.InboundMessage("telegram")
	m.Turn(TurnAnswered)
	m.ModelCall(OutcomeOK, time.Second, 1, 1, 1)
	m.ToolCall("exec", "allow")
	m.TelegramError("getUpdates")
	m.SetQueue(QueuePending, 1)
	m.Consolidation(OutcomeOK)
	if m.Handler() == nil {
		t.Error("nil Metrics: Handler() = nil")
	}
}

func TestMetricsConcurrent(t *testing.T) {
	m := NewMetrics()
	s := startServer(t, m, nil)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 200 {
				m.InboundMessage("telegram")
				m.ModelCall(OutcomeOK, time.Millisecond, 1, 1, 1)
				m.ToolCall("exec", "allow")
				m.SetQueue(QueuePending, i)
			}
		})
	}
	wg.Go(func() {
		for range 5 {
			resp, err := http.Get("http://" + s.Addr() + "/metrics")
			if err != nil {
				t.Errorf("GET /metrics: %v", err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
	wg.Wait()
	_, body := get(t, http.MethodGet, "http://"+s.Addr()+"/metrics")
	if !strings.Contains(body, `nanobot_inbound_messages_total{channel="telegram"} 1600`) {
		t.Errorf("after 8×200 concurrent messages, /metrics lacks the total of 1600")
	}
}

func TestStartFailsFast(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, addr := range []string{busy.Addr().String(), "127.0.0.1:notaport", "256.0.0.1:1"} {
		s := NewServer(addr, nil, nil, nil)
		if err := s.Start(); err == nil {
			s.Shutdown(context.Background())
			t.Errorf("Start() on %q = nil, want an error", addr)
		}
	}
}

func TestStartTwice(t *testing.T) {
	s := startServer(t, nil, nil)
	if err := s.Start(); err == nil {
		t.Error("second Start() = nil, want an error")
	}
}

func TestShutdown(t *testing.T) {
	s := NewServer("127.0.0.1:0", nil, nil, nil)
	if err := s.Shutdown(t.Context()); err != nil {
		t.Errorf("Shutdown() before Start = %v, want nil", err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	addr := s.Addr()
	if err := Probe(t.Context(), addr, false); err != nil {
		t.Fatalf("Probe() while running = %v", err)
	}
	if err := s.Shutdown(t.Context()); err != nil {
		t.Fatalf("Shutdown() = %v", err)
	}
	if err := Probe(t.Context(), addr, false); err == nil {
		t.Error("Probe() after Shutdown = nil, want an error")
	}
	if err := s.Shutdown(t.Context()); err != nil {
		t.Errorf("second Shutdown() = %v, want nil", err)
	}
}

func TestProbe(t *testing.T) {
	var notReady atomic.Bool
	s := startServer(t, nil, func(context.Context) error {
		if notReady.Load() {
			return errors.New("database: disk I/O error")
		}
		return nil
	})
	_, port, err := net.SplitHostPort(s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close()

	tests := []struct {
		name     string
		addr     string
		ready    bool
		notReady bool
		wantErr  string // "" means success
	}{
		{"healthz", s.Addr(), false, false, ""},
		{"readyz", s.Addr(), true, false, ""},
		{"empty host", ":" + port, true, false, ""},
		{"unspecified host", "0.0.0.0:" + port, false, false, ""},
		{"healthz ignores readiness", s.Addr(), false, true, ""},
		{"not ready", s.Addr(), true, true, "503 Service Unavailable: not ready: database: disk I/O error"},
		{"nothing listening", closedAddr, false, false, "connect"},
		{"empty address", "", false, false, "gateway.listen is empty"},
		{"no port", "127.0.0.1", false, false, "missing port"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			notReady.Store(tt.notReady)
			err := Probe(t.Context(), tt.addr, tt.ready)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("Probe(%q, %v) = %v, want nil", tt.addr, tt.ready, err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("Probe(%q, %v) = %v, want an error containing %q", tt.addr, tt.ready, err, tt.wantErr)
			}
		})
	}
}

// A daemon that accepts the connection but never answers must not hang the
// probe (a container health check would pile up).
func TestProbeHungServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = Probe(ctx, ln.Addr().String(), false)
	if err == nil {
		t.Fatal("Probe() of a server that never answers = nil, want an error")
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("Probe() took %v, want it bounded by its timeout", d)
	}
}

func TestProbeURL(t *testing.T) {
	tests := []struct {
		addr  string
		ready bool
		want  string
	}{
		{"127.0.0.1:18790", false, "http://127.0.0.1:18790/healthz"},
		{"127.0.0.1:18790", true, "http://127.0.0.1:18790/readyz"},
		{"0.0.0.0:18790", false, "http://127.0.0.1:18790/healthz"},
		{":18790", true, "http://127.0.0.1:18790/readyz"},
		{"[::]:18790", false, "http://[::1]:18790/healthz"},
		{"[::1]:9000", false, "http://[::1]:9000/healthz"},
		{"localhost:18790", false, "http://localhost:18790/healthz"},
	}
	for _, tt := range tests {
		got, err := probeURL(tt.addr, tt.ready)
		if err != nil || got != tt.want {
			t.Errorf("probeURL(%q, %v) = %q, %v, want %q", tt.addr, tt.ready, got, err, tt.want)
		}
	}
}

func FuzzProbeURL(f *testing.F) {
	for _, s := range []string{"127.0.0.1:18790", ":1", "0.0.0.0:80", "[::]:1", "", "host", "[::1", "a:b:c", "x/y:1"} {
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, addr string, ready bool) {
		got, err := probeURL(addr, ready)
		if err != nil {
			return
		}
		if !strings.HasPrefix(got, "http://") {
			t.Fatalf("probeURL(%q) = %q, not an http URL", addr, got)
		}
		want := "/healthz"
		if ready {
			want = "/readyz"
		}
		// Whatever the address, the probe asks for no other path and
		// carries no credentials.
		u, err := url.Parse(got)
		if err != nil {
			t.Fatalf("probeURL(%q) = %q, which does not parse: %v", addr, got, err)
		}
		if u.Path != want || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			t.Fatalf("probeURL(%q) = %q, want only the path %q", addr, got, want)
		}
	})
}

func BenchmarkModelCall(b *testing.B) {
	m := NewMetrics()
	b.ReportAllocs()
	for b.Loop() {
		m.ModelCall(OutcomeOK, 1200*time.Millisecond, 900, 120, 768)
	}
}

func BenchmarkToolCall(b *testing.B) {
	m := NewMetrics()
	b.ReportAllocs()
	for b.Loop() {
		m.ToolCall("exec", "allow")
	}
}

func BenchmarkScrape(b *testing.B) {
	m := NewMetrics()
	m.ModelCall(OutcomeOK, time.Second, 1, 1, 0)
	h := m.Handler()
	req, err := http.NewRequest(http.MethodGet, "/metrics", nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(discardWriter{}, req)
	}
}

type discardWriter struct{}

func (discardWriter) Header() http.Header         { return http.Header{} }
func (discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (discardWriter) WriteHeader(int)             {}

func TestBackupAndWatchdogMetrics(t *testing.T) {
	m := NewMetrics()
	s := startServer(t, m, nil)
	_, body := get(t, http.MethodGet, "http://"+s.Addr()+"/metrics")
	for _, w := range []string{`nanobot_backups_total{outcome="ok"} 0`, `nanobot_backup_last_success_timestamp_seconds 0`,
		`nanobot_telegram_transport_restarts_total 0`} {
		if !hasLinePrefix(strings.Split(body, "\n"), w) {
			t.Errorf("before any event, /metrics has no line starting %q", w)
		}
	}
	m.Backup(OutcomeOK)
	m.Backup(OutcomeError)
	m.LastBackup(time.Unix(1700000000, 500_000_000), 4096)
	m.LastBackup(time.Time{}, 1) // no backup yet: ignored
	m.TelegramRestart()
	_, body = get(t, http.MethodGet, "http://"+s.Addr()+"/metrics")
	lines := strings.Split(body, "\n")
	for _, w := range []string{
		`nanobot_backups_total{outcome="ok"} 1`,
		`nanobot_backups_total{outcome="error"} 1`,
		`nanobot_backup_last_success_timestamp_seconds 1.7000000005e+09`,
		`nanobot_backup_last_size_bytes 4096`,
		`nanobot_telegram_transport_restarts_total 1`,
	} {
		if !hasLinePrefix(lines, w) {
			t.Errorf("/metrics has no line starting %q", w)
		}
	}
	var nilM *Metrics
	nilM.Backup(OutcomeOK)
	nilM.LastBackup(time.Now(), 1)
	nilM.TelegramRestart()
}

// Whatever a caller passes as a label value, /metrics stays bounded: long
// values and values beyond a label's share count as "other".
func TestLabelValuesAreBounded(t *testing.T) {
	m := NewMetrics()
	s := startServer(t, m, nil)
	_, before := get(t, http.MethodGet, "http://"+s.Addr()+"/metrics")

	long := strings.Repeat("n", 50<<10)
	for i := range 2000 {
		m.ToolCall(fmt.Sprintf("%s%d", long, i), "allow")
		m.ToolCall(fmt.Sprintf("t%d", i), "deny")
		m.TelegramError(fmt.Sprintf("method%d", i))
		m.ModelEndpoint(fmt.Sprintf("model@host%d", i))
	}
	m.ToolCall(ToolUnknown, "allow")
	_, after := get(t, http.MethodGet, "http://"+s.Addr()+"/metrics")
	if growth := len(after) - len(before); growth > 3*maxLabelValues*200 {
		t.Errorf("/metrics grew by %d bytes after 8000 invented label values, want at most %d", growth, 3*maxLabelValues*200)
	}
	lines := strings.Split(after, "\n")
	for _, w := range []string{
		`nanobot_tool_calls_total{tool="other",verdict="allow"} 2000`,
		`nanobot_tool_calls_total{tool="t0",verdict="deny"} 1`,
		`nanobot_tool_calls_total{tool="unknown",verdict="allow"} 1`,
		`nanobot_telegram_api_errors_total{method="other"} `,
		`nanobot_model_answers_total{endpoint="other"} `,
	} {
		if !hasLinePrefix(lines, w) {
			t.Errorf("/metrics has no line starting %q", w)
		}
	}
}
