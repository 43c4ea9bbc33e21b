package heartbeat_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/openai/openaitest"
	"github.com/nanobot-go/nanobot/heartbeat"
	"github.com/nanobot-go/nanobot/memory"
	"github.com/nanobot-go/nanobot/schedule"
	"github.com/nanobot-go/nanobot/schedule/scheduletest"
	"github.com/nanobot-go/nanobot/turns"
)

type loopTurns struct{ l *agent.Loop }

func (l loopTurns) Answer(ctx context.Context, t agent.Turn, msg agent.Message, resume bool) (agent.Result, error) {
	if resume {
		return l.l.Resume(ctx, t)
	}
	return l.l.Run(ctx, t, msg)
}

// start is a Monday morning.
var start = time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)

type rig struct {
	t     *testing.T
	db    *memory.Store
	file  string
	clock *scheduletest.Clock
	model *openaitest.Scripted
	hb    *heartbeat.Heartbeat
	cfg   heartbeat.Config
	ran   chan string
	seen  int // outbox items seen by waitRun

	mu     sync.Mutex
	checks []string
}

func newRig(t *testing.T, doc string, quiet string) *rig {
	t.Helper()
	dir := t.TempDir()
	db, err := memory.Open(t.Context(), filepath.Join(dir, "nanobot.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	q, err := schedule.ParseQuietHours(quiet)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, db: db, file: filepath.Join(dir, "HEARTBEAT.md"), clock: scheduletest.New(start),
		model: openaitest.NewScripted(), ran: make(chan string, 10)}
	r.cfg = heartbeat.Config{Interval: 30 * time.Minute, File: r.file, Channel: "telegram", Chat: "111", Owner: "111", Quiet: q, Zone: time.UTC}
	if doc != "" {
		r.write(doc)
	}
	r.build()
	return r
}

func (r *rig) write(doc string) {
	if err := os.WriteFile(r.file, []byte(doc), 0o600); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) build() {
	r.t.Helper()
	loop := agent.New(r.model, r.db, nil, agent.Config{})
	engine := turns.New(r.db, loopTurns{loop}, turns.Config{}, nil, turns.Hooks{Queued: func(string) { r.ran <- "" }})
	r.hb = heartbeat.New(r.db, engine, func() agent.Provider { return r.model }, r.clock, r.cfg, nil, heartbeat.Hooks{
		Decision: func(o string) {
			r.mu.Lock()
			r.checks = append(r.checks, o)
			r.mu.Unlock()
		},
	})
	if err := r.hb.Start(r.t.Context()); err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() {
		r.hb.Stop()
		engine.Shutdown()
	})
}

// tick moves the clock by n intervals, one at a time.
func (r *rig) tick(n int) {
	for range n {
		r.clock.Advance(r.cfg.Interval)
	}
}

// decisions and turns count the model's requests of each kind.
func (r *rig) requests() (decisions, turns int) {
	for _, req := range r.model.Requests() {
		if req.ForceTool == "heartbeat" {
			decisions++
		} else {
			turns++
		}
	}
	return decisions, turns
}

func (r *rig) waitRun() string {
	r.t.Helper()
	select {
	case <-r.ran:
		// What the run queued for the chat, if anything.
		out, err := r.db.PendingOutbound(r.t.Context(), "telegram")
		if err != nil {
			r.t.Fatal(err)
		}
		if len(out) == r.seen {
			return ""
		}
		r.seen = len(out)
		return out[len(out)-1].Text
	case <-time.After(60 * time.Second):
		r.t.Fatal("no heartbeat run ended within 60 s")
		return ""
	}
}

func (r *rig) outbox() []string {
	items, err := r.db.PendingOutbound(r.t.Context(), "telegram")
	if err != nil {
		r.t.Fatal(err)
	}
	var out []string
	for _, it := range items {
		out = append(out, it.ChatID+": "+it.Text)
	}
	return out
}

func decide(action string, tasks ...string) openaitest.Reply {
	args := `{"action":"` + action + `"`
	if len(tasks) > 0 {
		args += `,"tasks":["` + strings.Join(tasks, `","`) + `"]`
	}
	return openaitest.Reply{ToolCalls: []agent.ToolCall{{ID: "d", Name: "heartbeat", Arguments: args + "}"}},
		Usage: agent.Usage{PromptTokens: 300, CompletionTokens: 10}}
}

func TestNoModelCallWhenNothingIsDue(t *testing.T) {
	for _, tt := range []struct{ name, doc string }{
		{"missing file", ""},
		{"empty file", "# Heartbeat\n\n<!-- add items here -->\n"},
		{"scheduled items not due", "- [daily 23:00] Summarise the day\n- [fri 17:00] Weekly review\n- [x] Done already\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, tt.doc, "")
			r.tick(8) // four hours
			if n := r.model.RequestCount(); n != 0 {
				t.Errorf("%d model requests over 8 intervals, want 0", n)
			}
			r.mu.Lock()
			defer r.mu.Unlock()
			if len(r.checks) != 8 || r.checks[0] != heartbeat.OutcomeIdle || r.checks[7] != heartbeat.OutcomeIdle {
				t.Errorf("checks %v, want 8 idle", r.checks)
			}
		})
	}
}

