package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/openai/openaitest"
	"github.com/nanobot-go/nanobot/jobs"
	"github.com/nanobot-go/nanobot/memory"
	"github.com/nanobot-go/nanobot/schedule"
	"github.com/nanobot-go/nanobot/schedule/scheduletest"
	"github.com/nanobot-go/nanobot/turns"
)

// loopTurns runs firings through a real loop.
type loopTurns struct{ l *agent.Loop }

func (l loopTurns) Answer(ctx context.Context, t agent.Turn, msg agent.Message, resume bool) (agent.Result, error) {
	if resume {
		return l.l.Resume(ctx, t)
	}
	return l.l.Run(ctx, t, msg)
}

type rig struct {
	t       *testing.T
	db      *memory.Store
	path    string
	clock   *scheduletest.Clock
	model   *openaitest.Scripted
	svc     *jobs.Service
	turns   *turns.Engine
	cfg     jobs.Config
	outbox  int           // outbox items seen so far
	queued  chan struct{} // a firing queued something for its chat
	started bool
}

func newRig(t *testing.T, now time.Time, cfg jobs.Config) *rig {
	t.Helper()
	path := filepath.Join(t.TempDir(), "nanobot.db")
	db, err := memory.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, db: db, path: path, clock: scheduletest.New(now), model: openaitest.NewScripted(), cfg: cfg,
		queued: make(chan struct{}, 100)}
	r.build()
	t.Cleanup(func() { r.stop(); db.Close() })
	return r
}

func (r *rig) build() {
	loop := agent.New(r.model, r.db, nil, agent.Config{})
	r.turns = turns.New(r.db, loopTurns{loop}, turns.Config{}, nil, turns.Hooks{Queued: func(string) { r.queued <- struct{}{} }})
	r.svc = jobs.New(r.db, r.turns, r.clock, r.cfg, nil)
}

func (r *rig) start() {
	r.t.Helper()
	if err := r.svc.Start(r.t.Context()); err != nil {
		r.t.Fatal(err)
	}
	r.started = true
}

func (r *rig) stop() {
	if r.started {
		r.svc.Stop()
		r.turns.Shutdown()
		r.started = false
	}
}

var alice = jobs.Chat{Channel: "telegram", ChatID: "111", UserID: "111"}

func (r *rig) add(chat jobs.Chat, msg string, in schedule.Input) jobs.Job {
	r.t.Helper()
	j, err := r.svc.Add(r.t.Context(), chat, msg, in)
	if err != nil {
		r.t.Fatal(err)
	}
	return j
}

// delivered waits until firings queued n more messages and returns them.
func (r *rig) delivered(n int) []string {
	r.t.Helper()
	timeout := time.After(60 * time.Second)
	for range n {
		select {
		case <-r.queued:
		case <-timeout:
			r.t.Fatalf("fewer than %d messages queued within 60 s", n)
		}
	}
	items, err := r.db.PendingOutbound(r.t.Context(), "")
	if err != nil {
		r.t.Fatal(err)
	}
	var out []string
	for _, it := range items[r.outbox:] {
		out = append(out, it.ChatID+": "+it.Text)
	}
	r.outbox = len(items)
	if len(out) != n {
		r.t.Fatalf("%d messages queued, want %d: %q", len(out), n, out)
	}
	return out
}

func TestOneShotReminder(t *testing.T) {
	start := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
	r := newRig(t, start, jobs.Config{})
	r.start()
	r.model.Script(openaitest.Reply{Text: "Time to water the plants!"})
	r.add(alice, "water the plants", schedule.Input{At: "20m"})

	r.clock.Advance(19 * time.Minute)
	if n := r.model.RequestCount(); n != 0 {
		t.Fatalf("%d model calls before the job was due", n)
	}
	r.clock.Advance(time.Minute)
	if got := r.delivered(1); got[0] != "111: Time to water the plants!" {
		t.Errorf("delivered %q", got)
	}
	req := r.model.Requests()[0]
	prompt := req.Messages[len(req.Messages)-1].Content
	if !strings.Contains(prompt, "[Scheduled job") || !strings.HasSuffix(prompt, "water the plants") {
		t.Errorf("the turn's message is %q", prompt)
	}
	// The chat's own conversation holds the reminder, for the user's reply.
	msgs, err := r.db.LiveMessages(t.Context(), "telegram:111", 0)
	if err != nil || len(msgs) != 1 || msgs[0].Role != agent.RoleAssistant || msgs[0].Content != "Time to water the plants!" {
		t.Errorf("chat session holds %+v, %v; want the reminder as an assistant message", msgs, err)
	}
	if list, _ := r.svc.Jobs(t.Context(), alice); len(list) != 0 {
		t.Errorf("a fired one-shot job is still listed: %+v", list)
	}
	r.clock.Advance(24 * time.Hour)
	if n := r.model.RequestCount(); n != 1 {
		t.Errorf("%d model calls, want 1: a one-shot job fires once", n)
	}
}

