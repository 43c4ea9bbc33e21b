// Package heartbeat looks at the workspace's checklist (HEARTBEAT.md) every
// interval and does what is due, at as little cost as possible: a missing
// or empty file, or one whose only items are scheduled items that are not
// due, costs no model call at all. Otherwise one small decision call (no
// chat history, one decision tool) says whether to run; only then does a
// full turn run, in session "heartbeat", and only its answer is sent, unless
// it says there is nothing to report. Quiet hours hold results back until
// they end.
package heartbeat

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/schedule"
)

// Session is the session of heartbeat runs.
const Session = "heartbeat"

// Channel is the inbox channel a run is recorded under before it starts.
const Channel = "heartbeat"

// NothingToReport is the answer of a run with nothing worth sending.
const NothingToReport = "HEARTBEAT_OK"

// Decision outcomes, for metrics and status.
const (
	OutcomeIdle  = "idle"  // nothing due: no model call
	OutcomeQuiet = "quiet" // in quiet hours: no model call
	OutcomeSkip  = "skip"  // the model decided nothing needs doing now
	OutcomeRun   = "run"   // the model decided to run tasks
	OutcomeError = "error" // the decision call failed
)

// State keys.
const (
	keyItems    = "heartbeat.items"    // per item: when it last ran and when it was first seen
	keyChecked  = "heartbeat.checked"  // the last check: when and its outcome
	keyDecision = "heartbeat.decision" // the last model decision
)

// Config is what the heartbeat does; it can change while it runs.
type Config struct {
	Interval time.Duration // 0: off
	File     string        // absolute path of the checklist
	Channel  string        // where results go: "telegram"
	Chat     string
	Owner    string // the user a run acts for
	Quiet    schedule.QuietHours
	Zone     *time.Location
	// ShutdownTimeout is how long a running run may finish on Stop.
	ShutdownTimeout time.Duration
}

// Store keeps the heartbeat's state and records runs before they start;
// the daemon's SQLite store satisfies it.
type Store interface {
	State(ctx context.Context, key string) (string, error)
	SetState(ctx context.Context, key, value string) error
	RecordInbound(ctx context.Context, it channels.InboxItem) (id int64, inserted bool, err error)
	PendingInbound(ctx context.Context, channel string) ([]channels.InboxItem, error)
	FinishTurn(ctx context.Context, t agent.Turn, text string) error
}

// Turns runs a heartbeat's turn (see jobs.Turns).
type Turns interface {
	Answer(ctx context.Context, t agent.Turn, msg agent.Message, resume bool) (agent.Result, error)
}

// Hooks observe the heartbeat; all are optional and must be quick.
type Hooks struct {
	Decision func(outcome string) // each check, by outcome
	Tokens   func(u agent.Usage)  // of decision calls
	// Ran is told when a run ended, with what it queued for the chat (""
	// when nothing).
	Ran func(queued string)
}

// Heartbeat is the periodic check. Create it with New, then Start it.
type Heartbeat struct {
	store    Store
	turns    Turns
	provider func() agent.Provider
	clock    schedule.Clock
	log      *slog.Logger
	hooks    Hooks

	mu      sync.Mutex
	cfg     Config
	timer   schedule.Stopper
	running bool // a run's turn is going on
	started bool
	stopped bool
	base    context.Context
	cancel  context.CancelCauseFunc
	wg      sync.WaitGroup
}

// New returns a heartbeat; provider gives the model for decision calls.
func New(store Store, turns Turns, provider func() agent.Provider, clock schedule.Clock, cfg Config, log *slog.Logger, hooks Hooks) *Heartbeat {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Heartbeat{store: store, turns: turns, provider: provider, clock: clock, log: log, hooks: hooks,
		cfg: withDefaults(cfg), base: context.Background()}
}

func withDefaults(c Config) Config {
	if c.Zone == nil {
		c.Zone = time.Local
	}
	if c.ShutdownTimeout <= 0 {
		c.ShutdownTimeout = 30 * time.Second
	}
	return c
}

func (h *Heartbeat) config() Config {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cfg
}

// SetConfig applies a new config; the next check follows its interval.
func (h *Heartbeat) SetConfig(c Config) {
	h.mu.Lock()
	old := h.cfg.Interval
	h.cfg = withDefaults(c)
	started := h.started && !h.stopped
	h.mu.Unlock()
	if started && c.Interval != old {
		h.arm(h.nextCheck(context.Background()))
	}
}

