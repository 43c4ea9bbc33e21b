// Package jobs is nanobot's scheduled jobs: reminders and recurring tasks
// that a chat sets up (through the cron tool, the command line or /jobs)
// and that the daemon runs on its own at their time.
//
// A firing is recorded before its turn starts, in the same write that moves
// the job to its next slot, so a crash mid-run resumes that run, a restart
// never fires a slot twice and never skips one that was due. The turn runs
// in the job's own session ("cron:<id>") and its answer leaves through the
// chat's outbox like any reply; when the model cannot be reached, the
// job's own text is delivered with a note, so a reminder is never lost.
package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/schedule"
	"github.com/nanobot-go/nanobot/session"
	"github.com/nanobot-go/nanobot/turns"
)

// Sentinels a Store returns (wrapped), so the service can word them.
var (
	ErrLimit    = errors.New("too many jobs")
	ErrNotFound = errors.New("no such job")
	ErrStale    = errors.New("slot is no longer due")
)

// noJobError is ErrNotFound worded for people.
type noJobError struct{ id int64 }

func (e noJobError) Error() string { return fmt.Sprintf("there is no job %d", e.id) }
func (e noJobError) Unwrap() error { return ErrNotFound }

// Missed-run policies: what happens to runs missed while the daemon was
// down.
const (
	MissedOnce = "once" // fire once at start, however many slots passed
	MissedSkip = "skip" // fire at the next slot only
)

// Job is a stored job. Times are zero when unset.
type Job struct {
	ID        int64
	Channel   string
	ChatID    string
	CreatedBy string
	Message   string
	Kind      string
	Spec      string
	Zone      string
	NextRun   time.Time
	LastRun   time.Time
	CreatedAt time.Time
	// Paused is a job that keeps its schedule but does not fire until it
	// is resumed.
	Paused bool
}

// Slot is when a job fires next.
type Slot struct {
	ID      int64
	NextRun time.Time
}

// Firing is one run of a job to record (see Store.FireJob).
type Firing struct {
	JobID    int64
	Slot     time.Time
	Next     time.Time
	Manual   bool
	UpdateID int64
	ChatID   string
	Payload  []byte
}

// Store keeps jobs and their firings; the daemon's SQLite store satisfies
// it through a thin adapter.
type Store interface {
	AddJob(ctx context.Context, j Job, max int) (int64, error) // ErrLimit
	Job(ctx context.Context, id int64) (Job, error)            // ErrNotFound
	Jobs(ctx context.Context, channel, chat string) ([]Job, error)
	JobSlots(ctx context.Context) ([]Slot, error)
	RemoveJob(ctx context.Context, channel, chat string, id int64) (bool, error)
	// FireJob records f as an inbox item and moves the job on (ErrStale,
	// ErrNotFound); a slot recorded before gives inserted false.
	FireJob(ctx context.Context, f Firing) (inboxID int64, inserted bool, err error)
	SkipJob(ctx context.Context, id int64, slot, next time.Time) error // ErrStale
	// PauseJob pauses or resumes a job and returns it as it is then;
	// resuming a paused job sets its next run to next (ErrNotFound).
	PauseJob(ctx context.Context, id int64, paused bool, next time.Time) (Job, error)
	JobsVersion(ctx context.Context) (string, error)
}

// Turns is the turn engine that answers the firings, in order with their
// chat's other turns. The answerer it runs them with returns a Result
// without a stop reason when the turn never reached the model (the chat's
// daily budget is used up), and an error when the model could not be
// reached.
type Turns interface {
	Attach(ctx context.Context, src turns.Source, channels ...string) error
	Add(ctx context.Context, it turns.InboxItem)
	Await(ctx context.Context, src turns.Source, j turns.Job) (string, error)
}

// Config holds the service's limits; it can change while it runs.
type Config struct {
	MaxPerChat int            // jobs per chat; 0: no limit
	Missed     string         // MissedOnce or MissedSkip
	Zone       *time.Location // default zone of new jobs; nil: the host's
}

// Service manages jobs and fires them. Create it with New, then Start it
// in the daemon; a command-line process uses it without Start.
type Service struct {
	store  Store
	turns  Turns
	clock  schedule.Clock
	log    *slog.Logger
	timers *schedule.Timers

	mu       sync.Mutex
	cfg      Config
	started  bool
	stopping bool
	version  string
}

// New returns a service over store; the engine t answers the firings.
func New(store Store, t Turns, clock schedule.Clock, cfg Config, log *slog.Logger) *Service {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Service{store: store, turns: t, clock: clock, log: log, cfg: withDefaults(cfg)}
	s.timers = schedule.NewTimers(clock, s.due)
	return s
}

func withDefaults(c Config) Config {
	if c.Missed == "" {
		c.Missed = MissedOnce
	}
	return c
}

// SetConfig applies new limits to what happens from now on.
func (s *Service) SetConfig(c Config) {
	s.mu.Lock()
	s.cfg = withDefaults(c)
	s.mu.Unlock()
}

func (s *Service) config() Config {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg
}

// Chat identifies who a job belongs to.
type Chat struct {
	Channel string
	ChatID  string
	UserID  string // who set it up
}

