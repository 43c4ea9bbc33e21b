package memory

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/turns"
)

func inbound(update int64) turns.InboxItem {
	return turns.InboxItem{Channel: "telegram", UpdateID: update, ChatID: "42", Payload: []byte(`{"update_id":1}`)}
}

func pendingIDs(t *testing.T, s *Store, channel string) []int64 {
	t.Helper()
	items, err := s.PendingInbound(t.Context(), channel)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, it := range items {
		ids = append(ids, it.ID)
	}
	return ids
}

func TestRecordInboundOnce(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	at := time.Date(2025, 2, 3, 4, 5, 6, 0, time.UTC)
	in := inbound(100)
	in.ReceivedAt = at
	id, inserted, err := s.RecordInbound(ctx, in)
	if err != nil || !inserted || id == 0 {
		t.Fatalf("RecordInbound = %d, %v, %v; want a new id", id, inserted, err)
	}
	again, inserted, err := s.RecordInbound(ctx, in)
	if err != nil || inserted || again != id {
		t.Errorf("RecordInbound of a replay = %d, %v, %v; want %d, false, nil", again, inserted, err, id)
	}
	// The same update id on another channel is another update.
	other := in
	other.Channel = "cli"
	if oid, inserted, err := s.RecordInbound(ctx, other); err != nil || !inserted || oid == id {
		t.Errorf("RecordInbound on another channel = %d, %v, %v; want a new id", oid, inserted, err)
	}

	items, err := s.PendingInbound(ctx, "telegram")
	if err != nil {
		t.Fatal(err)
	}
	want := []turns.InboxItem{{ID: id, Channel: "telegram", UpdateID: 100, ChatID: "42",
		Payload: []byte(`{"update_id":1}`), State: turns.InboxPending, ReceivedAt: at}}
	if diff := cmp.Diff(want, items); diff != "" {
		t.Errorf("PendingInbound (-want +got):\n%s", diff)
	}
	if got := pendingIDs(t, s, ""); len(got) != 2 {
		t.Errorf("PendingInbound of every channel = %v, want 2 items", got)
	}
}

