package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/schedule"
	"github.com/nanobot-go/nanobot/session"
	"github.com/nanobot-go/nanobot/turns"
)

// Channel is the inbox channel of recorded firings.
const Channel = "cron"

// retryIn is how soon a job whose firing could not be recorded is tried
// again.
const retryIn = time.Minute

// payload is what a recorded firing holds: everything its turn needs, even
// after the job is removed.
type payload struct {
	JobID     int64     `json:"job_id"`
	Channel   string    `json:"channel"`
	ChatID    string    `json:"chat_id"`
	CreatedBy string    `json:"created_by,omitempty"`
	Message   string    `json:"message"`
	Schedule  string    `json:"schedule"`
	Zone      string    `json:"zone"`
	CreatedAt time.Time `json:"created_at"`
	Slot      time.Time `json:"slot"`
	Manual    bool      `json:"manual,omitempty"`
}

// Start hands the firings a restart interrupted to the turn engine, deals
// with the runs missed while the daemon was down (cfg.Missed), and
// schedules every job. Firings are recorded and handed to the engine at
// their time until Stop.
func (s *Service) Start(ctx context.Context) error {
	s.mu.Lock()
	started := s.started
	s.mu.Unlock()
	if started {
		return errors.New("jobs already started")
	}
	if err := s.turns.Attach(ctx, source{s}, Channel); err != nil {
		return err
	}

	version, err := s.store.JobsVersion(ctx)
	if err != nil {
		return fmt.Errorf("read jobs version: %w", err)
	}
	slots, err := s.store.JobSlots(ctx)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.started, s.version = true, version
	s.mu.Unlock()
	cfg := s.config()
	now := s.clock.Now()
	missed := 0
	for _, sl := range slots {
		if sl.NextRun.After(now) {
			s.timers.Set(sl.ID, sl.NextRun)
			continue
		}
		missed++
		if cfg.Missed == MissedSkip {
			s.skip(ctx, sl, now)
			continue
		}
		s.timers.Set(sl.ID, sl.NextRun) // due: fires at once, one firing for all its missed slots
	}
	s.log.Info("jobs scheduled", "jobs", len(slots), "missed", missed, "missed_policy", cfg.Missed)
	return nil
}

// skip moves a missed job to its first slot after now without firing it.
func (s *Service) skip(ctx context.Context, sl Slot, now time.Time) {
	j, err := s.store.Job(ctx, sl.ID)
	if err != nil {
		s.log.Error("read job", "job_id", sl.ID, "err", err)
		return
	}
	spec, err := decode(j)
	if err != nil {
		s.log.Error("unreadable job schedule", "job_id", j.ID, "err", err)
		return
	}
	next := spec.Next(now)
	if err := s.store.SkipJob(ctx, j.ID, sl.NextRun, next); err != nil {
		s.log.Error("skip missed run", "job_id", j.ID, "err", err)
		return
	}
	s.log.Info("missed run skipped", "job_id", j.ID, "slot", sl.NextRun, "next_run", next)
	if !next.IsZero() {
		s.timers.Set(j.ID, next)
	}
}

// Resync brings the schedule in line with the store when jobs were added
// or removed by another process (the command line). It is cheap when
// nothing changed.
func (s *Service) Resync(ctx context.Context) error {
	v, err := s.store.JobsVersion(ctx)
	if err != nil {
		return err
	}
	s.mu.Lock()
	same := v == s.version || !s.started || s.stopping
	s.mu.Unlock()
	if same {
		return nil
	}
	slots, err := s.store.JobSlots(ctx)
	if err != nil {
		return err
	}
	keep := make(map[int64]bool, len(slots))
	for _, sl := range slots {
		keep[sl.ID] = true
		s.timers.Set(sl.ID, sl.NextRun)
	}
	for _, id := range s.timers.IDs() {
		if !keep[id] {
			s.timers.Remove(id)
		}
	}
	s.mu.Lock()
	s.version = v
	s.mu.Unlock()
	s.log.Info("jobs reloaded", "jobs", len(slots))
	return nil
}