func TestRecurringJobAndRemove(t *testing.T) {
	start := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
	r := newRig(t, start, jobs.Config{})
	r.start()
	r.model.SetDefault(openaitest.Reply{Text: "stretch!"})
	j := r.add(alice, "stretch", schedule.Input{EverySeconds: 3600})
	for range 3 {
		r.clock.Advance(time.Hour)
		r.delivered(1)
	}
	if err := r.svc.Remove(t.Context(), alice, j.ID); err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(5 * time.Hour)
	if n := r.model.RequestCount(); n != 3 {
		t.Errorf("%d model calls, want 3: none after remove", n)
	}
}

// TestDaylightSavingFirings: a daily 09:00 job in Berlin fires at 09:00 local
// time before and after each change, in the job's zone.
func TestDaylightSavingFirings(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name  string
		start time.Time
	}{
		{"spring forward", time.Date(2026, 3, 27, 12, 0, 0, 0, berlin)},
		{"fall back", time.Date(2026, 10, 23, 12, 0, 0, 0, berlin)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, tt.start.UTC(), jobs.Config{})
			r.start()
			r.model.SetDefault(openaitest.Reply{Text: "good morning"})
			r.add(alice, "good morning", schedule.Input{CronExpr: "0 9 * * *", TZ: "Europe/Berlin"})
			var fired []string
			for day := 1; day <= 4; day++ {
				nine := time.Date(tt.start.Year(), tt.start.Month(), tt.start.Day()+day, 9, 0, 0, 0, berlin)
				r.clock.Set(nine.Add(-time.Minute))
				if got := r.model.RequestCount(); got != day-1 {
					t.Fatalf("day %d: %d runs by 08:59, want %d", day, got, day-1)
				}
				r.clock.Set(nine)
				r.delivered(1)
				fired = append(fired, nine.Format("01-02 15:04 MST"))
			}
			list, err := r.svc.List(t.Context(), alice)
			if err != nil {
				t.Fatal(err)
			}
			next := time.Date(tt.start.Year(), tt.start.Month(), tt.start.Day()+5, 9, 0, 0, 0, berlin).Format(schedule.ShowFormat)
			if !strings.Contains(list, "zone Europe/Berlin, next run "+next) {
				t.Errorf("list = %q, want the next run as %s", list, next)
			}
			t.Logf("fired at %v", fired)
		})
	}
}

func TestMissedRuns(t *testing.T) {
	for _, tt := range []struct {
		policy string
		want   int
	}{{jobs.MissedOnce, 1}, {jobs.MissedSkip, 0}} {
		t.Run(tt.policy, func(t *testing.T) {
			start := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
			r := newRig(t, start, jobs.Config{Missed: tt.policy})
			r.start()
			r.model.SetDefault(openaitest.Reply{Text: "hourly"})
			r.add(alice, "hourly check", schedule.Input{EverySeconds: 3600})
			r.stop()
			r.clock.Set(start.Add(3*time.Hour + 30*time.Minute)) // three slots pass while down
			r.build()
			r.start()
			if tt.want > 0 {
				r.delivered(tt.want)
			}
			// The job goes on at its next slot either way.
			r.clock.Set(start.Add(4 * time.Hour))
			r.delivered(1)
			if got := r.model.RequestCount(); got != tt.want+1 {
				t.Errorf("%d runs, want %d at start and 1 at the next slot", got, tt.want)
			}
		})
	}
}

