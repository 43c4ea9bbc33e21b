//go:build bench

// Command metrics is the baseline plus github.com/VictoriaMetrics/metrics
// as admin uses it: a set of counters, gauges and a Prometheus histogram
// with metadata, written in the exposition format with the process metrics.
package main

import (
	"net/http"
	"os"

	"github.com/VictoriaMetrics/metrics"

	"github.com/nanobot-go/nanobot/bench/depcost/internal/base"
)

func main() {
	_, _, stop := base.Run()
	defer stop()
	metrics.ExposeMetadata(true)
	set := metrics.NewSet()
	h := set.NewPrometheusHistogramExt("nanobot_model_call_duration_seconds", []float64{0.25, 1, 5, 30, 120})
	h.Update(0.3)
	set.GetOrCreateCounter(`nanobot_turns_total{outcome="answered"}`).Inc()
	set.GetOrCreateGauge(`nanobot_queue{state="pending"}`, nil).Set(2)
	http.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		set.WritePrometheus(w)
		metrics.WriteProcessMetrics(w)
	})
	set.WritePrometheus(os.Stdout)
}
