package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/openai/openaitest"
	"github.com/nanobot-go/nanobot/schedule/scheduletest"
)

// TestHeartbeatThroughTheGateway: nothing due costs no model call; a due
// item costs one decision and one turn whose answer reaches the owner's
// chat; /status and nanobot status show the last decision.
func TestHeartbeatThroughTheGateway(t *testing.T) {
	clock := scheduletest.New(cronStart)
	dir := t.TempDir()
	ws := filepath.Join(dir, "workspace")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "HEARTBEAT.md"), []byte("# Checks\n\n- [daily 09:00] Tell me the weather for today\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := startGatewayIn(t, dir, clock, map[string]string{"heartbeat.interval": "30m"})
	h.model.Script(openaitest.Reply{Text: "Hello."})
	h.askFor(owner, "hi", "Hello.") // the gateway is up

	clock.Set(cronStart.Add(30 * time.Minute)) // 08:30: the item is not due
	if n := h.model.RequestCount(); n != 1 {
		t.Fatalf("%d model requests with nothing due, want 1 (the greeting)", n)
	}
	h.model.Script(
		openaitest.Reply{ToolCalls: []agent.ToolCall{{ID: "d", Name: "heartbeat", Arguments: `{"action":"run","tasks":["Tell me the weather for today"]}`}},
			Usage: agent.Usage{PromptTokens: 280, CompletionTokens: 12}},
		openaitest.Reply{Text: "Sunny, 18 °C."},
	)
	clock.Set(cronStart.Add(time.Hour)) // 09:00: due
	waitSentContaining(t, h.tg, owner, "Sunny, 18 °C.")
	reqs := h.model.Requests()
	if len(reqs) != 3 || reqs[1].ToolChoice == nil || len(reqs[1].Tools) != 1 || reqs[1].Tools[0].Function.Name != "heartbeat" {
		t.Fatalf("want a greeting, one forced decision call with the one heartbeat tool, one turn; got %d requests", len(reqs))
	}
	if n := len(reqs[1].Messages); n != 2 {
		t.Errorf("the decision call has %d messages, want 2 (its instructions and the checklist): no chat history", n)
	}

	want := "Heartbeat: every 30m; last check Sat 2026-03-28 09:00 UTC: the model decided to run; last decision run (1 task) at Sat 2026-03-28 09:00 UTC, 292 tokens"
	h.askFor(owner, "/status", want)
	r := runCLI(t.Context(), "", "-c", h.cfg, "status")
	if !strings.Contains(r.stdout, "last decision run (1 task) at Sat 2026-03-28 09:00 UTC") {
		t.Errorf("nanobot status:\n%s%s", r.stdout, r.stderr)
	}
}