// Add sets up a job for chat from a schedule as written. Its errors are
// sentences that say what to change.
func (s *Service) Add(ctx context.Context, chat Chat, message string, when schedule.Input) (Job, error) {
	message = strings.TrimSpace(message)
	if message == "" {
		return Job{}, errors.New("message is empty: give the text the job should deliver or act on when it runs")
	}
	cfg := s.config()
	now := s.clock.Now()
	spec, err := schedule.Parse(when, now, cfg.Zone)
	if err != nil {
		return Job{}, err
	}
	kind, text := spec.Encode()
	j := Job{Channel: chat.Channel, ChatID: chat.ChatID, CreatedBy: chat.UserID, Message: message,
		Kind: string(kind), Spec: text, Zone: spec.ZoneName(), NextRun: spec.Next(now), CreatedAt: spec.Anchor}
	if j.CreatedAt.IsZero() {
		j.CreatedAt = now
	}
	id, err := s.store.AddJob(ctx, j, cfg.MaxPerChat)
	if errors.Is(err, ErrLimit) {
		return Job{}, fmt.Errorf("this chat already has %d scheduled jobs, the most allowed (cron.max_jobs_per_chat); remove one first", cfg.MaxPerChat)
	}
	if err != nil {
		return Job{}, err
	}
	j.ID = id
	s.schedule(id, j.NextRun)
	s.log.Info("job added", "job_id", id, "chat_id", chat.ChatID, "schedule", spec.Describe(), "next_run", j.NextRun)
	return j, nil
}

// schedule sets the job's timer when the service runs.
func (s *Service) schedule(id int64, next time.Time) {
	s.mu.Lock()
	started := s.started
	s.mu.Unlock()
	if !started {
		return
	}
	if next.IsZero() {
		s.timers.Remove(id)
		return
	}
	s.timers.Set(id, next)
}

// Remove removes one of the chat's jobs (any chat's when chat.Channel is
// empty).
func (s *Service) Remove(ctx context.Context, chat Chat, id int64) error {
	ok, err := s.store.RemoveJob(ctx, chat.Channel, chat.ChatID, id)
	if err != nil {
		return err
	}
	if !ok {
		if chat.Channel == "" {
			return noJobError{id}
		}
		return fmt.Errorf("this chat has no job %d; list the jobs to see their ids", id)
	}
	s.schedule(id, time.Time{})
	s.log.Info("job removed", "job_id", id, "chat_id", chat.ChatID)
	return nil
}

// Jobs returns the chat's jobs (every chat's when chat.Channel is empty).
func (s *Service) Jobs(ctx context.Context, chat Chat) ([]Job, error) {
	return s.store.Jobs(ctx, chat.Channel, chat.ChatID)
}

// All returns every chat's jobs, oldest first.
func (s *Service) All(ctx context.Context) ([]Job, error) {
	return s.store.Jobs(ctx, "", "")
}

// Pause pauses a job (paused true) or resumes it, and returns it. A paused
// job does not fire; a resumed one fires at its next slot from now on,
// never for the slots it missed while paused.
func (s *Service) Pause(ctx context.Context, id int64, paused bool) (Job, error) {
	j, err := s.store.Job(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return Job{}, noJobError{id}
	}
	if err != nil {
		return Job{}, fmt.Errorf("pause job: %w", err)
	}
	if j.Paused == paused {
		return j, nil
	}
	var next time.Time
	if !paused {
		spec, err := decode(j)
		if err != nil {
			return Job{}, fmt.Errorf("resume job %d: unreadable schedule: %w", id, err)
		}
		next = spec.Next(s.clock.Now())
	}
	if j, err = s.store.PauseJob(ctx, id, paused, next); err != nil {
		return Job{}, fmt.Errorf("pause job: %w", err)
	}
	if j.Paused {
		s.schedule(id, time.Time{})
	} else {
		s.schedule(id, j.NextRun)
	}
	s.log.Info("job paused", "job_id", id, "paused", j.Paused, "next_run", j.NextRun)
	return j, nil
}

// Describe is one line about a job: id, schedule, zone, next run in that
// zone and its message.
func Describe(j Job) string {
	spec, err := schedule.Decode(schedule.Kind(j.Kind), j.Spec, j.Zone, j.CreatedAt)
	if err != nil {
		return fmt.Sprintf("%d: unreadable schedule (%v): %q", j.ID, err, oneLine(j.Message, 80))
	}
	next := "none (done)"
	switch {
	case j.Paused:
		next = "none (paused)"
	case !j.NextRun.IsZero():
		next = j.NextRun.In(spec.Zone).Format(schedule.ShowFormat)
	}
	return fmt.Sprintf("%d: %s, zone %s, next run %s: %q", j.ID, spec.Describe(), spec.ShownZone(), next, oneLine(j.Message, 80))
}

// List is the chat's jobs as text, for people and the model.
func (s *Service) List(ctx context.Context, chat Chat) (string, error) {
	jobs, err := s.Jobs(ctx, chat)
	if err != nil {
		return "", err
	}
	if len(jobs) == 0 {
		return "No scheduled jobs.", nil
	}
	var b strings.Builder
	if len(jobs) == 1 {
		b.WriteString("1 scheduled job:\n")
	} else {
		fmt.Fprintf(&b, "%d scheduled jobs:\n", len(jobs))
	}
	for _, j := range jobs {
		b.WriteString("- " + Describe(j) + "\n")
	}
	return strings.TrimRight(b.String(), "\n"), nil
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > max {
		return string(r[:max-1]) + "…"
	}
	return s
}

// UpdateID is the inbox update id of a job's run at slot: one per job and
// second, so no slot is ever recorded twice.
func UpdateID(jobID int64, slot time.Time) int64 {
	return jobID<<32 | (slot.Unix() & 0xffffffff)
}

// Session is the session of a job's turns.
func Session(jobID int64) string { return session.Job(jobID).String() }
