package telegram

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/turns"
)

// memStore is an in-memory Store with the same contract as memory.Store.
type memStore struct {
	mu         sync.Mutex
	inbox      []turns.InboxItem
	outbox     []turns.OutboxItem
	state      map[string]string
	failRecord error
	notices    map[string]time.Time
}

var _ Store = (*memStore)(nil)

func newMemStore() *memStore { return &memStore{state: map[string]string{}} }

func (s *memStore) RecordInbound(_ context.Context, it turns.InboxItem) (int64, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failRecord != nil {
		return 0, false, s.failRecord
	}
	for _, old := range s.inbox {
		if old.Channel == it.Channel && old.UpdateID == it.UpdateID {
			return old.ID, false, nil
		}
	}
	it.ID = int64(len(s.inbox) + 1)
	if it.State == "" {
		it.State = turns.InboxPending
	}
	it.Payload = bytes.Clone(it.Payload)
	s.inbox = append(s.inbox, it)
	return it.ID, true, nil
}

func (s *memStore) PendingInbound(_ context.Context, channel string) ([]turns.InboxItem, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []turns.InboxItem
	for _, it := range s.inbox {
		if it.Channel == channel && (it.State == turns.InboxPending || it.State == turns.InboxStarted) {
			out = append(out, it)
		}
	}
	return out, nil
}

func (s *memStore) ClaimNotice(_ context.Context, key string, period time.Duration) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.notices == nil {
		s.notices = map[string]time.Time{}
	}
	if at, ok := s.notices[key]; ok && (period <= 0 || time.Since(at) < period) {
		return false, nil
	}
	s.notices[key] = time.Now()
	return true, nil
}

// start marks an item as its turn's first record would.
func (s *memStore) start(id, messageID int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.inbox {
		if s.inbox[i].ID == id {
			s.inbox[i].State, s.inbox[i].MessageID = turns.InboxStarted, messageID
		}
	}
}

func (s *memStore) CompleteInbound(_ context.Context, ids []int64, reply *turns.OutboxItem) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	open := false
	for _, it := range s.inbox {
		open = open || (slices.Contains(ids, it.ID) && it.State != turns.InboxDone)
	}
	if len(ids) > 0 && !open {
		return 0, nil // closed by the turn's last record
	}
	for i := range s.inbox {
		if slices.Contains(ids, s.inbox[i].ID) {
			s.inbox[i].State = turns.InboxDone
		}
	}
	if reply == nil {
		return 0, nil
	}
	r := *reply
	r.ID = int64(len(s.outbox) + 1)
	r.State = turns.OutboxPending
	s.outbox = append(s.outbox, r)
	return r.ID, nil
}

// FinishTurn is the engine's close: the items done and the reply queued.
func (s *memStore) FinishTurn(ctx context.Context, t agent.Turn, text string) error {
	if len(t.Inbox) == 0 {
		return nil
	}
	var reply *turns.OutboxItem
	if text == "" {
		text = t.Fallback
	}
	if text != "" {
		reply = &turns.OutboxItem{Channel: t.Channel, ChatID: t.ChatID, Text: text, ReplyTo: t.ReplyTo,
			InboxID: slices.Max(t.Inbox), State: turns.OutboxPending, CreatedAt: time.Now().UTC()}
	}
	_, err := s.CompleteInbound(ctx, t.Inbox, reply)
	return err
}

func (s *memStore) Enqueue(_ context.Context, it turns.OutboxItem) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	it.ID = int64(len(s.outbox) + 1)
	it.State = turns.OutboxPending
	s.outbox = append(s.outbox, it)
	return it.ID, nil
}

func (s *memStore) PendingOutbound(_ context.Context, channel string) ([]turns.OutboxItem, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []turns.OutboxItem
	for _, it := range s.outbox {
		if it.Channel == channel && it.State == turns.OutboxPending {
			out = append(out, it)
		}
	}
	return out, nil
}

func (s *memStore) MarkSent(_ context.Context, id, messageID int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.outbox {
		if s.outbox[i].ID == id {
			s.outbox[i].State = turns.OutboxSent
			s.outbox[i].SentMessageID = messageID
			return nil
		}
	}
	return fmt.Errorf("outbox item %d not found", id)
}

