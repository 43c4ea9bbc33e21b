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
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/schedule"
	"github.com/nanobot-go/nanobot/session"
	"github.com/nanobot-go/nanobot/turns"
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
	RecordInbound(ctx context.Context, it turns.InboxItem) (id int64, inserted bool, err error)
}

// Turns is the turn engine that answers the runs, in order with the
// chat's other turns (see jobs.Turns).
type Turns interface {
	Attach(ctx context.Context, src turns.Source, channels ...string) error
	Add(ctx context.Context, it turns.InboxItem)
	Has(id int64) bool
}

// Hooks observe the heartbeat; all are optional and must be quick.
type Hooks struct {
	Decision func(outcome string) // each check, by outcome
	Tokens   func(u agent.Usage)  // of decision calls
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
	run     int64 // the inbox item of the last run handed to the engine
	started bool
	stopped bool
	cancel  context.CancelFunc // of the check under way
	wg      sync.WaitGroup     // the check under way
}

// New returns a heartbeat; provider gives the model for decision calls.
func New(store Store, turns Turns, provider func() agent.Provider, clock schedule.Clock, cfg Config, log *slog.Logger, hooks Hooks) *Heartbeat {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Heartbeat{store: store, turns: turns, provider: provider, clock: clock, log: log, hooks: hooks,
		cfg: withDefaults(cfg)}
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

// Start hands the runs a restart interrupted to the turn engine and sets
// the first check: one interval after the last check before the restart,
// so restarting often costs nothing extra.
func (h *Heartbeat) Start(ctx context.Context) error {
	h.mu.Lock()
	h.started = true
	h.mu.Unlock()
	if err := h.turns.Attach(ctx, source{h}, Channel); err != nil {
		return err
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

// Stop ends the checks; a check under way gets ShutdownTimeout to finish
// its decision and is then cancelled. Runs are the turn engine's to finish
// or interrupt.
func (h *Heartbeat) Stop() {
	h.mu.Lock()
	h.stopped = true
	if h.timer != nil {
		h.timer.Stop()
		h.timer = nil
	}
	timeout := h.cfg.ShutdownTimeout
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
		h.log.Warn("heartbeat check still deciding at shutdown is cancelled")
		h.mu.Lock()
		if h.cancel != nil {
			h.cancel()
		}
		h.mu.Unlock()
		<-done
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
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	h.mu.Lock()
	h.cancel = cancel
	h.mu.Unlock()
	if cfg.Quiet.In(now, cfg.Zone) {
		next = cfg.Quiet.End(now, cfg.Zone)
		h.record(ctx, checked{At: now, Outcome: OutcomeQuiet})
		return
	}
	h.mu.Lock()
	last := h.run
	h.mu.Unlock()
	if last != 0 && h.turns.Has(last) {
		h.log.Info("heartbeat run still going; this check is skipped")
		return
	}

	doc, err := os.ReadFile(cfg.File)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		h.log.Warn("read heartbeat file", "path", cfg.File, "err", err)
	}
	items := schedule.ParseChecklist(string(doc))
	kept, due, judge, changed := h.survey(ctx, cfg, items, now, &next)
	if len(due) == 0 && len(judge) == 0 {
		if changed {
			h.saveItems(ctx, kept)
		}
		h.record(ctx, checked{At: now, Outcome: OutcomeIdle})
		return
	}

	d := h.decide(ctx, cfg, string(doc), items, kept, due, now)
	markHandled(kept, due, judge, d, now)
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
	h.recordRun(ctx, cfg, runPayload{At: now, Tasks: d.Tasks})
}

// markHandled records which items the decision handled at now.
func markHandled(kept map[string]itemState, due, judge []schedule.Item, d Decision, now time.Time) {
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
}

// recordRun records a run before it starts and hands it to the turn
// engine.
func (h *Heartbeat) recordRun(ctx context.Context, cfg Config, p runPayload) {
	data, _ := json.Marshal(p)
	it := turns.InboxItem{Channel: Channel, UpdateID: p.At.UnixMilli(), ChatID: cfg.Chat, Payload: data,
		State: turns.InboxPending, ReceivedAt: p.At}
	id, _, err := h.store.RecordInbound(ctx, it)
	if err != nil {
		h.log.Error("record heartbeat run; it is not run", "err", err)
		return
	}
	it.ID = id
	h.turns.Add(ctx, it)
}

// survey sorts the checklist's items: the scheduled ones due now, the
// unscheduled ones the model judges, and the state kept per item (changed
// when items came or went). A scheduled item due before *next moves the
// next check to its slot.
func (h *Heartbeat) survey(ctx context.Context, cfg Config, items []schedule.Item, now time.Time, next *time.Time) (kept map[string]itemState, due, judge []schedule.Item, changed bool) {
	states := h.loadItems(ctx)
	kept = make(map[string]itemState, len(items))
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
			if slot := it.NextSlot(st.since(), now, cfg.Zone); slot.After(now) && slot.Before(*next) {
				*next = slot // a scheduled item comes due before the next check: look then
			}
		}
	}
	return kept, due, judge, changed || len(kept) != len(states)
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

// source is the heartbeat's side of the turn engine: a recorded run
// becomes a turn in the heartbeat's session, in order with the chat's
// turns; its answer goes to the chat unless it is NothingToReport.
type source struct{ h *Heartbeat }

func (src source) Prepare(_ context.Context, it turns.InboxItem) turns.Job {
	h := src.h
	var p runPayload
	if err := json.Unmarshal(it.Payload, &p); err != nil {
		h.log.Error("unreadable heartbeat run; closing it", "inbox_id", it.ID, "err", err)
		return turns.Job{Now: true}
	}
	h.mu.Lock()
	h.run = max(h.run, it.ID)
	h.mu.Unlock()
	cfg := h.config()
	return turns.Job{Chat: session.Chat(cfg.Channel, cfg.Chat).String(), Text: "heartbeat", Data: p}
}

func (src source) Plan(_ context.Context, batch []*turns.Job) turns.Plan {
	h := src.h
	it, p := batch[0].Item, batch[0].Data.(runPayload)
	cfg := h.config()
	t := agent.Turn{
		Session:         Session,
		Channel:         cfg.Channel,
		ChatID:          cfg.Chat,
		SenderID:        cfg.Owner,
		Mirror:          session.Chat(cfg.Channel, cfg.Chat).String(),
		NothingToReport: NothingToReport,
	}
	log := h.log.With("chat_id", cfg.Chat)
	var tasks strings.Builder
	for _, task := range p.Tasks {
		tasks.WriteString("- " + task + "\n")
	}
	msg := agent.Message{Role: agent.RoleUser, CreatedAt: p.At, Content: fmt.Sprintf(
		"[Heartbeat, %s. Your checklist (%s) has this to do now:\n%sDo it. Your answer is sent to the chat as a message from you. If there is nothing worth telling the user, answer exactly %s and nothing is sent.]",
		p.At.In(cfg.Zone).Format(schedule.ShowFormat), fileName(cfg.File), tasks.String(), NothingToReport)}
	told := func(res agent.Result, err error) string {
		switch {
		case err != nil:
			log.Error("heartbeat run failed", "err", err)
		case res.Stop == "":
			log.Warn("heartbeat run did not run", "reason", res.Text)
		case !res.Quiet:
			return res.Text
		default:
			log.Info("heartbeat run: nothing to report")
		}
		return ""
	}
	return turns.Plan{Turn: t, Message: msg, Resume: it.State == turns.InboxStarted, Told: told}
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
