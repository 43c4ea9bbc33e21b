package turns_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/memory"
	"github.com/nanobot-go/nanobot/turns"
)

// answerer answers turns with fn, recording each call.
type answerer struct {
	fn func(ctx context.Context, t agent.Turn, msg agent.Message, resume bool) (agent.Result, error)

	mu    sync.Mutex
	calls []string // the messages answered, in order
	cond  chan struct{}
}

func newAnswerer(fn func(ctx context.Context, t agent.Turn, msg agent.Message, resume bool) (agent.Result, error)) *answerer {
	if fn == nil {
		fn = func(_ context.Context, _ agent.Turn, msg agent.Message, _ bool) (agent.Result, error) {
			return agent.Result{Text: "re: " + msg.Content, Stop: agent.StopAnswered}, nil
		}
	}
	return &answerer{fn: fn, cond: make(chan struct{})}
}

func (a *answerer) Answer(ctx context.Context, t agent.Turn, msg agent.Message, resume bool) (agent.Result, error) {
	a.mu.Lock()
	a.calls = append(a.calls, msg.Content)
	close(a.cond)
	a.cond = make(chan struct{})
	a.mu.Unlock()
	return a.fn(ctx, t, msg, resume)
}

// wait waits until n calls were made and returns them.
func (a *answerer) wait(t *testing.T, n int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for {
		a.mu.Lock()
		calls, cond := slices.Clone(a.calls), a.cond
		a.mu.Unlock()
		if len(calls) >= n {
			return calls
		}
		select {
		case <-cond:
		case <-ctx.Done():
			t.Fatalf("%d turns answered, want %d: %q", len(calls), n, calls)
		}
	}
}

// texts is a source of plain text items: the payload is the text, the
// chat its queue, and texts of one chat merge.
type texts struct{ full chan struct{} }

func (texts) Prepare(_ context.Context, it turns.InboxItem) turns.Job {
	text := string(it.Payload)
	if text == "/status" {
		return turns.Job{Now: true, Reply: "status", Turn: agent.Turn{Channel: "test", ChatID: it.ChatID}}
	}
	return turns.Job{Chat: "test:" + it.ChatID, Merge: it.ChatID, Text: text}
}

func (texts) Plan(_ context.Context, batch []*turns.Job) turns.Plan {
	first := batch[0].Item
	return turns.Plan{
		Turn:    agent.Turn{Session: "test:" + first.ChatID, Channel: "test", ChatID: first.ChatID},
		Message: agent.Message{Role: agent.RoleUser, Content: turns.MergedText(batch)},
		Resume:  first.State == turns.InboxStarted,
	}
}

func (s texts) StorageFull(context.Context, []*turns.Job, time.Duration) {
	if s.full != nil {
		s.full <- struct{}{}
	}
}

func openStore(t *testing.T) (*memory.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "nanobot.db")
	s, err := memory.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}

var update int64

func record(t *testing.T, s *memory.Store, chat, text string) turns.InboxItem {
	t.Helper()
	update++
	it := turns.InboxItem{Channel: "test", UpdateID: update, ChatID: chat, Payload: []byte(text), State: turns.InboxPending}
	id, _, err := s.RecordInbound(t.Context(), it)
	if err != nil {
		t.Fatal(err)
	}
	it.ID = id
	return it
}

// newEngine is an engine over s whose Queued hook rings bell.
func newEngine(t *testing.T, s turns.Store, a turns.Answerer, cfg turns.Config) (*turns.Engine, *turns.Bell) {
	bell := turns.NewBell()
	e := turns.New(s, a, cfg, nil, turns.Hooks{Queued: bell.Ring})
	t.Cleanup(e.Shutdown)
	return e, bell
}

// replies waits until the outbox holds n replies and returns their texts.
func replies(t *testing.T, s *memory.Store, bell *turns.Bell, n int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for {
		items, err := s.PendingOutbound(t.Context(), "test")
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, it := range items {
			out = append(out, it.ChatID+": "+it.Text)
		}
		if len(out) >= n {
			return out
		}
		select {
		case <-bell.For("test"):
		case <-ctx.Done():
			t.Fatalf("outbox holds %q, want %d replies", out, n)
		}
	}
}