func TestInboxStates(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	var ids []int64
	for u := range int64(4) {
		id, _, err := s.RecordInbound(ctx, inbound(10+u))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	// A turn answering two items writes its first record: both start, linked
	// to its user message.
	turn := agent.Turn{Session: "telegram:42", Channel: "telegram", ChatID: "42", Inbox: []int64{ids[1], ids[2]}, ReplyTo: 7}
	call := agent.ToolCall{ID: "c1", Name: "exec", Arguments: `{"command":"ls"}`}
	if err := s.Commit(ctx, turn, agent.Record{Messages: []agent.Message{
		{Role: agent.RoleUser, Content: "one\n\ntwo"}, {Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{call}},
	}}); err != nil {
		t.Fatal(err)
	}
	items, err := s.PendingInbound(ctx, "telegram")
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := s.LiveMessages(ctx, "telegram:42", 0)
	if err != nil || len(msgs) != 2 {
		t.Fatalf("LiveMessages = %+v, %v", msgs, err)
	}
	var got []string
	for _, it := range items {
		got = append(got, fmt.Sprintf("%d %s %d", it.ID, it.State, it.MessageID))
	}
	want := []string{
		fmt.Sprintf("%d pending 0", ids[0]),
		fmt.Sprintf("%d started %d", ids[1], msgs[0].ID),
		fmt.Sprintf("%d started %d", ids[2], msgs[0].ID),
		fmt.Sprintf("%d pending 0", ids[3]),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("inbox after the first record (-want +got):\n%s", diff)
	}

	// The last record closes both and queues the answer, with the audit row
	// of the call it holds the result of. A resume that knows one of the
	// items still closes every item linked to the turn's message.
	ev := agent.ToolEvent{Turn: turn, Tool: "exec", Args: call.Arguments, Result: "a.txt", Verdict: "allow"}
	resumed := turn
	resumed.Inbox = []int64{ids[1]}
	if err := s.Commit(ctx, resumed, agent.Record{Last: true, Events: []agent.ToolEvent{ev}, Messages: []agent.Message{
		{Role: agent.RoleTool, ToolCallID: "c1", Content: "a.txt"}, {Role: agent.RoleAssistant, Content: "Here: a.txt"},
	}}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int64{ids[0], ids[3]}, pendingIDs(t, s, "telegram")); diff != "" {
		t.Errorf("pending ids after the last record (-want +got):\n%s", diff)
	}
	out, err := s.PendingOutbound(ctx, "telegram")
	if err != nil || len(out) != 1 || out[0].Text != "Here: a.txt" || out[0].ChatID != "42" || out[0].ReplyTo != 7 || out[0].InboxID != ids[2] {
		t.Fatalf("outbox = %+v, %v; want the answer to chat 42, replying to 7, for the last item", out, err)
	}
	audit, err := s.Audit(ctx, AuditFilter{})
	if err != nil || len(audit) != 1 || audit[0].Tool != "exec" || audit[0].OutputBytes != 5 {
		t.Errorf("audit = %+v, %v; want the exec call", audit, err)
	}

	// Closing them again, as a channel does after every turn, sends nothing more.
	if oid, err := s.completeInbound(ctx, []int64{ids[1], ids[2]}, &turns.OutboxItem{Channel: "telegram", ChatID: "42", Text: "again"}); err != nil || oid != 0 {
		t.Errorf("completeInbound of closed items = %d, %v; want 0, nil", oid, err)
	}
	if out, _ := s.PendingOutbound(ctx, "telegram"); len(out) != 1 {
		t.Errorf("outbox after closing again = %d items, want 1", len(out))
	}
}

// A record is all or nothing: when a message cannot be stored, the items
// stay pending and nothing else is written.
func TestCommitIsAtomic(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	id, _, _ := s.RecordInbound(ctx, inbound(1))
	turn := agent.Turn{Session: "telegram:42", Channel: "telegram", ChatID: "42", Inbox: []int64{id}}
	err := s.Commit(ctx, turn, agent.Record{Last: true, Events: []agent.ToolEvent{{Turn: turn, Tool: "exec"}}, Messages: []agent.Message{
		{Role: agent.RoleUser, Content: "hi"}, {Role: "robot", Content: "bad role"},
	}})
	if err == nil {
		t.Fatal("Commit with an invalid role succeeded")
	}
	items, _ := s.PendingInbound(ctx, "")
	msgs, _ := s.LiveMessages(ctx, "telegram:42", 0)
	out, _ := s.PendingOutbound(ctx, "")
	audit, _ := s.Audit(ctx, AuditFilter{})
	if len(items) != 1 || items[0].State != turns.InboxPending || len(msgs) != 0 || len(out) != 0 || len(audit) != 0 {
		t.Errorf("after a failed commit: items %+v, %d messages, %d outbox, %d audit; want one pending item and nothing else", items, len(msgs), len(out), len(audit))
	}
}

func TestCompleteInbound(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	a, _, _ := s.RecordInbound(ctx, inbound(1))
	b, _, _ := s.RecordInbound(ctx, inbound(2))

	reply := &turns.OutboxItem{Channel: "telegram", ChatID: "42", Text: "**hi**", ReplyTo: 7, InboxID: b}
	// An unknown id fails the whole step: nothing done, nothing enqueued.
	if _, err := s.completeInbound(ctx, []int64{a, 9999}, reply); !errors.Is(err, ErrNotFound) {
		t.Fatalf("completeInbound with an unknown id = %v, want ErrNotFound", err)
	}
	if got := pendingIDs(t, s, "telegram"); len(got) != 2 {
		t.Errorf("pending after a failed completeInbound = %v, want both", got)
	}
	if out, _ := s.PendingOutbound(ctx, "telegram"); len(out) != 0 {
		t.Errorf("outbox after a failed completeInbound = %+v, want empty", out)
	}

	// A reply to two messages answered in one turn, ids repeated.
	oid, err := s.completeInbound(ctx, []int64{a, b, b}, reply)
	if err != nil || oid == 0 {
		t.Fatalf("completeInbound = %d, %v", oid, err)
	}
	if got := pendingIDs(t, s, "telegram"); len(got) != 0 {
		t.Errorf("pending after completeInbound = %v, want none", got)
	}
	out, err := s.PendingOutbound(ctx, "telegram")
	if err != nil || len(out) != 1 {
		t.Fatalf("PendingOutbound = %+v, %v; want the reply", out, err)
	}
	want := turns.OutboxItem{ID: oid, Channel: "telegram", ChatID: "42", Text: "**hi**", ReplyTo: 7, InboxID: b,
		State: turns.OutboxPending, CreatedAt: out[0].CreatedAt}
	if diff := cmp.Diff(want, out[0]); diff != "" {
		t.Errorf("enqueued reply (-want +got):\n%s", diff)
	}
	if oid, err := s.completeInbound(ctx, []int64{a}, nil); err != nil || oid != 0 {
		t.Errorf("completeInbound without a reply = %d, %v; want 0, nil", oid, err)
	}
}

func TestOutbox(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	var ids []int64
	for _, text := range []string{"one", "two", "three"} {
		id, err := s.Enqueue(ctx, turns.OutboxItem{Channel: "telegram", ChatID: "1", Text: text})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if _, err := s.Enqueue(ctx, turns.OutboxItem{Channel: "cli", ChatID: "1", Text: "elsewhere"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Enqueue(ctx, turns.OutboxItem{Channel: "telegram", ChatID: "1", Text: "x", InboxID: 12345}); err == nil {
		t.Error("Enqueue linked to a missing inbox item succeeded")
	}
	if err := s.MarkSent(ctx, ids[0], 555); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkOutboundFailed(ctx, ids[2], "400 Bad Request: chat not found"); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkSent(ctx, 999, 1); !errors.Is(err, ErrNotFound) {
		t.Errorf("MarkSent of a missing item = %v, want ErrNotFound", err)
	}
	if err := s.MarkOutboundFailed(ctx, 999, "x"); !errors.Is(err, ErrNotFound) {
		t.Errorf("MarkOutboundFailed of a missing item = %v, want ErrNotFound", err)
	}
	out, err := s.PendingOutbound(ctx, "telegram")
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 || out[0].ID != ids[1] || out[0].Text != "two" {
		t.Errorf("PendingOutbound = %+v, want only %q", out, "two")
	}
	var state, reason string
	var sentID, attempts int64
	if err := s.db.QueryRow(`SELECT state, sent_message_id, attempts FROM outbox WHERE id = ?`, ids[0]).Scan(&state, &sentID, &attempts); err != nil ||
		state != turns.OutboxSent || sentID != 555 || attempts != 1 {
		t.Errorf("sent row = %s, %d, %d, %v; want sent, 555, 1", state, sentID, attempts, err)
	}
	if err := s.db.QueryRow(`SELECT state, error FROM outbox WHERE id = ?`, ids[2]).Scan(&state, &reason); err != nil ||
		state != turns.OutboxFailed || reason == "" {
		t.Errorf("failed row = %s, %q, %v; want failed with the reason", state, reason, err)
	}
	if all, _ := s.PendingOutbound(ctx, ""); len(all) != 2 {
		t.Errorf("PendingOutbound of every channel = %d items, want 2", len(all))
	}
}

func TestState(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	if v, err := s.State(ctx, "telegram.offset"); err != nil || v != "" {
		t.Errorf("State of a missing key = %q, %v; want empty", v, err)
	}
	for _, v := range []string{"100", "101"} {
		if err := s.SetState(ctx, "telegram.offset", v); err != nil {
			t.Fatal(err)
		}
	}
	if v, err := s.State(ctx, "telegram.offset"); err != nil || v != "101" {
		t.Errorf("State = %q, %v; want %q", v, err, "101")
	}
}

// Handled items leave the queues after a while or beyond a count; what is
// open, and what a waiting reply refers to, stays, and recent updates are
// still recognised when Telegram sends them again.
func TestQueuesArePruned(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	record := func(update int64) int64 {
		t.Helper()
		id, inserted, err := s.RecordInbound(ctx, inbound(update))
		if err != nil || !inserted {
			t.Fatalf("RecordInbound(%d) = %d, %v, %v", update, id, inserted, err)
		}
		return id
	}
	answer := func(id int64, sent bool) int64 {
		t.Helper()
		oid, err := s.completeInbound(ctx, []int64{id}, &turns.OutboxItem{Channel: "telegram", ChatID: "42", Text: "reply", InboxID: id})
		if err != nil {
			t.Fatal(err)
		}
		if sent {
			if err := s.MarkSent(ctx, oid, id); err != nil {
				t.Fatal(err)
			}
		}
		return oid
	}
	weekAgo := millis(time.Now().Add(-queueRetention - time.Hour))
	old := record(1)
	oldReply := answer(old, true)
	waiting := record(2)
	waitingReply := answer(waiting, false)
	open := record(3)
	for _, q := range []string{`UPDATE inbox SET updated_at = ?, received_at = ?`, `UPDATE outbox SET updated_at = ?, created_at = ?`} {
		if _, err := s.db.Exec(q, weekAgo, weekAgo); err != nil {
			t.Fatal(err)
		}
	}

	const n = 3 * queueKeep
	for u := int64(100); u < 100+n; u++ {
		id := record(u)
		if u%2 == 0 {
			answer(id, true)
		} else if _, err := s.completeInbound(ctx, []int64{id}, nil); err != nil {
			t.Fatal(err)
		}
	}

	count := func(q string, args ...any) int {
		t.Helper()
		var c int
		if err := s.db.QueryRow(q, args...).Scan(&c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	// The items the kept replies answer stay with them.
	if c := count(`SELECT count(*) FROM inbox WHERE state = 'done'`); c > 2*queueKeep+pruneEvery {
		t.Errorf("%d handled items kept after %d, want at most %d", c, n, 2*queueKeep+pruneEvery)
	}
	if c := count(`SELECT count(*) FROM outbox WHERE state <> 'pending'`); c > queueKeep+pruneEvery {
		t.Errorf("%d delivered replies kept after %d, want at most %d", c, n/2, queueKeep+pruneEvery)
	}
	for _, c := range []struct {
		what string
		q    string
		id   int64
		want int
	}{
		{"the week-old handled item", `SELECT count(*) FROM inbox WHERE id = ?`, old, 0},
		{"its delivered reply", `SELECT count(*) FROM outbox WHERE id = ?`, oldReply, 0},
		{"the item a waiting reply answers", `SELECT count(*) FROM inbox WHERE id = ?`, waiting, 1},
		{"the waiting reply", `SELECT count(*) FROM outbox WHERE id = ?`, waitingReply, 1},
		{"the open item", `SELECT count(*) FROM inbox WHERE id = ?`, open, 1},
	} {
		if got := count(c.q, c.id); got != c.want {
			t.Errorf("%s: %d rows, want %d", c.what, got, c.want)
		}
	}
	for u := int64(100 + n - 200); u < 100+n; u++ {
		if _, inserted, err := s.RecordInbound(ctx, inbound(u)); err != nil || inserted {
			t.Fatalf("a replay of recent update %d = inserted %v, %v; want recognised", u, inserted, err)
		}
	}
}

// TestRecordTakesItemsIntoTheTurn: a message its chat sent while a turn
// ran, recorded in one of the turn's later records, is linked to the
// turn's first message in that write, so a crash resumes it with the
// turn (never as a turn of its own), and the turn's last record closes it.
func TestRecordTakesItemsIntoTheTurn(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	var ids []int64
	for u := range int64(3) {
		id, _, err := s.RecordInbound(ctx, inbound(20+u))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	turn := agent.Turn{Session: "telegram:42", Channel: "telegram", ChatID: "42", Inbox: []int64{ids[0]}}
	call := agent.ToolCall{ID: "c1", Name: "list_dir", Arguments: `{}`}
	if err := s.Commit(ctx, turn, agent.Record{Messages: []agent.Message{
		{Role: agent.RoleUser, Content: "tidy up"}, {Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{call}},
	}}); err != nil {
		t.Fatal(err)
	}
	// A record that fails takes nothing.
	if err := s.Commit(ctx, turn, agent.Record{Inbox: []int64{ids[1]}, Messages: []agent.Message{{Role: "bogus"}}}); err == nil {
		t.Fatal("a record with an unknown role was stored")
	}
	if err := s.Commit(ctx, turn, agent.Record{Inbox: []int64{ids[1]}, Messages: []agent.Message{
		{Role: agent.RoleTool, ToolCallID: "c1", Content: "a.txt"},
		{Role: agent.RoleUser, Content: agent.SteeredMark + "not that folder"},
		{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "c2", Name: "list_dir", Arguments: `{"path":"b"}`}}},
	}}); err != nil {
		t.Fatal(err)
	}
	items, err := s.PendingInbound(ctx, "telegram")
	if err != nil || len(items) != 3 {
		t.Fatalf("pending = %+v, %v", items, err)
	}
	if items[1].State != turns.InboxStarted || items[1].MessageID != items[0].MessageID || items[0].MessageID == 0 {
		t.Errorf("taken item = %+v, want started with the turn's message %d", items[1], items[0].MessageID)
	}
	if items[2].State != turns.InboxPending {
		t.Errorf("item not taken = %+v, want pending", items[2])
	}
	// A resume knows only the turn's first item; its last record closes both.
	if err := s.Commit(ctx, turn, agent.Record{Last: true, Messages: []agent.Message{
		{Role: agent.RoleTool, ToolCallID: "c2", Content: "b.txt"}, {Role: agent.RoleAssistant, Content: "Done in b."},
	}}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int64{ids[2]}, pendingIDs(t, s, "telegram")); diff != "" {
		t.Errorf("pending after the last record (-want +got):\n%s", diff)
	}
	out, err := s.PendingOutbound(ctx, "telegram")
	if err != nil || len(out) != 1 || out[0].Text != "Done in b." || out[0].InboxID != ids[1] {
		t.Errorf("outbox = %+v, %v; want one answer, for the last item taken", out, err)
	}
}
