package memory

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nanobot-go/nanobot/agent"
)

func user(text string) agent.Message { return agent.Message{Role: agent.RoleUser, Content: text} }

func assistant(text string) agent.Message {
	return agent.Message{Role: agent.RoleAssistant, Content: text}
}

func call(ids ...string) agent.Message {
	m := agent.Message{Role: agent.RoleAssistant}
	for _, id := range ids {
		m.ToolCalls = append(m.ToolCalls, agent.ToolCall{ID: id, Name: "exec", Arguments: `{"command":"ls"}`})
	}
	return m
}

func result(id string) agent.Message {
	return agent.Message{Role: agent.RoleTool, ToolCallID: id, Name: "exec", Content: "out " + id}
}

// brief renders messages compactly for comparisons: "u:hi a:ok c:1,2 r:1".
func brief(msgs []agent.Message) string {
	var parts []string
	for _, m := range msgs {
		switch {
		case m.Role == agent.RoleUser:
			parts = append(parts, "u:"+m.Content)
		case len(m.ToolCalls) > 0:
			var ids []string
			for _, c := range m.ToolCalls {
				ids = append(ids, c.ID)
			}
			parts = append(parts, "c:"+strings.Join(ids, ","))
		case m.Role == agent.RoleTool:
			parts = append(parts, "r:"+m.ToolCallID)
		default:
			parts = append(parts, "a:"+m.Content)
		}
	}
	return strings.Join(parts, " ")
}

func TestAppendRecentRoundTrip(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	at := time.Date(2025, 3, 4, 5, 6, 7, 8_000_000, time.UTC)
	in := []agent.Message{
		{Role: agent.RoleUser, Content: "look", Images: []string{"data:image/png;base64,AAAA"}, CreatedAt: at},
		{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "c1", Name: "read_file", Arguments: `{"path":`,
			Extra: json.RawMessage(`{"extra_content":{"google":{"thought_signature":"c2ln"}}}`)}},
			Extra:     json.RawMessage(`{"reasoning_content":"I should read it.","reasoning_details":[{"type":"reasoning.encrypted","data":"x"}]}`),
			CreatedAt: at, Usage: agent.Usage{PromptTokens: 120, CompletionTokens: 7}},
		{Role: agent.RoleTool, ToolCallID: "c1", Name: "read_file", Content: "Error: bad json", CreatedAt: at},
		{Role: agent.RoleAssistant, Content: "done ✓", CreatedAt: at},
	}
	if err := s.Append(ctx, "telegram:1", in...); err != nil {
		t.Fatal(err)
	}
	got, err := s.Recent(ctx, "telegram:1", 10)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(in, got); diff != "" {
		t.Errorf("Recent differs from what was appended (-want +got):\n%s", diff)
	}

	if err := s.Append(ctx, "telegram:1", agent.Message{Role: agent.RoleUser, Content: "now"}); err != nil {
		t.Fatal(err)
	}
	got, err = s.Recent(ctx, "telegram:1", 1)
	if err != nil || len(got) != 1 {
		t.Fatalf("Recent = %v, %v", got, err)
	}
	if d := time.Since(got[0].CreatedAt); d < 0 || d > time.Hour {
		t.Errorf("zero CreatedAt stored as %v, want about now", got[0].CreatedAt)
	}
}

func TestAppendRejectsUnknownRole(t *testing.T) {
	s := newStore(t)
	err := s.Append(t.Context(), "s", user("ok"), agent.Message{Role: "robot", Content: "x"})
	if err == nil {
		t.Fatal("Append of an unknown role succeeded")
	}
	if got, _ := s.Recent(t.Context(), "s", 10); len(got) != 0 {
		t.Errorf("a failed Append stored %v, want nothing", brief(got))
	}
}

func TestRecentStartsAtUserMessage(t *testing.T) {
	session := []agent.Message{
		user("1"), assistant("1"),
		user("2"), call("x", "y"), result("x"), result("y"), assistant("2"),
		user("3"), call("z"), result("z"), call("w"), result("w"), assistant("3"),
	}
	tests := []struct {
		limit int
		want  string
	}{
		{limit: 0, want: ""},
		{limit: 1, want: ""}, // only "a3" fits: no user message in the window
		{limit: 5, want: ""},
		{limit: 6, want: "u:3 c:z r:z c:w r:w a:3"},
		{limit: 7, want: "u:3 c:z r:z c:w r:w a:3"},
		{limit: 10, want: "u:3 c:z r:z c:w r:w a:3"},
		{limit: 11, want: "u:2 c:x,y r:x r:y a:2 u:3 c:z r:z c:w r:w a:3"},
		{limit: 13, want: "u:1 a:1 u:2 c:x,y r:x r:y a:2 u:3 c:z r:z c:w r:w a:3"},
		{limit: 100, want: "u:1 a:1 u:2 c:x,y r:x r:y a:2 u:3 c:z r:z c:w r:w a:3"},
	}
	s := newStore(t)
	if err := s.Append(t.Context(), "s", session...); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.limit), func(t *testing.T) {
			got, err := s.Recent(t.Context(), "s", tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			if brief(got) != tt.want {
				t.Errorf("Recent(%d) = %q, want %q", tt.limit, brief(got), tt.want)
			}
		})
	}
}