// due is the timer's call for job id: when the job's stored next run has
// come, the firing is recorded and queued, and the job set for its next
// slot.
func (s *Service) due(id int64, _ time.Time) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	j, err := s.store.Job(ctx, id)
	switch {
	case errors.Is(err, ErrNotFound):
		return // removed
	case err != nil:
		s.log.Error("read job; trying again", "job_id", id, "err", err, "retry_in", retryIn)
		s.timers.Set(id, s.clock.Now().Add(retryIn))
		return
	case j.NextRun.IsZero() || j.Paused:
		return // done, or paused: resuming sets its timer again
	}
	now := s.clock.Now()
	if j.NextRun.After(now) {
		s.timers.Set(id, j.NextRun) // moved since it was scheduled
		return
	}
	spec, err := decode(j)
	if err != nil {
		s.log.Error("unreadable job schedule", "job_id", id, "err", err)
		return
	}
	next := spec.Next(now)
	it, err := s.fire(ctx, j, j.NextRun, next, false)
	switch {
	case errors.Is(err, ErrStale) || errors.Is(err, ErrNotFound):
		s.log.Info("job changed before it fired", "job_id", id)
		if j, err := s.store.Job(ctx, id); err == nil && !j.NextRun.IsZero() && !j.Paused {
			s.timers.Set(id, j.NextRun)
		}
		return
	case err != nil:
		s.log.Error("record job firing; trying again", "job_id", id, "err", err, "retry_in", retryIn)
		s.timers.Set(id, now.Add(retryIn))
		return
	}
	if !next.IsZero() {
		s.timers.Set(id, next)
	}
	s.log.Info("job fired", "job_id", id, "chat_id", j.ChatID, "slot", j.NextRun, "next_run", next)
	s.turns.Add(ctx, it)
}

func decode(j Job) (schedule.Spec, error) {
	return schedule.Decode(schedule.Kind(j.Kind), j.Spec, j.Zone, j.CreatedAt)
}

// fire records one run of j at slot.
func (s *Service) fire(ctx context.Context, j Job, slot, next time.Time, manual bool) (turns.InboxItem, error) {
	desc := ""
	if spec, err := decode(j); err == nil {
		desc = spec.Describe()
	}
	p := payload{JobID: j.ID, Channel: j.Channel, ChatID: j.ChatID, CreatedBy: j.CreatedBy, Message: j.Message,
		Schedule: desc, Zone: j.Zone, CreatedAt: j.CreatedAt, Slot: slot, Manual: manual}
	data, err := json.Marshal(p)
	if err != nil {
		return turns.InboxItem{}, err
	}
	id, inserted, err := s.store.FireJob(ctx, Firing{JobID: j.ID, Slot: slot, Next: next, Manual: manual,
		UpdateID: UpdateID(j.ID, slot), ChatID: j.ChatID, Payload: data})
	if err != nil {
		return turns.InboxItem{}, err
	}
	if !inserted {
		return turns.InboxItem{}, fmt.Errorf("job %d at %s was fired before: %w", j.ID, slot, ErrStale)
	}
	return turns.InboxItem{ID: id, Channel: Channel, ChatID: j.ChatID, Payload: data,
		State: turns.InboxPending, ReceivedAt: s.clock.Now()}, nil
}

// RunNow fires a job once now, outside its schedule, as its slot would:
// the firing is recorded and handed to the turn engine, which answers it
// in order with the chat's other turns (a service that is not running
// leaves it for the next start). Its schedule stays as it is, and a
// paused job runs too. An unknown id is ErrNotFound.
func (s *Service) RunNow(ctx context.Context, id int64) error {
	j, it, err := s.fireNow(ctx, id)
	if err != nil {
		return err
	}
	s.log.Info("job run by hand", "job_id", id, "chat_id", j.ChatID)
	if s.turns != nil {
		s.turns.Add(ctx, it)
	}
	return nil
}

// RunAndWait fires a job at once, outside its schedule, runs its turn (in
// order with its chat's turns of this process) and returns what it queued
// for the chat; "" when the run was interrupted. For the command line.
func (s *Service) RunAndWait(ctx context.Context, id int64) (string, error) {
	j, it, err := s.fireNow(ctx, id)
	if err != nil {
		return "", err
	}
	src := source{s}
	firing := src.Prepare(ctx, it)
	firing.Item = it
	text, err := s.turns.Await(ctx, src, firing)
	switch {
	case errors.Is(err, turns.ErrShutdown) || errors.Is(err, turns.ErrStopped) || ctx.Err() != nil:
		return "", nil
	case text == "":
		return j.Message, nil
	}
	return text, nil
}

