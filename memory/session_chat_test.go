package memory

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/session"
)

// A database of the schema before messages and usage knew their chat gets
// the chat of every row from its session: a chat's own, a job's and a
// task's from their tables, none for the heartbeat's; and a chat's usage is
// then summed over its own, its jobs' and its tasks' sessions by column.
func TestMigrateSessionChat(t *testing.T) {
	ctx := t.Context()
	ms, err := loadMigrations(migrationData{FTS5: libraryFTS5(t)})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(ms, func(m migration) bool { return strings.HasSuffix(m.name, "session_chat.sql") })
	if i < 0 {
		t.Fatal("no migration adds the chat of messages and usage")
	}
	path := dbPath(t)
	raw := rawDB(t, path)
	for _, m := range ms[:i] {
		if _, err := raw.Exec(m.sql); err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
	}
	const today = "2026-03-04"
	if _, err := raw.Exec(fmt.Sprintf(`PRAGMA user_version = %d;
		INSERT INTO jobs (id, channel, chat_id, message, kind, spec, zone, created_at, removed_at)
			VALUES (5, 'telegram', '1', 'm', 'every', '1h', 'UTC', 0, NULL), (6, 'telegram', '2', 'm', 'every', '1h', 'UTC', 0, 1);
		INSERT INTO subagents (id, channel, chat_id, label, task, started_at) VALUES (7, 'telegram', '1', 'l', 't', 0);
		INSERT INTO messages (session, role, content, created_at) VALUES
			('telegram:1', 'user', 'a', 0), ('cron:5', 'assistant', 'b', 0), ('subagent:7', 'assistant', 'c', 0),
			('heartbeat', 'assistant', 'd', 0), ('cli:a:b', 'user', 'e', 0), ('cron:6', 'assistant', 'f', 0),
			('cron:99', 'assistant', 'g', 0);
		INSERT INTO usage (session, day, model, calls, prompt_tokens, completion_tokens) VALUES
			('telegram:1', '%[2]s', 'm', 1, 100, 10), ('cron:5', '%[2]s', 'm', 1, 20, 2),
			('subagent:7', '%[2]s', 'm', 1, 3, 1), ('heartbeat', '%[2]s', 'm', 1, 1000, 100),
			('telegram:2', '%[2]s', 'm', 1, 5000, 500), ('cron:6', '%[2]s', 'm', 1, 40000, 4000),
			('telegram:1', '2026-03-03', 'm', 1, 700000, 70000)`, ms[i-1].version, today)); err != nil {
		t.Fatal(err)
	}
	raw.Close()

	s := openAt(t, path, options{})
	type row struct{ Session, Channel, Chat string }
	read := func(table string) []row {
		rows, err := s.db.QueryContext(ctx, `SELECT DISTINCT session, channel, chat FROM `+table+` ORDER BY session`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []row
		for rows.Next() {
			var r row
			if err := rows.Scan(&r.Session, &r.Channel, &r.Chat); err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
		}
		return out
	}
	wantMessages := []row{{"cli:a:b", "cli", "a:b"}, {"cron:5", "telegram", "1"}, {"cron:6", "telegram", "2"},
		{"cron:99", "", ""}, {"heartbeat", "", ""}, {"subagent:7", "telegram", "1"}, {"telegram:1", "telegram", "1"}}
	if diff := cmp.Diff(wantMessages, read("messages")); diff != "" {
		t.Errorf("the chats of messages (-want +got):\n%s", diff)
	}
	wantUsage := []row{{"cron:5", "telegram", "1"}, {"cron:6", "telegram", "2"}, {"heartbeat", "", ""},
		{"subagent:7", "telegram", "1"}, {"telegram:1", "telegram", "1"}, {"telegram:2", "telegram", "2"}}
	if diff := cmp.Diff(wantUsage, read("usage")); diff != "" {
		t.Errorf("the chats of usage (-want +got):\n%s", diff)
	}

	on := time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		add  string // a session that makes one more call first
		also []string
		want agent.Usage
	}{
		{name: "own, job and task", want: agent.Usage{PromptTokens: 123, CompletionTokens: 13}},
		{name: "and the heartbeat", also: []string{session.Heartbeat.String()}, want: agent.Usage{PromptTokens: 1123, CompletionTokens: 113}},
		{name: "a new call of the job", add: session.Job(5).String(), want: agent.Usage{PromptTokens: 124, CompletionTokens: 14}},
		{name: "a new call of the task", add: session.Task(7).String(), want: agent.Usage{PromptTokens: 125, CompletionTokens: 15}},
		{name: "a new call of the chat", add: session.Chat("telegram", "1").String(), want: agent.Usage{PromptTokens: 126, CompletionTokens: 16}},
		{name: "not another chat's", add: session.Chat("telegram", "2").String(), want: agent.Usage{PromptTokens: 126, CompletionTokens: 16}},
	}
	for _, tt := range tests {
		if tt.add != "" {
			if err := s.RecordUsage(ctx, tt.add, on, "m", agent.Usage{PromptTokens: 1, CompletionTokens: 1}); err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.ChatUsageOn(ctx, "telegram", "1", on, tt.also...)
		if err != nil || got != tt.want {
			t.Errorf("%s: ChatUsageOn = %+v, %v; want %+v", tt.name, got, err, tt.want)
		}
	}
}

// Every way a message is written records its chat.
func TestMessagesRecordTheirChat(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	if err := s.Append(ctx, session.Chat("telegram", "9").String(), agent.Message{Role: agent.RoleUser, Content: "hi"}); err != nil {
		t.Fatal(err)
	}
	var channel, chat string
	if err := s.db.QueryRowContext(ctx, `SELECT channel, chat FROM messages WHERE session = 'telegram:9'`).Scan(&channel, &chat); err != nil {
		t.Fatal(err)
	}
	if channel != "telegram" || chat != "9" {
		t.Errorf("the message's chat = %q %q; want telegram 9", channel, chat)
	}
}
