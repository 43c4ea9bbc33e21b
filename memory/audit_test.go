package memory

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nanobot-go/nanobot/agent"
)

func TestAuditOutcome(t *testing.T) {
	for _, tc := range []struct {
		e    AuditEntry
		want string
	}{
		{AuditEntry{Verdict: "allow"}, "ran"},
		{AuditEntry{Verdict: "deny", Category: "destroy"}, "refused"},
		{AuditEntry{Verdict: "ask", Approver: "telegram:42", Approval: agent.ApprovalApproved}, "approved by telegram:42"},
		{AuditEntry{Verdict: "deny", Approver: "telegram:42", Approval: agent.ApprovalDenied}, "denied by telegram:42"},
		{AuditEntry{Verdict: "deny", Approval: agent.ApprovalTimedOut}, "timed out"},
		{AuditEntry{Verdict: "deny", Approval: agent.ApprovalFailed}, "not asked"},
		// Recorded before approvals were: an ask that ran was approved.
		{AuditEntry{Verdict: "ask", Approver: "telegram:42"}, "approved by telegram:42"},
	} {
		if got := tc.e.Outcome(); got != tc.want {
			t.Errorf("%+v.Outcome() = %q, want %q", tc.e, got, tc.want)
		}
	}
}

func TestAudit(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	base := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	entries := []AuditEntry{
		{At: base, Session: "telegram:1", Tool: "exec", Args: `{"command":"ls"}`, Verdict: "allow",
			Duration: 15 * time.Millisecond, ExitCode: 0, OutputBytes: 120},
		{At: base.Add(time.Hour), Session: "telegram:1", Tool: "exec", Args: `{"command":"rm -rf ~"}`, Verdict: "deny",
			Category: "destroy", Reason: "recursive delete of home"},
		{At: base.Add(2 * time.Hour), Session: "telegram:2", Tool: "exec", Args: `{"command":"npm i -g x"}`, Verdict: "deny",
			Category: "package_install", Reason: "global install", Approver: "owner:7", Approval: agent.ApprovalDenied},
		{At: base.Add(3 * time.Hour), Session: "telegram:2", Tool: "read_file", Args: `{"path":"a.txt"}`,
			Duration: time.Millisecond, OutputBytes: 3},
	}
	for _, e := range entries {
		if err := s.RecordAudit(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		f    AuditFilter
		want []int // indexes into entries, newest first
	}{
		{"all", AuditFilter{}, []int{3, 2, 1, 0}},
		{"since", AuditFilter{Since: base.Add(90 * time.Minute)}, []int{3, 2}},
		{"denied", AuditFilter{DeniedOnly: true}, []int{2, 1}},
		{"session", AuditFilter{Session: "telegram:1"}, []int{1, 0}},
		{"denied in session", AuditFilter{DeniedOnly: true, Session: "telegram:2"}, []int{2}},
		{"limit", AuditFilter{Limit: 3}, []int{3, 2, 1}},
		{"until, inclusive", AuditFilter{Until: base.Add(time.Hour)}, []int{1, 0}},
		{"between", AuditFilter{Since: base.Add(time.Hour), Until: base.Add(2 * time.Hour)}, []int{2, 1}},
		{"tool", AuditFilter{Tool: "read_file"}, []int{3}},
		{"tool is exact", AuditFilter{Tool: "read"}, nil},
		{"verdict", AuditFilter{Verdict: "allow"}, []int{0}},
		{"verdict deny", AuditFilter{Verdict: "deny"}, []int{2, 1}},
		{"every filter", AuditFilter{Since: base, Until: base.Add(3 * time.Hour), Session: "telegram:2", Tool: "exec",
			Verdict: "deny", DeniedOnly: true, Limit: 5}, []int{2}},
		{"until and limit", AuditFilter{Until: base.Add(2 * time.Hour), Limit: 2}, []int{2, 1}},
		{"nothing", AuditFilter{Session: "telegram:3"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Audit(ctx, tt.f)
			if err != nil {
				t.Fatal(err)
			}
			var want []AuditEntry
			for _, i := range tt.want {
				want = append(want, entries[i])
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Audit(%+v) (-want +got):\n%s", tt.f, diff)
			}
		})
	}
}

func TestUsagePerDay(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	day1 := time.Date(2025, 7, 1, 23, 30, 0, 0, time.UTC)
	day2 := day1.Add(time.Hour) // 00:30 the next day
	records := []struct {
		session string
		at      time.Time
		model   string
		u       agent.Usage
	}{
		{"a", day1, "m1", agent.Usage{PromptTokens: 100, CompletionTokens: 10, CachedTokens: 64}},
		{"a", day1.Add(-time.Hour), "m1", agent.Usage{PromptTokens: 50, CompletionTokens: 5, CachedTokens: 32}},
		{"a", day1, "m2", agent.Usage{PromptTokens: 3, CompletionTokens: 3}},
		{"a", day2, "m1", agent.Usage{PromptTokens: 7, CompletionTokens: 1}},
		{"b", day1, "m1", agent.Usage{PromptTokens: 1000, CompletionTokens: 100, CachedTokens: 512}},
	}
	for _, r := range records {
		if err := s.RecordUsage(ctx, r.session, r.at, r.model, r.u); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		session string
		on      time.Time
		want    agent.Usage
	}{
		{"a", day1, agent.Usage{PromptTokens: 153, CompletionTokens: 18, CachedTokens: 96}},
		{"a", time.Date(2025, 7, 1, 0, 0, 0, 0, time.UTC), agent.Usage{PromptTokens: 153, CompletionTokens: 18, CachedTokens: 96}},
		{"a", day2, agent.Usage{PromptTokens: 7, CompletionTokens: 1}},
		{"b", day2, agent.Usage{}},
		{"", day1, agent.Usage{PromptTokens: 1153, CompletionTokens: 118, CachedTokens: 608}},
		// The day is the date in the time's own location: 2025-07-02 01:30 in
		// UTC+2 is 2025-07-01 23:30 UTC, but counts as July 2nd.
		{"a", day1.In(time.FixedZone("UTC+2", 2*3600)), agent.Usage{PromptTokens: 7, CompletionTokens: 1}},
	}
	for _, tt := range tests {
		got, err := s.UsageOn(ctx, tt.session, tt.on)
		if err != nil {
			t.Fatal(err)
		}
		if got != tt.want {
			t.Errorf("UsageOn(%q, %v) = %+v, want %+v", tt.session, tt.on, got, tt.want)
		}
	}

	rows, err := s.UsageSince(ctx, day1)
	if err != nil {
		t.Fatal(err)
	}
	want := []UsageRow{
		{Day: "2025-07-01", Session: "a", Model: "m1", Calls: 2, Usage: agent.Usage{PromptTokens: 150, CompletionTokens: 15, CachedTokens: 96}},
		{Day: "2025-07-01", Session: "a", Model: "m2", Calls: 1, Usage: agent.Usage{PromptTokens: 3, CompletionTokens: 3}},
		{Day: "2025-07-01", Session: "b", Model: "m1", Calls: 1, Usage: agent.Usage{PromptTokens: 1000, CompletionTokens: 100, CachedTokens: 512}},
		{Day: "2025-07-02", Session: "a", Model: "m1", Calls: 1, Usage: agent.Usage{PromptTokens: 7, CompletionTokens: 1}},
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("UsageSince (-want +got):\n%s", diff)
	}
	if rows, _ := s.UsageSince(ctx, day2); len(rows) != 1 {
		t.Errorf("UsageSince(day 2) = %+v, want one row", rows)
	}
}

func TestAppendCountsAssistantMessagesAsCalls(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	at := time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)
	err := s.Append(ctx, "telegram:1",
		agent.Message{Role: agent.RoleUser, Content: "hi", CreatedAt: at},
		agent.Message{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "a", Name: "x"}}, Usage: agent.Usage{PromptTokens: 100, CompletionTokens: 5}, CreatedAt: at},
		agent.Message{Role: agent.RoleTool, ToolCallID: "a", Content: "ok", CreatedAt: at},
		agent.Message{Role: agent.RoleAssistant, Content: "done", Usage: agent.Usage{PromptTokens: 120, CompletionTokens: 7, CachedTokens: 96}, CreatedAt: at},
	)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.UsageOn(ctx, "telegram:1", at)
	if err != nil || got != (agent.Usage{PromptTokens: 220, CompletionTokens: 12, CachedTokens: 96}) {
		t.Errorf("UsageOn = %+v, %v; want the two assistant messages' tokens", got, err)
	}
	rows, _ := s.UsageSince(ctx, at.Add(-time.Hour))
	if len(rows) != 1 || rows[0].Calls != 2 {
		t.Errorf("UsageSince = %+v; want one row with 2 calls", rows)
	}
}

