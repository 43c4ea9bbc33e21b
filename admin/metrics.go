// Package admin serves the daemon's admin endpoint: liveness (/healthz),
// readiness (/readyz) and metrics in the Prometheus text format (/metrics), and provides the
// client that `nanobot health` uses to probe it.
package admin

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/VictoriaMetrics/metrics"
)

// Label values the daemon records. Series for these are created up front so
// they read 0 rather than being absent until the first event, which keeps
// rate() and alerting rules simple.
const (
	TurnAnswered = "answered"
	TurnFailed   = "failed"
	TurnStopped  = "stopped"
	TurnBudget   = "budget"

	QueuePending = "pending"
	QueueRunning = "running"

	OutcomeOK    = "ok"
	OutcomeError = "error"

	// ToolUnknown is the tool label of every call to a tool nobody has:
	// the model invents those names, and a label per invention would let
	// it grow /metrics without bound.
	ToolUnknown = "unknown"
	// LabelOther stands for label values beyond a series' limit.
	LabelOther = "other"
)

// Every label value is bounded: a metric keeps at most maxLabelValues
// distinct values of each label, and none longer than maxLabelBytes; the
// rest count as LabelOther. Callers pass known values (constants, names
// from the config or from tool registration); this is the floor under a
// caller that passes something it should not.
const (
	maxLabelValues = 256
	maxLabelBytes  = 128
)

// Metrics holds the daemon's metrics in a set of its own, exposed in the
// Prometheus text format. All methods are safe for concurrent use. A nil
// *Metrics records nothing, so code paths can call it unconditionally when
// the admin endpoint is off.
type Metrics struct {
	set           *metrics.Set
	modelDuration *metrics.PrometheusHistogram

	mu     sync.Mutex
	values map[string]map[string]bool // by metric and label name: the values seen

	procIO       func() error // whether the process I/O counters can be read
	procIOWarn   sync.Once
	procStatWarn sync.Once
	start        int64 // Unix seconds: process_start_time_seconds
}

// modelBuckets span a quick local model (a fraction of a second) to a slow
// reasoning model near the provider timeout (minutes).
var modelBuckets = []float64{0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300}

// NewMetrics creates the metrics. Series with known label values are
// created up front so they read 0 rather than being absent until the first
// event, which keeps rate() and alerting rules simple.
func NewMetrics() *Metrics {
	// # HELP and # TYPE lines, as Prometheus clients write them. The
	// library keeps this switch process-wide; every set here wants it.
	metrics.ExposeMetadata(true)
	m := &Metrics{set: metrics.NewSet(), values: map[string]map[string]bool{}, procIO: readProcIO, start: time.Now().Unix()}
	m.modelDuration = m.set.NewPrometheusHistogramExt("nanobot_model_call_duration_seconds", modelBuckets)
	for _, o := range []string{TurnAnswered, TurnFailed, TurnStopped, TurnBudget} {
		m.counter("nanobot_turns_total", "outcome", o)
	}
	for _, o := range []string{OutcomeOK, OutcomeError} {
		m.counter("nanobot_model_calls_total", "outcome", o)
		m.counter("nanobot_consolidations_total", "outcome", o)
		m.counter("nanobot_backups_total", "outcome", o)
	}
	m.set.GetOrCreateGauge("nanobot_backup_last_success_timestamp_seconds", nil)
	m.set.GetOrCreateGauge("nanobot_backup_last_size_bytes", nil)
	m.set.GetOrCreateGauge("nanobot_database_damaged", nil)
	m.counter("nanobot_telegram_transport_restarts_total")
	m.counter("nanobot_tool_calls_total", "tool", ToolUnknown, "verdict", "allow")
	for _, o := range []string{"idle", "quiet", "skip", "run", "error"} {
		m.counter("nanobot_heartbeat_checks_total", "outcome", o)
	}
	m.counter("nanobot_heartbeat_tokens_total", "kind", "prompt")
	m.counter("nanobot_heartbeat_tokens_total", "kind", "completion")
	m.counter("nanobot_model_tokens_total", "kind", "prompt")
	m.counter("nanobot_model_tokens_total", "kind", "completion")
	m.counter("nanobot_model_cached_tokens_total")
	m.SetQueue(QueuePending, 0)
	m.SetQueue(QueueRunning, 0)
	return m
}