func TestRecentOfLongSession(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	const n = 10_000
	msgs := make([]agent.Message, 0, n)
	for i := range n {
		switch i % 4 {
		case 0:
			msgs = append(msgs, user(fmt.Sprint(i)))
		case 1:
			msgs = append(msgs, call(fmt.Sprint(i)))
		case 2:
			msgs = append(msgs, result(fmt.Sprint(i-1)))
		default:
			msgs = append(msgs, assistant(fmt.Sprint(i)))
		}
	}
	// Another chat's messages interleave with this one's.
	for i := 0; i < n; i += 1000 {
		if err := s.Append(ctx, "long", msgs[i:i+1000]...); err != nil {
			t.Fatal(err)
		}
		if err := s.Append(ctx, "other", user("noise")); err != nil {
			t.Fatal(err)
		}
	}

	got, err := s.Recent(ctx, "long", 50)
	if err != nil {
		t.Fatal(err)
	}
	// The newest 50 are 9950..9999; 9950 % 4 == 2, so the window is trimmed
	// to the user message 9952.
	if want := brief(msgs[9952:]); brief(got) != want {
		t.Errorf("Recent(50) = %q\nwant %q", brief(got), want)
	}

	// Only the window is read: the plan walks the index and sorts nothing.
	rows, err := s.db.QueryContext(ctx, `EXPLAIN QUERY PLAN SELECT `+messageColumns+` FROM messages
		WHERE session = ? AND state = 'live' ORDER BY id DESC LIMIT ?`, "long", 50)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	p := strings.Join(plan, "; ")
	if !strings.Contains(p, "USING INDEX messages_session_state_id") || strings.Contains(p, "TEMP B-TREE") {
		t.Errorf("window query plan = %q, want an index walk without a sort", p)
	}
}

func TestResetSession(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	if err := s.Append(ctx, "a", user("1"), assistant("1")); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "b", user("keep")); err != nil {
		t.Fatal(err)
	}
	if err := s.ResetSession(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Recent(ctx, "a", 10); err != nil || len(got) != 0 {
		t.Errorf("Recent after ResetSession = %q, %v; want empty", brief(got), err)
	}
	if got, _ := s.Recent(ctx, "b", 10); brief(got) != "u:keep" {
		t.Errorf("other session after ResetSession = %q, want untouched", brief(got))
	}
	if err := s.Append(ctx, "a", user("2")); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Recent(ctx, "a", 10); brief(got) != "u:2" {
		t.Errorf("Recent after a new message = %q, want %q", brief(got), "u:2")
	}
	st, err := s.SessionStats(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if st.Live != 1 || st.Total != 3 || st.FirstLiveID == 0 {
		t.Errorf("SessionStats = %+v, want 1 live of 3, a first live id", st)
	}
	var archived int
	if err := s.db.QueryRow(`SELECT count(*) FROM messages WHERE state = 'archived'`).Scan(&archived); err != nil || archived != 2 {
		t.Errorf("archived messages = %d, %v; want 2 (archived, not consolidated)", archived, err)
	}
}

func TestLiveMessagesAndStats(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	if st, err := s.SessionStats(ctx, "none"); err != nil || st != (SessionStats{}) {
		t.Errorf("SessionStats of an empty session = %+v, %v; want zero", st, err)
	}
	if err := s.Append(ctx, "s", user("1"), assistant("1"), user("2"), assistant("2")); err != nil {
		t.Fatal(err)
	}
	all, err := s.LiveMessages(ctx, "s", 0)
	if err != nil || len(all) != 4 {
		t.Fatalf("LiveMessages(0) = %d messages, %v; want 4", len(all), err)
	}
	for i := 1; i < len(all); i++ {
		if all[i].ID <= all[i-1].ID {
			t.Errorf("LiveMessages not oldest first: id %d after %d", all[i].ID, all[i-1].ID)
		}
	}
	two, err := s.LiveMessages(ctx, "s", 2)
	if err != nil || len(two) != 2 || two[0].ID != all[0].ID || two[1].Content != "1" {
		t.Errorf("LiveMessages(2) = %+v, %v; want the two oldest", two, err)
	}
	st, err := s.SessionStats(ctx, "s")
	if err != nil || st != (SessionStats{Live: 4, Total: 4, FirstLiveID: all[0].ID}) {
		t.Errorf("SessionStats = %+v, %v", st, err)
	}
}