func (s *memStore) MarkOutboundFailed(_ context.Context, id int64, _ string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.outbox {
		if s.outbox[i].ID == id {
			s.outbox[i].State = turns.OutboxFailed
			return nil
		}
	}
	return fmt.Errorf("outbox item %d not found", id)
}

func (s *memStore) State(_ context.Context, key string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state[key], nil
}

func (s *memStore) SetState(_ context.Context, key, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state[key] = value
	return nil
}

// setFailRecord makes RecordInbound fail with err (nil: succeed again).
func (s *memStore) setFailRecord(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failRecord = err
}

func (s *memStore) inboxItems() []turns.InboxItem {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.inbox)
}

func (s *memStore) outboxItems() []turns.OutboxItem {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.outbox)
}

// settled reports whether every inbox item is done and every reply left the
// outbox.
func (s *memStore) settled() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, it := range s.inbox {
		if it.State != turns.InboxDone {
			return false
		}
	}
	for _, it := range s.outbox {
		if it.State == turns.OutboxPending {
			return false
		}
	}
	return true
}

// testEngine is a turn engine over store (a new one when nil) that echoes.
func testEngine(store *memStore) *turns.Engine {
	if store == nil {
		store = newMemStore()
	}
	return turns.New(store, newResponder(nil), turns.Config{}, nil, turns.Hooks{})
}

// respondCall is one call the channel made to the responder.
type respondCall struct {
	Turn   agent.Turn
	Msg    agent.Message
	Resume bool
}

// fakeResponder records calls and answers with answer (default: an echo).
type fakeResponder struct {
	answer func(ctx context.Context, c respondCall) (string, error)

	mu      sync.Mutex
	calls   []respondCall
	changed chan struct{}
}

func newResponder(answer func(ctx context.Context, c respondCall) (string, error)) *fakeResponder {
	if answer == nil {
		answer = func(_ context.Context, c respondCall) (string, error) { return "echo: " + c.Msg.Content, nil }
	}
	return &fakeResponder{answer: answer, changed: make(chan struct{})}
}

func (r *fakeResponder) Respond(ctx context.Context, t agent.Turn, msg agent.Message, resume bool) (string, error) {
	c := respondCall{Turn: t, Msg: msg, Resume: resume}
	r.mu.Lock()
	r.calls = append(r.calls, c)
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
	return r.answer(ctx, c)
}

// Answer is the responder as the turn engine's answerer.
func (r *fakeResponder) Answer(ctx context.Context, t agent.Turn, msg agent.Message, resume bool) (agent.Result, error) {
	text, err := r.Respond(ctx, t, msg, resume)
	return agent.Result{Text: text}, err
}

func (r *fakeResponder) Calls() []respondCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// waitCalls waits until the responder was called at least n times.
func (r *fakeResponder) waitCalls(t *testing.T, n int) []respondCall {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for {
		r.mu.Lock()
		calls, changed := slices.Clone(r.calls), r.changed
		r.mu.Unlock()
		if len(calls) >= n {
			return calls
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("responder called %d times, want %d", len(calls), n)
		}
	}
}

type fakeSessions struct {
	mu     sync.Mutex
	resets []string
	model  string // when set, Status names the model itself
}

func (s *fakeSessions) Reset(_ context.Context, session string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resets = append(s.resets, session)
	return nil
}

func (s *fakeSessions) Status(_ context.Context, session string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.model != "" {
		return "Model: " + s.model + "\nConversation " + session + ": 3 messages", nil
	}
	return "Conversation " + session + ": 3 messages", nil
}

func (s *fakeSessions) setModel(m string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.model = m
}

func (s *fakeSessions) Resets() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.resets)
}

type fakeTranscriber struct{ text string }

func (f fakeTranscriber) Transcribe(_ context.Context, _ string, audio []byte) (string, error) {
	if len(audio) == 0 {
		return "", errors.New("empty audio")
	}
	return f.text, nil
}

// syncBuffer collects log output from many goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitUntil re-checks cond until it holds, failing after 30 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		select {
		case <-tick.C:
		case <-t.Context().Done():
			t.Fatalf("test ended waiting until %s", what)
		}
	}
}
