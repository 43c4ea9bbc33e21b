package memory

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nanobot-go/nanobot/channels"
)

func inbound(update int64) channels.InboxItem {
	return channels.InboxItem{Channel: "telegram", UpdateID: update, ChatID: "42", Payload: []byte(`{"update_id":1}`)}
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
	want := []channels.InboxItem{{ID: id, Channel: "telegram", UpdateID: 100, ChatID: "42",
		Payload: []byte(`{"update_id":1}`), State: channels.InboxPending, ReceivedAt: at}}
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
	if err := s.StartInbound(ctx, ids[1], ids[2]); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CompleteInbound(ctx, []int64{ids[2]}, nil); err != nil {
		t.Fatal(err)
	}
	// Starting a done item again does not reopen it.
	if err := s.StartInbound(ctx, ids[2]); err != nil {
		t.Fatal(err)
	}
	items, err := s.PendingInbound(ctx, "telegram")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range items {
		got = append(got, it.State)
	}
	want := []string{channels.InboxPending, channels.InboxStarted, channels.InboxPending}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pending states (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int64{ids[0], ids[1], ids[3]}, pendingIDs(t, s, "telegram")); diff != "" {
		t.Errorf("pending ids not in arrival order (-want +got):\n%s", diff)
	}
}

func TestCompleteInbound(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	a, _, _ := s.RecordInbound(ctx, inbound(1))
	b, _, _ := s.RecordInbound(ctx, inbound(2))

	reply := &channels.OutboxItem{Channel: "telegram", ChatID: "42", Text: "**hi**", ReplyTo: 7, InboxID: b}
	// An unknown id fails the whole step: nothing done, nothing enqueued.
	if _, err := s.CompleteInbound(ctx, []int64{a, 9999}, reply); !errors.Is(err, ErrNotFound) {
		t.Fatalf("CompleteInbound with an unknown id = %v, want ErrNotFound", err)
	}
	if got := pendingIDs(t, s, "telegram"); len(got) != 2 {
		t.Errorf("pending after a failed CompleteInbound = %v, want both", got)
	}
	if out, _ := s.PendingOutbound(ctx, "telegram"); len(out) != 0 {
		t.Errorf("outbox after a failed CompleteInbound = %+v, want empty", out)
	}

	// A reply to two messages answered in one turn, ids repeated.
	oid, err := s.CompleteInbound(ctx, []int64{a, b, b}, reply)
	if err != nil || oid == 0 {
		t.Fatalf("CompleteInbound = %d, %v", oid, err)
	}
	if got := pendingIDs(t, s, "telegram"); len(got) != 0 {
		t.Errorf("pending after CompleteInbound = %v, want none", got)
	}
	out, err := s.PendingOutbound(ctx, "telegram")
	if err != nil || len(out) != 1 {
		t.Fatalf("PendingOutbound = %+v, %v; want the reply", out, err)
	}
	want := channels.OutboxItem{ID: oid, Channel: "telegram", ChatID: "42", Text: "**hi**", ReplyTo: 7, InboxID: b,
		State: channels.OutboxPending, CreatedAt: out[0].CreatedAt}
	if diff := cmp.Diff(want, out[0]); diff != "" {
		t.Errorf("enqueued reply (-want +got):\n%s", diff)
	}
	if oid, err := s.CompleteInbound(ctx, []int64{a}, nil); err != nil || oid != 0 {
		t.Errorf("CompleteInbound without a reply = %d, %v; want 0, nil", oid, err)
	}
}

func TestOutbox(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	var ids []int64
	for _, text := range []string{"one", "two", "three"} {
		id, err := s.Enqueue(ctx, channels.OutboxItem{Channel: "telegram", ChatID: "1", Text: text})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if _, err := s.Enqueue(ctx, channels.OutboxItem{Channel: "cli", ChatID: "1", Text: "elsewhere"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Enqueue(ctx, channels.OutboxItem{Channel: "telegram", ChatID: "1", Text: "x", InboxID: 12345}); err == nil {
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
		state != channels.OutboxSent || sentID != 555 || attempts != 1 {
		t.Errorf("sent row = %s, %d, %d, %v; want sent, 555, 1", state, sentID, attempts, err)
	}
	if err := s.db.QueryRow(`SELECT state, error FROM outbox WHERE id = ?`, ids[2]).Scan(&state, &reason); err != nil ||
		state != channels.OutboxFailed || reason == "" {
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