// Usage counted before the store knew cached tokens reads as none cached,
// and a later call on the same day adds its cached tokens to that row.
func TestUsageFromBeforeCachedTokens(t *testing.T) {
	ctx := t.Context()
	ms, err := loadMigrations(migrationData{FTS5: libraryFTS5(t)})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(ms, func(m migration) bool { return strings.HasSuffix(m.name, "provider_fields.sql") })
	if i < 0 {
		t.Fatal("no migration adds cached_tokens")
	}
	path := dbPath(t)
	raw := rawDB(t, path)
	for _, m := range ms[:i] {
		if _, err := raw.Exec(m.sql); err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
	}
	if _, err := raw.Exec(fmt.Sprintf(`PRAGMA user_version = %d;
		INSERT INTO usage (session, day, model, calls, prompt_tokens, completion_tokens)
		VALUES ('telegram:1', '2026-03-04', 'm', 2, 300, 30)`, ms[i-1].version)); err != nil {
		t.Fatal(err)
	}
	raw.Close()

	s := openAt(t, path, options{})
	at := time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)
	if got, err := s.UsageOn(ctx, "telegram:1", at); err != nil || got != (agent.Usage{PromptTokens: 300, CompletionTokens: 30}) {
		t.Errorf("UsageOn of the old row = %+v, %v; want 300+30 tokens, none cached", got, err)
	}
	if err := s.RecordUsage(ctx, "telegram:1", at, "m", agent.Usage{PromptTokens: 200, CompletionTokens: 10, CachedTokens: 150}); err != nil {
		t.Fatal(err)
	}
	rows, err := s.UsageSince(ctx, at)
	want := []UsageRow{{Day: "2026-03-04", Session: "telegram:1", Model: "m", Calls: 3,
		Usage: agent.Usage{PromptTokens: 500, CompletionTokens: 40, CachedTokens: 150}}}
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("UsageSince after a cached call (-want +got):\n%s", diff)
	}
}