func TestDueItemRunsOnce(t *testing.T) {
	r := newRig(t, "- [every 1h] Check the inbox for mail from the bank\n- [fri 17:00] Weekly review\n", "")
	r.model.Script(decide("run", "Check the inbox for mail from the bank"), openaitest.Reply{Text: "The bank wrote: your card arrives Friday."})
	r.tick(1) // 08:30: first seen at 08:30, due at 09:30
	if n := r.model.RequestCount(); n != 0 {
		t.Fatalf("%d requests before the item was due", n)
	}
	r.tick(2) // 09:30: due
	if got := r.waitRun(); got != "The bank wrote: your card arrives Friday." {
		t.Errorf("run queued %q", got)
	}
	if d, turns := r.requests(); d != 1 || turns != 1 {
		t.Errorf("%d decisions and %d turns, want 1 and 1", d, turns)
	}
	if got := r.outbox(); len(got) != 1 || got[0] != "111: The bank wrote: your card arrives Friday." {
		t.Errorf("outbox %q, want the one answer", got)
	}
	req := r.model.Requests()[0]
	if len(req.Tools) != 1 || req.Tools[0].Name != "heartbeat" || len(req.Messages) != 2 {
		t.Errorf("decision request has %d tools and %d messages, want the one decision tool, a system and a user message", len(req.Tools), len(req.Messages))
	}
	body := req.Messages[1].Content
	for _, want := range []string{"Current time: Monday, 2026-03-02 09:30 UTC.", "[every 1h, due now] Check the inbox", "[Friday 17:00, not due] Weekly review", "(never run)"} {
		if !strings.Contains(body, want) {
			t.Errorf("decision request lacks %q:\n%s", want, body)
		}
	}
	turn := r.model.Requests()[1]
	if last := turn.Messages[len(turn.Messages)-1].Content; !strings.Contains(last, "- Check the inbox for mail from the bank\n") {
		t.Errorf("the run's message is %q", last)
	}
	// Not due again until an hour after the run.
	r.tick(1)
	if n := r.model.RequestCount(); n != 2 {
		t.Errorf("%d requests half an hour after the run, want still 2", n)
	}
}

func TestSkipSendsNothing(t *testing.T) {
	r := newRig(t, "- Water the plants when it has been hot\n", "")
	r.model.SetDefault(decide("skip"))
	r.tick(4)
	if d, turns := r.requests(); d != 4 || turns != 0 {
		t.Errorf("%d decisions and %d turns, want one decision per interval and no turn", d, turns)
	}
	if got := r.outbox(); len(got) != 0 {
		t.Errorf("outbox %q after skip", got)
	}
	status := heartbeat.Status(t.Context(), r.db, time.UTC)
	if !strings.Contains(status, "last decision skip at Mon 2026-03-02 10:00 UTC, 310 tokens") {
		t.Errorf("status %q", status)
	}
}

func TestNothingToReportSendsNothing(t *testing.T) {
	r := newRig(t, "- Look at the server's disk space\n", "")
	r.model.Script(decide("run", "Look at the server's disk space"), openaitest.Reply{Text: "HEARTBEAT_OK"})
	r.tick(1)
	if got := r.waitRun(); got != "" {
		t.Errorf("run queued %q, want nothing", got)
	}
	if got := r.outbox(); len(got) != 0 {
		t.Errorf("outbox %q", got)
	}
}

func TestQuietHoursHoldResults(t *testing.T) {
	r := newRig(t, "- [every 1h] Check the news\n", "08:45-10:15")
	r.model.Script(decide("run", "Check the news"), openaitest.Reply{Text: "Nothing new in the news."})
	r.tick(1)                             // 08:30 first seen
	r.clock.Set(start.Add(2 * time.Hour)) // 10:00: due, but quiet
	if n := r.model.RequestCount(); n != 0 {
		t.Fatalf("%d model requests in quiet hours", n)
	}
	if got := r.outbox(); len(got) != 0 {
		t.Fatalf("sent %q in quiet hours", got)
	}
	r.clock.Set(time.Date(2026, 3, 2, 10, 15, 0, 0, time.UTC)) // quiet hours end
	if got := r.waitRun(); got != "Nothing new in the news." {
		t.Errorf("after quiet hours the run queued %q", got)
	}
}