// Start finishes runs a restart interrupted and sets the first check: one
// interval after the last check before the restart, so restarting often
// costs nothing extra.
func (h *Heartbeat) Start(ctx context.Context) error {
	h.mu.Lock()
	h.base, h.cancel = context.WithCancelCause(context.WithoutCancel(ctx))
	h.started = true
	h.mu.Unlock()
	items, err := h.store.PendingInbound(ctx, Channel)
	if err != nil {
		return fmt.Errorf("load pending heartbeat runs: %w", err)
	}
	for _, it := range items {
		var p runPayload
		if err := json.Unmarshal(it.Payload, &p); err != nil {
			h.log.Error("unreadable heartbeat run; closing it", "inbox_id", it.ID, "err", err)
			_ = h.store.FinishTurn(ctx, agent.Turn{Inbox: []int64{it.ID}}, "")
			continue
		}
		h.startRun(it, p)
	}
	h.arm(h.nextCheck(ctx))
	return nil
}

// nextCheck is when the next check is due: an interval after the last
// one, or after now when there was none.
func (h *Heartbeat) nextCheck(ctx context.Context) time.Time {
	cfg := h.config()
	now := h.clock.Now()
	if cfg.Interval <= 0 {
		return time.Time{}
	}
	var c checked
	if raw, err := h.store.State(ctx, keyChecked); err == nil && raw != "" && json.Unmarshal([]byte(raw), &c) == nil {
		if next := c.At.Add(cfg.Interval); next.After(now) {
			return next
		}
		return now
	}
	return now.Add(cfg.Interval)
}

// arm sets the one timer for the next check (none for a zero time).
func (h *Heartbeat) arm(at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.timer != nil {
		h.timer.Stop()
		h.timer = nil
	}
	if h.stopped || at.IsZero() {
		return
	}
	h.timer = h.clock.AfterFunc(at.Sub(h.clock.Now()), h.check)
}

// Stop ends the checks; a running run gets ShutdownTimeout to finish and
// is then interrupted (it resumes on the next start).
func (h *Heartbeat) Stop() {
	h.mu.Lock()
	h.stopped = true
	if h.timer != nil {
		h.timer.Stop()
		h.timer = nil
	}
	timeout, cancel := h.cfg.ShutdownTimeout, h.cancel
	h.mu.Unlock()
	done := make(chan struct{})
	go func() {
		h.wg.Wait()
		close(done)
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		h.log.Warn("heartbeat run still running at shutdown is interrupted; it resumes on the next start")
		if cancel != nil {
			cancel(errors.New("shutting down"))
		}
		<-done
	}
	if cancel != nil {
		cancel(nil)
	}
}

// itemState is what is kept per checklist item.
type itemState struct {
	Run  time.Time `json:"run,omitzero"`  // when it last ran
	Seen time.Time `json:"seen,omitzero"` // when it was first in the file
}

// since is what a scheduled item's due-ness counts from.
func (s itemState) since() time.Time {
	if s.Run.After(s.Seen) {
		return s.Run
	}
	return s.Seen
}

type checked struct {
	At      time.Time `json:"at"`
	Outcome string    `json:"outcome"`
	Due     int       `json:"due,omitempty"`
}

// Decision is the last decision the model made, as kept for status.
type Decision struct {
	At      time.Time   `json:"at"`
	Outcome string      `json:"outcome"`
	Tasks   []string    `json:"tasks,omitempty"`
	Usage   agent.Usage `json:"usage"`
	Error   string      `json:"error,omitempty"`
}

