package memory

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/jobs"
)

func addJob(t *testing.T, s *Store, chat string, next time.Time) int64 {
	t.Helper()
	id, err := s.AddJob(t.Context(), jobs.Job{Channel: "telegram", ChatID: chat, Message: "water the plants",
		Kind: "every", Spec: "3600", Zone: "UTC", NextRun: next, CreatedAt: next.Add(-time.Hour)}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestFireJobOncePerSlot(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	slot := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	id := addJob(t, s, "42", slot)
	fire := jobs.Firing{JobID: id, Slot: slot, Next: slot.Add(time.Hour), UpdateID: id<<32 | slot.Unix()&0xffffffff, ChatID: "42", Payload: []byte(`{}`)}

	inbox, inserted, err := s.FireJob(ctx, fire)
	if err != nil || !inserted || inbox == 0 {
		t.Fatalf("FireJob = %d, %v, %v", inbox, inserted, err)
	}
	j, err := s.Job(ctx, id)
	if err != nil || !j.NextRun.Equal(slot.Add(time.Hour)) || !j.LastRun.Equal(slot) {
		t.Errorf("after firing: next %s, last %s, %v", j.NextRun, j.LastRun, err)
	}
	// The slot is no longer the job's next: a second firing is stale.
	if _, _, err := s.FireJob(ctx, fire); !errors.Is(err, jobs.ErrStale) {
		t.Errorf("FireJob again = %v, want ErrStale", err)
	}
	// A manual run of the same second is the same slot: not recorded twice.
	fire.Manual = true
	if again, inserted, err := s.FireJob(ctx, fire); err != nil || inserted || again != inbox {
		t.Errorf("manual FireJob of a recorded slot = %d, %v, %v; want %d, false", again, inserted, err, inbox)
	}
	if ids := pendingIDs(t, s, "cron"); len(ids) != 1 || ids[0] != inbox {
		t.Errorf("pending firings %v, want [%d]", ids, inbox)
	}
}

func TestFireJobWithoutNextRemovesIt(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	slot := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	id := addJob(t, s, "42", slot)
	if _, _, err := s.FireJob(ctx, jobs.Firing{JobID: id, Slot: slot, UpdateID: 1, ChatID: "42"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Job(ctx, id); !errors.Is(err, jobs.ErrNotFound) {
		t.Errorf("Job after its last run = %v, want jobs.ErrNotFound", err)
	}
	if slots, _ := s.JobSlots(ctx); len(slots) != 0 {
		t.Errorf("slots %v, want none", slots)
	}
}

func TestJobLimitAndChats(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	next := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	v0, _ := s.JobsVersion(ctx)
	a := addJob(t, s, "42", next)
	if _, err := s.AddJob(ctx, jobs.Job{Channel: "telegram", ChatID: "42", Message: "x", Kind: "at", Spec: "", Zone: "UTC"}, 1); !errors.Is(err, jobs.ErrLimit) {
		t.Errorf("AddJob over the limit = %v, want ErrLimit", err)
	}
	if v1, _ := s.JobsVersion(ctx); v1 == v0 {
		t.Error("the jobs version did not change with an add")
	}
	if ok, err := s.RemoveJob(ctx, "telegram", "7", a); ok || err != nil {
		t.Errorf("another chat removed the job: %v, %v", ok, err)
	}
	if list, _ := s.Jobs(ctx, "telegram", "7"); len(list) != 0 {
		t.Errorf("another chat lists %+v", list)
	}
	if ok, err := s.RemoveJob(ctx, "telegram", "42", a); !ok || err != nil {
		t.Errorf("RemoveJob = %v, %v", ok, err)
	}
	if ch, chat, err := s.SessionChat(ctx, "cron:"+itoa(a)); err != nil || ch != "telegram" || chat != "42" {
		t.Errorf("SessionChat of a removed job = %q, %q, %v", ch, chat, err)
	}
}

// TestFinishTurnMirrors: a proactive answer is queued for the chat and
// recorded in the chat's session, in one write, once.
func TestFinishTurnMirrors(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	slot := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	id := addJob(t, s, "42", slot)
	inbox, _, err := s.FireJob(ctx, jobs.Firing{JobID: id, Slot: slot, Next: slot.Add(time.Hour), UpdateID: 5, ChatID: "42"})
	if err != nil {
		t.Fatal(err)
	}
	turn := agent.Turn{Session: "cron:1", Channel: "telegram", ChatID: "42", Inbox: []int64{inbox}, Mirror: "telegram:42", Fallback: "water the plants"}
	for range 2 {
		if err := s.FinishTurn(ctx, turn, ""); err != nil {
			t.Fatal(err)
		}
	}
	out, _ := s.PendingOutbound(ctx, "telegram")
	if len(out) != 1 || out[0].Text != "water the plants" || out[0].ChatID != "42" {
		t.Errorf("outbox %+v, want the fallback once", out)
	}
	msgs, _ := s.LiveMessages(ctx, "telegram:42", 0)
	if len(msgs) != 1 || msgs[0].Role != agent.RoleAssistant || msgs[0].Content != "water the plants" {
		t.Errorf("chat session %+v, want the delivered text once", msgs)
	}
	if u, _ := s.UsageOn(ctx, "telegram:42", time.Now()); u.Total() != 0 {
		t.Errorf("the mirrored message counted usage %+v", u)
	}
}

func TestChatUsageOn(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	now := time.Now().UTC()
	job := addJob(t, s, "42", now)
	other := addJob(t, s, "7", now)
	for _, rec := range []struct {
		session string
		tokens  int
		cached  int
	}{{"telegram:42", 100, 60}, {"cron:" + itoa(job), 20, 8}, {"cron:" + itoa(other), 5, 4}, {"telegram:7", 1, 1}} {
		if err := s.RecordUsage(ctx, rec.session, now, "m", agent.Usage{PromptTokens: rec.tokens, CachedTokens: rec.cached}); err != nil {
			t.Fatal(err)
		}
	}
	if u, err := s.ChatUsageOn(ctx, "telegram", "42", now); err != nil || u.Total() != 120 || u.CachedTokens != 68 {
		t.Errorf("ChatUsageOn = %+v, %v; want 120 tokens, 68 of them cached (the chat and its job)", u, err)
	}
	if err := s.RecordUsage(ctx, "heartbeat", now, "m", agent.Usage{PromptTokens: 10, CompletionTokens: 3, CachedTokens: 2}); err != nil {
		t.Fatal(err)
	}
	if u, err := s.ChatUsageOn(ctx, "telegram", "42", now, "heartbeat"); err != nil || u.Total() != 133 || u.CachedTokens != 70 {
		t.Errorf("ChatUsageOn with the heartbeat = %+v, %v; want 133 tokens, 70 of them cached", u, err)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestPauseJob(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	slot := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	later := slot.Add(5 * time.Hour)
	id := addJob(t, s, "42", slot)
	steps := []struct {
		name    string
		paused  bool
		next    time.Time
		want    time.Time // next run after the step
		bumped  bool      // the jobs version changes
		inSlots bool      // and a scheduled firing is allowed
	}{
		{name: "pause", paused: true, want: slot, bumped: true},
		{name: "pause again", paused: true, next: later, want: slot},
		{name: "resume", next: later, want: later, bumped: true, inSlots: true},
		{name: "resume again", next: later.Add(time.Hour), want: later, inSlots: true},
	}
	for i, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			v0, _ := s.JobsVersion(ctx)
			j, err := s.PauseJob(ctx, id, st.paused, st.next)
			if err != nil || j.ID != id || j.Paused != st.paused || !j.NextRun.Equal(st.want) {
				t.Fatalf("PauseJob(%v) = %+v, %v; want paused %v, next run %s", st.paused, j, err, st.paused, st.want)
			}
			if got, _ := s.Job(ctx, id); got != j {
				t.Errorf("Job = %+v, want %+v", got, j)
			}
			if v1, _ := s.JobsVersion(ctx); (v1 != v0) != st.bumped {
				t.Errorf("jobs version %q -> %q, want a change: %v", v0, v1, st.bumped)
			}
			slots, _ := s.JobSlots(ctx)
			if (len(slots) == 1) != st.inSlots {
				t.Errorf("JobSlots = %v, want the job: %v", slots, st.inSlots)
			}
			if st.inSlots {
				return
			}
			fire := jobs.Firing{JobID: id, Slot: st.want, UpdateID: jobs.UpdateID(id, st.want), ChatID: "42", Next: st.want.Add(time.Hour)}
			if _, _, err := s.FireJob(ctx, fire); !errors.Is(err, jobs.ErrStale) {
				t.Errorf("scheduled FireJob of a paused job = %v, want ErrStale", err)
			}
			// A run by hand is a run of its own time.
			fire.Manual, fire.Slot = true, time.Now().Add(time.Duration(i)*time.Second)
			fire.UpdateID = jobs.UpdateID(id, fire.Slot)
			if _, inserted, err := s.FireJob(ctx, fire); err != nil || !inserted {
				t.Errorf("manual FireJob of a paused job = %v, %v; want it recorded", inserted, err)
			}
		})
	}
	if ok, _ := s.RemoveJob(ctx, "", "", id); !ok {
		t.Fatal("RemoveJob failed")
	}
	if _, err := s.PauseJob(ctx, id, true, time.Time{}); !errors.Is(err, jobs.ErrNotFound) {
		t.Errorf("PauseJob of a removed job = %v, want ErrNotFound", err)
	}
	if _, err := s.PauseJob(ctx, 999, false, later); !errors.Is(err, jobs.ErrNotFound) {
		t.Errorf("PauseJob of an unknown job = %v, want ErrNotFound", err)
	}
}