// counter returns the counter name{label="value",...}, creating it.
func (m *Metrics) counter(name string, labels ...string) *metrics.Counter {
	return m.set.GetOrCreateCounter(m.series(name, labels...))
}

// series renders name{k="v",...} with every value bounded.
func (m *Metrics) series(name string, labels ...string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := 1; i < len(labels); i += 2 {
		labels[i] = m.boundLocked(name+"\x00"+labels[i-1], labels[i])
	}
	return series(name, labels...)
}

// boundLocked returns v, or LabelOther when v is too long or the label
// has its share of values already. mu must be held.
func (m *Metrics) boundLocked(key, v string) string {
	seen := m.values[key]
	switch {
	case seen[v]:
		return v
	case len(v) > maxLabelBytes || len(seen) >= maxLabelValues:
		return LabelOther
	}
	if seen == nil {
		seen = map[string]bool{}
		m.values[key] = seen
	}
	seen[v] = true
	return v
}

// series renders name{k="v",...}; values are quoted as the text format wants.
func series(name string, labels ...string) string {
	if len(labels) == 0 {
		return name
	}
	b := []byte(name + "{")
	for i := 0; i+1 < len(labels); i += 2 {
		if i > 0 {
			b = append(b, ',')
		}
		b = fmt.Appendf(b, "%s=%q", labels[i], labels[i+1])
	}
	return string(append(b, '}'))
}

// Handler serves the metrics in the Prometheus exposition format, with the
// Go runtime and process metrics.
func (m *Metrics) Handler() http.Handler {
	return m.handler(nil)
}

// handler is Handler, saying through logger (nil: nowhere) what it cannot
// serve.
func (m *Metrics) handler(logger *slog.Logger) http.Handler {
	if m == nil {
		return http.NotFoundHandler()
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		m.write(w, logger)
	})
}

func (m *Metrics) write(w io.Writer, logger *slog.Logger) {
	m.set.WritePrometheus(w)
	m.writeProcess(w, logger)
}

// InboundMessage counts a message received on channel ("telegram", "cli").
func (m *Metrics) InboundMessage(channel string) {
	if m == nil {
		return
	}
	m.counter("nanobot_inbound_messages_total", "channel", channel).Inc()
}

// APIRequest counts a request to the OpenAI-compatible API by client (the
// key's name; "" for a request without a valid key) and outcome ("ok",
// "unauthorized", "invalid", "failed", "gone": the client left).
func (m *Metrics) APIRequest(client, outcome string) {
	if m == nil {
		return
	}
	m.counter("nanobot_api_requests_total", "client", client, "outcome", outcome).Inc()
}

// WebSignIn counts a sign-in to the web console by outcome.
func (m *Metrics) WebSignIn(ok bool) {
	if m == nil {
		return
	}
	outcome := "refused"
	if ok {
		outcome = "ok"
	}
	m.counter("nanobot_web_signins_total", "outcome", outcome).Inc()
}

// WebRequest counts a request to the web console: "page", "api",
// "events", "unauthorized" or "forbidden".
func (m *Metrics) WebRequest(kind string) {
	if m == nil {
		return
	}
	m.counter("nanobot_web_requests_total", "kind", kind).Inc()
}

// Turn counts a finished agent turn; outcome is one of the Turn* constants.
func (m *Metrics) Turn(outcome string) {
	if m == nil {
		return
	}
	m.counter("nanobot_turns_total", "outcome", outcome).Inc()
}

// ModelCall records one model completion call: its outcome (OutcomeOK or
// OutcomeError), its duration and the tokens the provider reported, of
// which cached is the part of prompt served from its prompt cache. Cached
// tokens have a counter of their own rather than a kind, so that a sum
// over nanobot_model_tokens_total counts no token twice.
func (m *Metrics) ModelCall(outcome string, d time.Duration, prompt, completion, cached int) {
	if m == nil {
		return
	}
	m.counter("nanobot_model_calls_total", "outcome", outcome).Inc()
	m.modelDuration.Update(d.Seconds())
	// A provider reporting nonsense must not count backwards.
	if prompt > 0 {
		m.counter("nanobot_model_tokens_total", "kind", "prompt").Add(prompt)
	}
	if completion > 0 {
		m.counter("nanobot_model_tokens_total", "kind", "completion").Add(completion)
	}
	if cached > 0 {
		m.counter("nanobot_model_cached_tokens_total").Add(cached)
	}
}