// fireNow records a run of job id by hand, slotted now.
func (s *Service) fireNow(ctx context.Context, id int64) (Job, turns.InboxItem, error) {
	j, err := s.store.Job(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return Job{}, turns.InboxItem{}, noJobError{id}
	}
	if err != nil {
		return Job{}, turns.InboxItem{}, err
	}
	it, err := s.fire(ctx, j, s.clock.Now(), time.Time{}, true)
	if err != nil {
		return Job{}, turns.InboxItem{}, err
	}
	return j, it, nil
}

// Notes delivered with a job's own text when its turn could not answer.
const (
	noteUnreachable = "(The assistant could not be reached when this was due, so here is the message as it was set.)"
	noteBudget      = "(Today's token budget for this chat is used up, so here is the message as it was set.)"
)

// source is the service's side of the turn engine: a recorded firing
// becomes a turn in the job's own session, in order with its chat's
// turns. Whatever happens, the chat gets something: the answer, or the
// job's own text with a note. Only an interruption leaves the firing for
// the next start.
type source struct{ s *Service }

func (src source) Prepare(_ context.Context, it turns.InboxItem) turns.Job {
	var p payload
	if err := json.Unmarshal(it.Payload, &p); err != nil {
		src.s.log.Error("unreadable job firing; closing it", "inbox_id", it.ID, "err", err)
		return turns.Job{Now: true}
	}
	return turns.Job{Chat: session.Chat(p.Channel, p.ChatID).String(), Text: p.Message, Data: p}
}

func (src source) Plan(_ context.Context, batch []*turns.Job) turns.Plan {
	it, p := batch[0].Item, batch[0].Data.(payload)
	t := agent.Turn{
		Session:  Session(p.JobID),
		Channel:  p.Channel,
		ChatID:   p.ChatID,
		SenderID: p.CreatedBy,
		Mirror:   session.Chat(p.Channel, p.ChatID).String(),
		Fallback: p.Message,
	}
	log := src.s.log.With("job_id", p.JobID, "chat_id", p.ChatID)
	msg := agent.Message{Role: agent.RoleUser, Content: prompt(p), CreatedAt: p.Slot}
	told := func(res agent.Result, err error) string {
		switch {
		case err != nil:
			log.Error("job turn failed; delivering its message as it was set", "err", err)
			return p.Message + "\n\n" + noteUnreachable
		case res.Stop == "":
			log.Warn("job turn did not run; delivering its message as it was set", "reason", res.Text)
			return p.Message + "\n\n" + noteBudget
		}
		// The turn's last record closed the firing and queued the answer
		// (or, for an empty one, the job's text); this only closes it if
		// that record could not be written.
		return res.Text
	}
	return turns.Plan{Turn: t, Message: msg, Resume: it.State == turns.InboxStarted, Told: told}
}

// prompt is the user message of a firing's turn: the job's message with a
// line saying what it is.
func prompt(p payload) string {
	zone, err := time.LoadLocation(p.Zone)
	if err != nil {
		zone = time.UTC
	}
	kind := "Scheduled job"
	due := "This run was due " + p.Slot.In(zone).Format(schedule.ShowFormat)
	if p.Manual {
		due = "It was started by hand at " + p.Slot.In(zone).Format(schedule.ShowFormat)
	}
	return fmt.Sprintf("[%s %d (%s, zone %s), set up %s by the user of this chat. %s. Your answer is sent to the chat as a message from you: if it is a reminder, remind them; if it is a task, do it and report.]\n\n%s",
		kind, p.JobID, p.Schedule, p.Zone, p.CreatedAt.In(zone).Format(schedule.ShowFormat), due, p.Message)
}

// Stop ends the schedule: nothing fires any more. Firings under way are
// the turn engine's to finish or interrupt.
func (s *Service) Stop() {
	s.timers.Close()
	s.mu.Lock()
	s.stopping = true
	s.mu.Unlock()
}