// check is one look at the checklist; it sets the timer for the next.
func (h *Heartbeat) check() {
	h.mu.Lock()
	if h.stopped {
		h.mu.Unlock()
		return
	}
	h.wg.Add(1) // Stop waits for a check under way, decision call included
	h.mu.Unlock()
	defer h.wg.Done()
	cfg := h.config()
	now := h.clock.Now()
	next := now.Add(cfg.Interval)
	defer func() {
		if cfg.Interval > 0 {
			h.arm(next)
		}
	}()
	if cfg.Interval <= 0 {
		return
	}
	ctx, cancel := context.WithTimeout(h.base, 5*time.Minute)
	defer cancel()
	if cfg.Quiet.In(now, cfg.Zone) {
		next = cfg.Quiet.End(now, cfg.Zone)
		h.record(ctx, checked{At: now, Outcome: OutcomeQuiet})
		return
	}
	h.mu.Lock()
	busy := h.running
	h.mu.Unlock()
	if busy {
		h.log.Info("heartbeat run still going; this check is skipped")
		return
	}

	doc, err := os.ReadFile(cfg.File)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		h.log.Warn("read heartbeat file", "path", cfg.File, "err", err)
	}
	items := schedule.ParseChecklist(string(doc))
	states := h.loadItems(ctx)
	var due, judge []schedule.Item
	changed := false
	kept := make(map[string]itemState, len(items))
	for _, it := range items {
		st, ok := states[it.Key]
		if !ok {
			st, changed = itemState{Seen: now}, true
		}
		kept[it.Key] = st
		switch {
		case !it.Scheduled:
			judge = append(judge, it)
		case it.Due(st.since(), now, cfg.Zone):
			due = append(due, it)
		default:
			if slot := it.NextSlot(st.since(), now, cfg.Zone); slot.After(now) && slot.Before(next) {
				next = slot // a scheduled item comes due before the next check: look then
			}
		}
	}
	changed = changed || len(kept) != len(states)
	if len(due) == 0 && len(judge) == 0 {
		if changed {
			h.saveItems(ctx, kept)
		}
		h.record(ctx, checked{At: now, Outcome: OutcomeIdle})
		return
	}

	d := h.decide(ctx, cfg, string(doc), items, kept, due, now)
	if d.Outcome != OutcomeError {
		// Their slots are handled, run or skipped; after a failed
		// decision they are still due at the next check.
		for _, it := range due {
			st := kept[it.Key]
			st.Run = now
			kept[it.Key] = st
		}
	}
	if d.Outcome == OutcomeRun {
		for _, it := range append(judge, due...) {
			if named(d.Tasks, it.Text) {
				st := kept[it.Key]
				st.Run = now
				kept[it.Key] = st
			}
		}
	}
	h.saveItems(ctx, kept)
	h.record(ctx, checked{At: now, Outcome: d.Outcome, Due: len(due)})
	if d.Outcome != OutcomeRun {
		return
	}
	if len(d.Tasks) == 0 {
		for _, it := range due {
			d.Tasks = append(d.Tasks, it.Text)
		}
	}
	p := runPayload{At: now, Tasks: d.Tasks}
	data, _ := json.Marshal(p)
	id, _, err := h.store.RecordInbound(ctx, channels.InboxItem{Channel: Channel, UpdateID: now.UnixMilli(),
		ChatID: cfg.Chat, Payload: data, State: channels.InboxPending, ReceivedAt: now})
	if err != nil {
		h.log.Error("record heartbeat run; it is not run", "err", err)
		return
	}
	h.startRun(channels.InboxItem{ID: id, Channel: Channel, ChatID: cfg.Chat, Payload: data, State: channels.InboxPending}, p)
}

// named reports whether a task the model named is the item.
func named(tasks []string, item string) bool {
	norm := func(s string) string { return strings.ToLower(strings.Join(strings.Fields(s), " ")) }
	it := norm(item)
	for _, t := range tasks {
		if t := norm(t); t != "" && (strings.Contains(it, t) || strings.Contains(t, it)) {
			return true
		}
	}
	return false
}

func (h *Heartbeat) loadItems(ctx context.Context) map[string]itemState {
	out := map[string]itemState{}
	raw, err := h.store.State(ctx, keyItems)
	if err != nil {
		h.log.Warn("read heartbeat item state", "err", err)
		return out
	}
	if raw != "" {
		if err := json.Unmarshal([]byte(raw), &out); err != nil {
			h.log.Warn("heartbeat item state is unreadable; starting afresh", "err", err)
			return map[string]itemState{}
		}
	}
	return out
}

func (h *Heartbeat) saveItems(ctx context.Context, items map[string]itemState) {
	data, _ := json.Marshal(items)
	if err := h.store.SetState(ctx, keyItems, string(data)); err != nil {
		h.log.Warn("save heartbeat item state", "err", err)
	}
}

func (h *Heartbeat) record(ctx context.Context, c checked) {
	if h.hooks.Decision != nil {
		h.hooks.Decision(c.Outcome)
	}
	data, _ := json.Marshal(c)
	if err := h.store.SetState(ctx, keyChecked, string(data)); err != nil {
		h.log.Warn("save heartbeat check", "err", err)
	}
	h.log.Debug("heartbeat check", "outcome", c.Outcome, "due", c.Due)
}