// TestResumeRecordedFiring: a firing recorded before a crash runs once after
// the restart; its slot does not fire again.
func TestResumeRecordedFiring(t *testing.T) {
	start := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
	r := newRig(t, start, jobs.Config{})
	r.start()
	hold := make(chan struct{})
	defer close(hold)
	r.model.Script(openaitest.Reply{Hold: hold})
	r.add(alice, "call mom", schedule.Input{At: "1h"})
	r.clock.Advance(time.Hour)
	if _, err := r.model.WaitRequests(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	// The process dies here: its service is never stopped.
	r.started = false
	r.model.Script(openaitest.Reply{Text: "Call mom!"})
	r.build()
	r.start()
	if got := r.delivered(1); got[0] != "111: Call mom!" {
		t.Errorf("delivered %q", got)
	}
	r.clock.Advance(48 * time.Hour)
	if n := r.model.RequestCount(); n != 2 {
		t.Errorf("%d model calls, want 2 (the interrupted one and its resumption)", n)
	}
}

func TestModelDownDeliversTheMessage(t *testing.T) {
	start := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
	r := newRig(t, start, jobs.Config{})
	r.start()
	r.model.Script(openaitest.Reply{Status: 503})
	r.add(alice, "take the medicine", schedule.Input{At: "5m"})
	r.clock.Advance(5 * time.Minute)
	got := r.delivered(1)[0]
	if !strings.HasPrefix(got, "111: take the medicine\n\n") || !strings.Contains(got, "could not be reached") {
		t.Errorf("delivered %q, want the job's text and a note", got)
	}
}

func TestChatsSeeOnlyTheirJobs(t *testing.T) {
	start := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
	r := newRig(t, start, jobs.Config{MaxPerChat: 2})
	bob := jobs.Chat{Channel: "telegram", ChatID: "333", UserID: "333"}
	j := r.add(alice, "alice's job", schedule.Input{At: "1h"})
	r.add(alice, "another", schedule.Input{At: "2h"})
	if _, err := r.svc.Add(t.Context(), alice, "a third", schedule.Input{At: "3h"}); err == nil ||
		!strings.Contains(err.Error(), "already has 2 scheduled jobs, the most allowed (cron.max_jobs_per_chat)") {
		t.Errorf("third job: %v, want the limit", err)
	}
	if list, _ := r.svc.List(t.Context(), bob); list != "No scheduled jobs." {
		t.Errorf("bob lists %q", list)
	}
	if err := r.svc.Remove(t.Context(), bob, j.ID); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("this chat has no job %d", j.ID)) {
		t.Errorf("bob removing alice's job: %v", err)
	}
	if err := r.svc.Remove(t.Context(), jobs.Chat{}, 999); !errors.Is(err, jobs.ErrNotFound) || err.Error() != "there is no job 999" {
		t.Errorf("removing an unknown job from any chat: %v, want ErrNotFound worded for people", err)
	}
	if list, _ := r.svc.List(t.Context(), alice); !strings.HasPrefix(list, "2 scheduled jobs:") {
		t.Errorf("alice lists %q", list)
	}
}

