package budget_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/jobs"
	"github.com/nanobot-go/nanobot/memory"
	"github.com/nanobot-go/nanobot/session"
	"github.com/nanobot-go/nanobot/turns/budget"
)

// openStore opens a new database in the test's directory.
func openStore(t *testing.T) *memory.Store {
	t.Helper()
	store, err := memory.Open(t.Context(), filepath.Join(t.TempDir(), "nanobot.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store
}

// What a chat used today counts its own session, its jobs' and the
// heartbeat's when it reports there; other chats and other days do not.
func TestBudgetCountsTheChat(t *testing.T) {
	ctx, store, now := t.Context(), openStore(t), time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC)
	job, err := store.AddJob(ctx, jobs.Job{Channel: "telegram", ChatID: "1", Message: "m", Kind: "every", Spec: "3600",
		Zone: "UTC", NextRun: now.Add(time.Hour), CreatedAt: now}, 0)
	if err != nil {
		t.Fatal(err)
	}
	record := func(sess string, on time.Time, tokens int) {
		t.Helper()
		if err := store.RecordUsage(ctx, sess, on, "m", agent.Usage{PromptTokens: tokens}); err != nil {
			t.Fatal(err)
		}
	}
	chat1, chat2 := session.Chat("telegram", "1").String(), session.Chat("telegram", "2").String()
	record(chat1, now, 100)
	record(session.Job(job).String(), now, 20)
	record("heartbeat", now, 3)
	record(chat2, now, 5000)
	record(chat1, now.Add(-24*time.Hour), 5000)

	tests := []struct {
		name    string
		limits  budget.Limits
		session string
		want    int
	}{
		{"a chat and its job", budget.Limits{Daily: 1000}, chat1, 120},
		{"a job counts its chat", budget.Limits{Daily: 1000}, session.Job(job).String(), 120},
		{"the heartbeat's chat", budget.Limits{Daily: 1000, Heartbeat: "heartbeat", HeartbeatChat: session.Chat("telegram", "1")}, chat1, 123},
		{"the heartbeat counts its chat", budget.Limits{Daily: 1000, Heartbeat: "heartbeat", HeartbeatChat: session.Chat("telegram", "1")}, "heartbeat", 123},
		{"the heartbeat without a chat", budget.Limits{Daily: 1000, Heartbeat: "heartbeat"}, "heartbeat", 3},
		{"another chat", budget.Limits{Daily: 1000, Heartbeat: "heartbeat", HeartbeatChat: session.Chat("telegram", "1")}, chat2, 5000},
		{"a session of no chat", budget.Limits{Daily: 1000}, "cli:default", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := budget.New(store, func() budget.Limits { return tt.limits }, func() time.Time { return now }, nil)
			got, err := b.Today(ctx, tt.session)
			if err != nil {
				t.Fatal(err)
			}
			if got.Total() != tt.want {
				t.Errorf("Today(%s) = %d tokens, want %d", tt.session, got.Total(), tt.want)
			}
		})
	}
}

func TestBudgetOver(t *testing.T) {
	ctx, store, now := t.Context(), openStore(t), time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC)
	chat := session.Chat("telegram", "1").String()
	if err := store.RecordUsage(ctx, chat, now, "m", agent.Usage{PromptTokens: 150, CompletionTokens: 50}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		daily int
		over  bool
	}{{0, false}, {-1, false}, {201, false}, {200, true}, {100, true}}
	for _, tt := range tests {
		b := budget.New(store, func() budget.Limits { return budget.Limits{Daily: tt.daily} }, func() time.Time { return now }, nil)
		text, over := b.Over(ctx, chat)
		if over != tt.over {
			t.Errorf("daily %d: over = %v, want %v", tt.daily, over, tt.over)
		}
		if over && !strings.Contains(text, "(200 of ") || !over && text != "" {
			t.Errorf("daily %d: text %q", tt.daily, text)
		}
		if tomorrow, _ := budget.New(store, func() budget.Limits { return budget.Limits{Daily: tt.daily} },
			func() time.Time { return now.Add(24 * time.Hour) }, nil).Over(ctx, chat); tomorrow != "" {
			t.Errorf("daily %d: over the next day: %q", tt.daily, tomorrow)
		}
	}
}