// runPayload is what a recorded run holds.
type runPayload struct {
	At    time.Time `json:"at"`
	Tasks []string  `json:"tasks"`
}

// startRun runs a recorded run's turn in the background.
func (h *Heartbeat) startRun(it channels.InboxItem, p runPayload) {
	h.mu.Lock()
	if h.stopped {
		h.mu.Unlock()
		return
	}
	h.running = true
	ctx := h.base
	h.wg.Add(1)
	h.mu.Unlock()
	go func() {
		defer h.wg.Done()
		defer func() {
			h.mu.Lock()
			h.running = false
			h.mu.Unlock()
		}()
		h.run(ctx, it, p)
	}()
}

func (h *Heartbeat) run(ctx context.Context, it channels.InboxItem, p runPayload) {
	cfg := h.config()
	t := agent.Turn{
		ID:              rand.Text()[:12],
		Session:         Session,
		Channel:         cfg.Channel,
		ChatID:          cfg.Chat,
		SenderID:        cfg.Owner,
		Inbox:           []int64{it.ID},
		Mirror:          cfg.Channel + ":" + cfg.Chat,
		NothingToReport: NothingToReport,
	}
	log := h.log.With("turn_id", t.ID, "chat_id", cfg.Chat)
	var tasks strings.Builder
	for _, task := range p.Tasks {
		tasks.WriteString("- " + task + "\n")
	}
	msg := agent.Message{Role: agent.RoleUser, CreatedAt: p.At, Content: fmt.Sprintf(
		"[Heartbeat, %s. Your checklist (%s) has this to do now:\n%sDo it. Your answer is sent to the chat as a message from you. If there is nothing worth telling the user, answer exactly %s and nothing is sent.]",
		p.At.In(cfg.Zone).Format(schedule.ShowFormat), fileName(cfg.File), tasks.String(), NothingToReport)}
	res, err := h.turns.Answer(agent.WithTurn(ctx, t), t, msg, it.State == channels.InboxStarted)
	text := ""
	switch {
	case err != nil && ctx.Err() != nil:
		log.Info("heartbeat run interrupted; it resumes on the next start")
		return
	case err != nil:
		log.Error("heartbeat run failed", "err", err)
	case res.Stop == "":
		log.Warn("heartbeat run did not run", "reason", res.Text)
	case !res.Quiet:
		text = res.Text
	default:
		log.Info("heartbeat run: nothing to report")
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if err := h.store.FinishTurn(fctx, t, text); err != nil {
		log.Error("close heartbeat run", "err", err)
		return
	}
	if h.hooks.Ran != nil {
		h.hooks.Ran(text)
	}
}

func fileName(path string) string {
	if i := strings.LastIndexAny(path, `/\`); i >= 0 {
		return path[i+1:]
	}
	return path
}

// StateReader is what Status reads.
type StateReader interface {
	State(ctx context.Context, key string) (string, error)
}

// Status says what the heartbeat last did: its last check and its last
// decision, with their times in zone.
func Status(ctx context.Context, st StateReader, zone *time.Location) string {
	var c checked
	var d Decision
	if raw, err := st.State(ctx, keyChecked); err != nil || raw == "" || json.Unmarshal([]byte(raw), &c) != nil {
		return "no check yet"
	}
	out := "last check " + c.At.In(zone).Format(schedule.ShowFormat) + ": " + describeOutcome(c.Outcome)
	if raw, err := st.State(ctx, keyDecision); err == nil && raw != "" && json.Unmarshal([]byte(raw), &d) == nil {
		out += "; last decision " + d.Outcome
		if len(d.Tasks) > 0 {
			out += fmt.Sprintf(" (%d task%s)", len(d.Tasks), plural(len(d.Tasks)))
		}
		out += fmt.Sprintf(" at %s, %d tokens", d.At.In(zone).Format(schedule.ShowFormat), d.Usage.Total())
	} else {
		out += "; no model decision yet"
	}
	return out
}

func describeOutcome(o string) string {
	switch o {
	case OutcomeIdle:
		return "nothing due, no model call"
	case OutcomeQuiet:
		return "quiet hours, no model call"
	case OutcomeSkip:
		return "the model decided nothing needs doing"
	case OutcomeRun:
		return "the model decided to run"
	case OutcomeError:
		return "the decision call failed"
	}
	return o
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