// TestLastRunSurvivesRestart: "every 2h" counts from the last run across a
// restart, and restarting does not make an extra check.
func TestLastRunSurvivesRestart(t *testing.T) {
	r := newRig(t, "- [every 2h] Back up the notes\n", "")
	r.model.SetDefault(decide("skip"))
	r.tick(1)                                 // 08:30: first seen
	r.clock.Set(start.Add(150 * time.Minute)) // 10:30: due, decided (skip)
	if d, _ := r.requests(); d != 1 {
		t.Fatalf("%d decisions, want 1", d)
	}
	r.hb.Stop()
	r.build()                             // a new process
	r.clock.Set(start.Add(4 * time.Hour)) // 12:00: 1h30 after the last run
	if d, _ := r.requests(); d != 1 {
		t.Errorf("%d decisions after the restart, want still 1", d)
	}
	r.clock.Set(start.Add(270 * time.Minute)) // 12:30: two hours after
	if d, _ := r.requests(); d != 2 {
		t.Errorf("%d decisions two hours after the last run, want 2", d)
	}
}

// BenchmarkHeartbeatDay runs two days of checks at the default 30 minutes
// and reports the model requests and tokens of the second (the first sees
// the items appear), for an empty file, a file of scheduled items only (a
// daily one comes due once a day, a weekly one not) and one unscheduled
// item. Every decision is "skip", so the figures are the cost of deciding;
// a "run" adds one turn. Tokens are the daemon's own estimate of each
// decision request and reply.
func BenchmarkHeartbeatDay(b *testing.B) {
	for _, bc := range []struct{ name, doc string }{
		{"empty", ""},
		{"scheduled", "- [daily 08:30] Send me the weather for today\n- [fri 17:00] Weekly review\n"},
		{"unscheduled", "- Water the plants when it has been hot\n"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var requests, tokens int
			for b.Loop() {
				requests, tokens = heartbeatDay(b, bc.doc)
			}
			b.ReportMetric(float64(requests), "requests/day")
			b.ReportMetric(float64(tokens), "tokens/day")
		})
	}
}

func heartbeatDay(b *testing.B, doc string) (requests, tokens int) {
	dir := b.TempDir()
	db, err := memory.Open(b.Context(), filepath.Join(dir, "nanobot.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	file := filepath.Join(dir, "HEARTBEAT.md")
	if doc != "" {
		os.WriteFile(file, []byte(doc), 0o600)
	}
	clock := scheduletest.New(start)
	model := &estimating{next: openaitest.NewScripted()}
	model.next.SetDefault(openaitest.Reply{ToolCalls: []agent.ToolCall{{ID: "d", Name: "heartbeat", Arguments: `{"action":"skip"}`}}})
	engine := turns.New(db, loopTurns{agent.New(model, db, nil, agent.Config{})}, turns.Config{}, nil, turns.Hooks{})
	defer engine.Shutdown()
	hb := heartbeat.New(db, engine, func() agent.Provider { return model }, clock,
		heartbeat.Config{Interval: 30 * time.Minute, File: file, Channel: "telegram", Chat: "111", Zone: time.UTC}, nil, heartbeat.Hooks{})
	if err := hb.Start(b.Context()); err != nil {
		b.Fatal(err)
	}
	defer hb.Stop()
	for range 48 {
		clock.Advance(30 * time.Minute)
	}
	firstRequests, firstTokens := model.next.RequestCount(), model.tokens
	for range 48 {
		clock.Advance(30 * time.Minute)
	}
	return model.next.RequestCount() - firstRequests, model.tokens - firstTokens
}

// estimating counts tokens of requests and replies with the daemon's own
// estimate.
type estimating struct {
	next   *openaitest.Scripted
	tokens int
}

func (e *estimating) Complete(ctx context.Context, req agent.Request) (agent.Response, error) {
	for _, m := range req.Messages {
		e.tokens += agent.EstimateTokens(m)
	}
	for _, t := range req.Tools {
		e.tokens += (len(t.Name) + len(t.Description) + len(t.Parameters)) / 4
	}
	resp, err := e.next.Complete(ctx, req)
	e.tokens += agent.EstimateTokens(resp.Message)
	return resp, err
}

// TestFailedDecisionTriesAgain: a due item whose decision call failed is
// still due at the next check.
func TestFailedDecisionTriesAgain(t *testing.T) {
	r := newRig(t, "- [every 1h] Check the backups\n", "")
	r.model.Script(openaitest.Reply{Status: 503}, decide("skip"))
	r.tick(1)                                // 08:30: first seen
	r.clock.Set(start.Add(90 * time.Minute)) // 09:30: due; the call fails
	r.tick(1)                                // 10:00: tried again
	if d, _ := r.requests(); d != 2 {
		t.Errorf("%d decisions, want 2: the failed one and the retry", d)
	}
	r.tick(1) // 10:30: decided at 10:00, not due again
	if d, _ := r.requests(); d != 2 {
		t.Errorf("%d decisions after a successful one, want still 2", d)
	}
	if status := heartbeat.Status(t.Context(), r.db, time.UTC); !strings.Contains(status, "last decision skip at Mon 2026-03-02 10:00 UTC") {
		t.Errorf("status %q", status)
	}
}