// Each chat is answered in order, one turn at a time, while other chats
// run; texts written while a turn runs merge into the next turn.
func TestChatsInOrderAndInParallel(t *testing.T) {
	s, _ := openStore(t)
	release := make(chan struct{})
	a := newAnswerer(func(_ context.Context, tn agent.Turn, msg agent.Message, _ bool) (agent.Result, error) {
		if msg.Content == "slow" {
			<-release
		}
		return agent.Result{Text: "re: " + msg.Content, Stop: agent.StopAnswered}, nil
	})
	e, bell := newEngine(t, s, a, turns.Config{})
	if err := e.Attach(t.Context(), texts{}, "test"); err != nil {
		t.Fatal(err)
	}
	e.Add(t.Context(), record(t, s, "1", "slow"))
	a.wait(t, 1)
	e.Add(t.Context(), record(t, s, "1", "two"))
	e.Add(t.Context(), record(t, s, "1", "three"))
	e.Add(t.Context(), record(t, s, "2", "other chat"))
	if got := a.wait(t, 2); got[1] != "other chat" {
		t.Fatalf("calls %q: the second chat waited for the first", got)
	}
	if l := e.ChatLoad("test:1"); !l.Busy || l.Waiting != 2 {
		t.Errorf("load of chat 1 = %+v, want busy with 2 waiting", l)
	}
	e.Add(t.Context(), record(t, s, "1", "/status")) // answered at once, not queued
	close(release)
	calls := a.wait(t, 3)
	if calls[2] != "two\n\nthree" {
		t.Errorf("calls %q: want the two texts written during the turn merged into one", calls)
	}
	got := replies(t, s, bell, 4)
	want := []string{"2: re: other chat", "1: status", "1: re: slow", "1: re: two\n\nthree"}
	if !slices.Equal(got, want) {
		t.Errorf("outbox %q, want %q", got, want)
	}
}

// /stop ends the running turn and keeps what waits behind it.
func TestStop(t *testing.T) {
	s, _ := openStore(t)
	ended := make(chan error, 1)
	a := newAnswerer(func(ctx context.Context, _ agent.Turn, msg agent.Message, _ bool) (agent.Result, error) {
		if msg.Content == "loop forever" {
			<-ctx.Done()
			ended <- context.Cause(ctx)
			return agent.Result{}, ctx.Err()
		}
		return agent.Result{Text: "re: " + msg.Content, Stop: agent.StopAnswered}, nil
	})
	e, bell := newEngine(t, s, a, turns.Config{})
	e.Attach(t.Context(), texts{}, "test")
	if got := e.Stop("test:1"); got != "Nothing is running." {
		t.Errorf("Stop of an idle chat = %q", got)
	}
	e.Add(t.Context(), record(t, s, "1", "loop forever"))
	a.wait(t, 1)
	if got := e.Stop("test:1"); !strings.Contains(got, `"loop forever"`) {
		t.Errorf("Stop = %q, want it to name what it stopped", got)
	}
	if err := <-ended; !errors.Is(err, turns.ErrStopped) {
		t.Errorf("turn ended by %v, want ErrStopped", err)
	}
	e.Add(t.Context(), record(t, s, "1", "next"))
	if got := replies(t, s, bell, 1); got[0] != "1: re: next" {
		t.Errorf("outbox %q: the stopped turn said something, or the next was not answered", got)
	}
	if p, _ := s.PendingInbound(t.Context(), "test"); len(p) != 0 {
		t.Errorf("%d items left open after /stop", len(p))
	}
}