// ModelEndpoint counts an answer by the endpoint that gave it (model@host),
// which tells the configured endpoint from its fallbacks.
func (m *Metrics) ModelEndpoint(endpoint string) {
	if m == nil {
		return
	}
	m.counter("nanobot_model_answers_total", "endpoint", endpoint).Inc()
}

// ToolCall counts a tool call by tool name and safety verdict ("allow",
// "ask", "deny"; tools without a safety check use "allow"). A call to a
// tool that does not exist counts as tool ToolUnknown, whatever its name.
func (m *Metrics) ToolCall(tool, verdict string) {
	if m == nil {
		return
	}
	m.counter("nanobot_tool_calls_total", "tool", tool, "verdict", verdict).Inc()
}

// TelegramError counts a failed Telegram Bot API call by method
// ("getUpdates", "sendMessage", ...).
func (m *Metrics) TelegramError(method string) {
	if m == nil {
		return
	}
	m.counter("nanobot_telegram_api_errors_total", "method", method).Inc()
}

// SetQueue sets the number of inbound messages in state (QueuePending or
// QueueRunning).
func (m *Metrics) SetQueue(state string, n int) {
	if m == nil {
		return
	}
	m.set.GetOrCreateGauge(m.series("nanobot_queue_depth", "state", state), nil).Set(float64(n))
}

// Consolidation counts a memory consolidation by outcome (OutcomeOK or
// OutcomeError).
func (m *Metrics) Consolidation(outcome string) {
	if m == nil {
		return
	}
	m.counter("nanobot_consolidations_total", "outcome", outcome).Inc()
}

// Backup counts a scheduled backup by outcome (OutcomeOK or OutcomeError).
func (m *Metrics) Backup(outcome string) {
	if m == nil {
		return
	}
	m.counter("nanobot_backups_total", "outcome", outcome).Inc()
}

// LastBackup records the newest checked backup: when it was taken (unix
// seconds; 0 before the first) and its size.
func (m *Metrics) LastBackup(at time.Time, bytes int64) {
	if m == nil || at.IsZero() {
		return
	}
	m.set.GetOrCreateGauge("nanobot_backup_last_success_timestamp_seconds", nil).Set(float64(at.UnixMilli()) / 1000)
	m.set.GetOrCreateGauge("nanobot_backup_last_size_bytes", nil).Set(float64(bytes))
}

// DatabaseDamaged records the finding of the last check of the database
// (PRAGMA quick_check, at start and after a failed backup): 1 damaged, 0
// sound.
func (m *Metrics) DatabaseDamaged(damaged bool) {
	if m == nil {
		return
	}
	v := 0.0
	if damaged {
		v = 1
	}
	m.set.GetOrCreateGauge("nanobot_database_damaged", nil).Set(v)
}

// TelegramRestart counts a restart of the Telegram connection by the
// watchdog after a silence.
func (m *Metrics) TelegramRestart() {
	if m == nil {
		return
	}
	m.counter("nanobot_telegram_transport_restarts_total").Inc()
}

// HeartbeatCheck counts a heartbeat check by its outcome (idle and quiet
// cost no model call; skip, run and error are decisions).
func (m *Metrics) HeartbeatCheck(outcome string) {
	if m == nil {
		return
	}
	m.counter("nanobot_heartbeat_checks_total", "outcome", outcome).Inc()
}

// HeartbeatTokens adds the tokens of a heartbeat model call.
func (m *Metrics) HeartbeatTokens(prompt, completion int) {
	if m == nil || prompt < 0 || completion < 0 {
		return
	}
	m.counter("nanobot_heartbeat_tokens_total", "kind", "prompt").Add(prompt)
	m.counter("nanobot_heartbeat_tokens_total", "kind", "completion").Add(completion)
}
