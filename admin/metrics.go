// Package admin serves the daemon's admin endpoint: liveness (/healthz),
// readiness (/readyz) and Prometheus metrics (/metrics), and provides the
// client that `nanobot health` uses to probe it.
package admin

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
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
)

// Metrics holds the daemon's Prometheus metrics in a registry of its own.
// All methods are safe for concurrent use. A nil *Metrics records nothing, so
// code paths can call it unconditionally when the admin endpoint is off.
type Metrics struct {
	reg *prometheus.Registry

	inbound        *prometheus.CounterVec
	turns          *prometheus.CounterVec
	modelCalls     *prometheus.CounterVec
	modelDuration  prometheus.Histogram
	modelTokens    *prometheus.CounterVec
	toolCalls      *prometheus.CounterVec
	telegramErrors *prometheus.CounterVec
	queueDepth     *prometheus.GaugeVec
	consolidations *prometheus.CounterVec
	heartbeats     *prometheus.CounterVec
	heartbeatTok   *prometheus.CounterVec
}

// NewMetrics creates the metrics and registers them, together with the Go
// runtime and process collectors, in a new registry.
func NewMetrics() *Metrics {
	const ns = "nanobot"
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		inbound: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Name: "inbound_messages_total",
			Help: "Messages received, by channel.",
		}, []string{"channel"}),
		turns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Name: "turns_total",
			Help: "Agent turns finished, by outcome (answered, failed, stopped, budget).",
		}, []string{"outcome"}),
		modelCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Name: "model_calls_total",
			Help: "Model completion calls, by outcome.",
		}, []string{"outcome"}),
		modelDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: ns, Name: "model_call_duration_seconds",
			Help: "Latency of model completion calls, retries included.",
			// From a quick local model (a fraction of a second) to a slow
			// reasoning model near the provider timeout (minutes).
			Buckets: []float64{0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300},
		}),
		modelTokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Name: "model_tokens_total",
			Help: "Tokens reported by the model, by kind (prompt, completion).",
		}, []string{"kind"}),
		toolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Name: "tool_calls_total",
			Help: "Tool calls, by tool and safety verdict.",
		}, []string{"tool", "verdict"}),
		telegramErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Name: "telegram_api_errors_total",
			Help: "Failed Telegram Bot API calls, by method.",
		}, []string{"method"}),
		queueDepth: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: ns, Name: "queue_depth",
			Help: "Inbound messages waiting or being handled, by state (pending, running).",
		}, []string{"state"}),
		consolidations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Name: "consolidations_total",
			Help: "Memory consolidations, by outcome.",
		}, []string{"outcome"}),
		heartbeats: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Name: "heartbeat_checks_total",
			Help: "Heartbeat checks, by outcome (idle and quiet cost no model call; skip, run and error are decisions).",
		}, []string{"outcome"}),
		heartbeatTok: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Name: "heartbeat_tokens_total",
			Help: "Tokens spent on the heartbeat (decisions and runs), by kind (prompt, completion).",
		}, []string{"kind"}),
	}
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.inbound, m.turns, m.modelCalls, m.modelDuration, m.modelTokens,
		m.toolCalls, m.telegramErrors, m.queueDepth, m.consolidations,
		m.heartbeats, m.heartbeatTok,
	)
	for _, o := range []string{"idle", "quiet", "skip", "run", "error"} {
		m.heartbeats.WithLabelValues(o)
	}
	m.heartbeatTok.WithLabelValues("prompt")
	m.heartbeatTok.WithLabelValues("completion")
	for _, o := range []string{TurnAnswered, TurnFailed, TurnStopped, TurnBudget} {
		m.turns.WithLabelValues(o)
	}
	for _, o := range []string{OutcomeOK, OutcomeError} {
		m.modelCalls.WithLabelValues(o)
		m.consolidations.WithLabelValues(o)
	}
	m.modelTokens.WithLabelValues("prompt")
	m.modelTokens.WithLabelValues("completion")
	m.queueDepth.WithLabelValues(QueuePending)
	m.queueDepth.WithLabelValues(QueueRunning)
	return m
}

// Handler serves the metrics in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	if m == nil {
		return http.NotFoundHandler()
	}
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		Registry:      m.reg,
		ErrorHandling: promhttp.ContinueOnError,
	})
}

// InboundMessage counts a message received on channel ("telegram", "cli").
func (m *Metrics) InboundMessage(channel string) {
	if m == nil {
		return
	}
	m.inbound.WithLabelValues(channel).Inc()
}

// Turn counts a finished agent turn; outcome is one of the Turn* constants.
func (m *Metrics) Turn(outcome string) {
	if m == nil {
		return
	}
	m.turns.WithLabelValues(outcome).Inc()
}

// ModelCall records one model completion call: its outcome (OutcomeOK or
// OutcomeError), its duration and the tokens the provider reported.
func (m *Metrics) ModelCall(outcome string, d time.Duration, prompt, completion int) {
	if m == nil {
		return
	}
	m.modelCalls.WithLabelValues(outcome).Inc()
	m.modelDuration.Observe(d.Seconds())
	// Counters panic on negative increments; a provider reporting nonsense
	// must not take the daemon down.
	if prompt > 0 {
		m.modelTokens.WithLabelValues("prompt").Add(float64(prompt))
	}
	if completion > 0 {
		m.modelTokens.WithLabelValues("completion").Add(float64(completion))
	}
}

// ToolCall counts a tool call by tool name and safety verdict ("allow",
// "ask", "deny"; tools without a safety check use "allow").
func (m *Metrics) ToolCall(tool, verdict string) {
	if m == nil {
		return
	}
	m.toolCalls.WithLabelValues(tool, verdict).Inc()
}

// TelegramError counts a failed Telegram Bot API call by method
// ("getUpdates", "sendMessage", ...).
func (m *Metrics) TelegramError(method string) {
	if m == nil {
		return
	}
	m.telegramErrors.WithLabelValues(method).Inc()
}

// SetQueue sets the number of inbound messages in state (QueuePending or
// QueueRunning).
func (m *Metrics) SetQueue(state string, n int) {
	if m == nil {
		return
	}
	m.queueDepth.WithLabelValues(state).Set(float64(n))
}

// Consolidation counts a memory consolidation by outcome (OutcomeOK or
// OutcomeError).
func (m *Metrics) Consolidation(outcome string) {
	if m == nil {
		return
	}
	m.consolidations.WithLabelValues(outcome).Inc()
}

// HeartbeatCheck counts a heartbeat check by its outcome.
func (m *Metrics) HeartbeatCheck(outcome string) {
	if m == nil {
		return
	}
	m.heartbeats.WithLabelValues(outcome).Inc()
}

// HeartbeatTokens adds the tokens of a heartbeat model call.
func (m *Metrics) HeartbeatTokens(prompt, completion int) {
	if m == nil || prompt < 0 || completion < 0 {
		return
	}
	m.heartbeatTok.WithLabelValues("prompt").Add(float64(prompt))
	m.heartbeatTok.WithLabelValues("completion").Add(float64(completion))
}