// A shutdown past its timeout leaves the running turn's item in the inbox;
// the next engine resumes it, and an item queued twice (loaded by Attach
// and added by its intake) is answered once.
func TestShutdownAndResume(t *testing.T) {
	s, _ := openStore(t)
	a := newAnswerer(func(ctx context.Context, tn agent.Turn, msg agent.Message, _ bool) (agent.Result, error) {
		if err := s.Commit(ctx, tn, agent.Record{Messages: []agent.Message{msg}}); err != nil { // starts the item
			return agent.Result{}, err
		}
		<-ctx.Done()
		return agent.Result{}, ctx.Err()
	})
	e := turns.New(s, a, turns.Config{ShutdownTimeout: 20 * time.Millisecond}, nil, turns.Hooks{})
	e.Attach(t.Context(), texts{}, "test")
	it := record(t, s, "1", "long job")
	e.Add(t.Context(), it)
	a.wait(t, 1)
	e.Shutdown()
	pending, err := s.PendingInbound(t.Context(), "test")
	if err != nil || len(pending) != 1 || pending[0].State != turns.InboxStarted {
		t.Fatalf("after shutdown the inbox holds %+v (%v), want the item, started", pending, err)
	}

	var resumed []bool
	var mu sync.Mutex
	b := newAnswerer(func(_ context.Context, _ agent.Turn, msg agent.Message, resume bool) (agent.Result, error) {
		mu.Lock()
		resumed = append(resumed, resume)
		mu.Unlock()
		return agent.Result{Text: "done: " + msg.Content, Stop: agent.StopAnswered}, nil
	})
	e2, bell := newEngine(t, s, b, turns.Config{})
	if err := e2.Attach(t.Context(), texts{}, "test"); err != nil {
		t.Fatal(err)
	}
	e2.Add(t.Context(), pending[0]) // the same item again, as a late intake would
	if got := replies(t, s, bell, 1); got[0] != "1: done: long job" {
		t.Errorf("outbox %q", got)
	}
	e2.Shutdown()
	if calls := b.wait(t, 1); len(calls) != 1 || !resumed[0] {
		t.Errorf("resumed turns %q (resume %v), want one resumed turn", calls, resumed)
	}
}

// While the disk is full the turn is tried again, the chat is told once,
// and nothing is lost.
func TestDiskFullRetries(t *testing.T) {
	s, _ := openStore(t)
	var mu sync.Mutex
	failures := 3
	a := newAnswerer(func(_ context.Context, _ agent.Turn, msg agent.Message, _ bool) (agent.Result, error) {
		mu.Lock()
		defer mu.Unlock()
		if failures > 0 {
			failures--
			return agent.Result{}, fmt.Errorf("append messages: %w", turns.ErrStorageFull)
		}
		return agent.Result{Text: "re: " + msg.Content, Stop: agent.StopAnswered}, nil
	})
	full := make(chan struct{}, 10)
	e, bell := newEngine(t, s, a, turns.Config{})
	e.Attach(t.Context(), texts{full: full}, "test")
	e.Add(t.Context(), record(t, s, "1", "hello"))
	if got := replies(t, s, bell, 1); got[0] != "1: re: hello" {
		t.Errorf("outbox %q", got)
	}
	if len(a.wait(t, 4)) != 4 || len(full) != 1 {
		t.Errorf("%d tries, told %d times; want 4 tries and the chat told once", len(a.calls), len(full))
	}
}

// Await runs a turn that is not recorded (the terminal chat) in its chat's
// order and returns the answer with its error.
func TestAwait(t *testing.T) {
	outage := errors.New("model unreachable")
	a := newAnswerer(func(_ context.Context, _ agent.Turn, msg agent.Message, _ bool) (agent.Result, error) {
		if msg.Content == "fail" {
			return agent.Result{Text: "The model could not be reached."}, outage
		}
		return agent.Result{Text: "re: " + msg.Content, Stop: agent.StopAnswered}, nil
	})
	e, _ := newEngine(t, nil, a, turns.Config{})
	text, err := e.Await(t.Context(), texts{}, turns.Job{Chat: "cli:x", Text: "hi"})
	if text != "re: hi" || err != nil {
		t.Errorf("Await = %q, %v", text, err)
	}
	text, err = e.Await(t.Context(), texts{}, turns.Job{Chat: "cli:x", Text: "fail"})
	if text != "The model could not be reached." || !errors.Is(err, outage) {
		t.Errorf("Await of an outage = %q, %v; want the honest text and the error", text, err)
	}
}