// BenchmarkFire is the cost of recording one firing among 10,000 jobs and
// scheduling its next run: what a due job costs before its turn.
func BenchmarkFire(b *testing.B) {
	path := filepath.Join(b.TempDir(), "nanobot.db")
	db, err := memory.Open(b.Context(), path)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	start := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
	clock := scheduletest.New(start)
	svc := jobs.New(db, nil, clock, jobs.Config{}, nil)
	for i := range 10000 {
		if _, err := svc.Add(b.Context(), jobs.Chat{Channel: "telegram", ChatID: fmt.Sprint(1000 + i%100)}, "job", schedule.Input{EverySeconds: 60 + i}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	id := int64(0)
	for b.Loop() {
		id = id%10000 + 1
		j, err := db.Job(b.Context(), id)
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := db.FireJob(b.Context(), jobs.Firing{JobID: id, Slot: j.NextRun, Next: j.NextRun.Add(time.Hour),
			UpdateID: jobs.UpdateID(id, j.NextRun), ChatID: j.ChatID, Payload: []byte("{}")}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestPauseAndResume: a paused job does not fire, across a restart too; a
// resumed one fires at its next slot, not for those it missed.
func TestPauseAndResume(t *testing.T) {
	for _, policy := range []string{jobs.MissedOnce, jobs.MissedSkip} {
		t.Run(policy, func(t *testing.T) {
			ctx := t.Context()
			start := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
			r := newRig(t, start, jobs.Config{Missed: policy})
			r.start()
			r.model.SetDefault(openaitest.Reply{Text: "hourly"})
			j := r.add(alice, "hourly check", schedule.Input{EverySeconds: 3600})
			r.clock.Advance(time.Hour)
			r.delivered(1)

			p, err := r.svc.Pause(ctx, j.ID, true)
			if err != nil || !p.Paused {
				t.Fatalf("Pause = %+v, %v", p, err)
			}
			if list, _ := r.svc.List(ctx, alice); !strings.Contains(list, "next run none (paused)") {
				t.Errorf("list = %q, want the job shown paused", list)
			}
			r.clock.Advance(2 * time.Hour)
			r.stop() // paused across a restart, with slots missed while down
			r.clock.Advance(time.Hour)
			r.build()
			r.start()
			r.clock.Advance(30 * time.Minute) // 12:30
			if n := r.model.RequestCount(); n != 1 {
				t.Fatalf("%d runs while paused, want only the one before", n)
			}

			p, err = r.svc.Pause(ctx, j.ID, false)
			if want := start.Add(5 * time.Hour); err != nil || p.Paused || !p.NextRun.Equal(want) {
				t.Fatalf("resume = %+v, %v; want next run %s", p, err, want)
			}
			r.clock.Advance(29 * time.Minute)
			if n := r.model.RequestCount(); n != 1 {
				t.Fatalf("%d runs right after resuming, want none for the missed slots", n-1)
			}
			r.clock.Advance(time.Minute)
			r.delivered(1)
			r.clock.Advance(time.Hour)
			r.delivered(1)
			if _, err := r.svc.Pause(ctx, 999, true); !errors.Is(err, jobs.ErrNotFound) {
				t.Errorf("Pause of an unknown job = %v, want ErrNotFound", err)
			}
		})
	}
}

// TestRunNow: a job run by hand is recorded and answered once, in its
// chat, and keeps its schedule; a paused job runs too.
func TestRunNow(t *testing.T) {
	ctx := t.Context()
	start := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
	r := newRig(t, start, jobs.Config{})
	r.start()
	r.model.SetDefault(openaitest.Reply{Text: "report ready"})
	j := r.add(alice, "daily report", schedule.Input{EverySeconds: 24 * 3600})

	if err := r.svc.RunNow(ctx, j.ID); err != nil {
		t.Fatal(err)
	}
	if got := r.delivered(1); got[0] != "111: report ready" {
		t.Errorf("delivered %q", got)
	}
	if req := r.model.Requests()[0]; !strings.Contains(req.Messages[len(req.Messages)-1].Content, "started by hand") {
		t.Errorf("the turn's message does not say it was started by hand")
	}
	// The same moment again is the same run: it is not answered twice.
	if err := r.svc.RunNow(ctx, j.ID); !errors.Is(err, jobs.ErrStale) {
		t.Errorf("RunNow in the same second = %v, want ErrStale", err)
	}
	if got, _ := r.db.Job(ctx, j.ID); !got.NextRun.Equal(j.NextRun) {
		t.Errorf("next run %s after RunNow, want %s unchanged", got.NextRun, j.NextRun)
	}

	if _, err := r.svc.Pause(ctx, j.ID, true); err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(time.Minute)
	if err := r.svc.RunNow(ctx, j.ID); err != nil {
		t.Fatalf("RunNow of a paused job: %v", err)
	}
	r.delivered(1)
	if err := r.svc.RunNow(ctx, 999); !errors.Is(err, jobs.ErrNotFound) {
		t.Errorf("RunNow of an unknown job = %v, want ErrNotFound", err)
	}
	if n := r.model.RequestCount(); n != 2 {
		t.Errorf("%d model calls, want 2", n)
	}
}

func TestAllJobs(t *testing.T) {
	start := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
	r := newRig(t, start, jobs.Config{})
	bob := jobs.Chat{Channel: "api", ChatID: "bob"}
	a := r.add(alice, "alice's", schedule.Input{At: "1h"})
	b := r.add(bob, "bob's", schedule.Input{At: "2h"})
	list, err := r.svc.All(t.Context())
	if err != nil || len(list) != 2 || list[0].ID != a.ID || list[1].ID != b.ID || list[1].ChatID != "bob" {
		t.Errorf("All = %+v, %v; want both chats' jobs, oldest first", list, err)
	}
}

// TestPausedByAnotherProcess: a job paused in the store behind the
// service's back does not fire at the slot its timer was set for.
func TestPausedByAnotherProcess(t *testing.T) {
	start := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
	r := newRig(t, start, jobs.Config{})
	r.start()
	r.model.SetDefault(openaitest.Reply{Text: "hourly"})
	j := r.add(alice, "hourly check", schedule.Input{EverySeconds: 3600})
	if _, err := r.db.PauseJob(t.Context(), j.ID, true, time.Time{}); err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(3 * time.Hour)
	if n := r.model.RequestCount(); n != 0 {
		t.Errorf("%d runs of a paused job", n)
	}
}
