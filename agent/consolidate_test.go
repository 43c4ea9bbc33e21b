package agent_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/agent"
)

type memConsStore struct {
	mu      sync.Mutex
	msgs    []agent.StoredMessage
	memory  map[string]string
	history []string
	commits []agent.Consolidation
}

func (s *memConsStore) LiveMessages(_ context.Context, session string, limit int) ([]agent.StoredMessage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]agent.StoredMessage(nil), s.msgs...), nil
}

func (s *memConsStore) Memory(_ context.Context, scope string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.memory[scope], nil
}

func (s *memConsStore) Consolidate(_ context.Context, c agent.Consolidation) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.commits = append(s.commits, c)
	if c.HistoryEntry != "" {
		s.history = append(s.history, c.HistoryEntry)
	}
	if c.Memory != nil {
		s.memory[c.Scope] = *c.Memory
	}
	n := 0
	for n < len(s.msgs) && s.msgs[n].ID <= c.UpToID {
		n++
	}
	s.msgs = s.msgs[n:]
	return nil
}

func fillSession(n int) *memConsStore {
	s := &memConsStore{memory: map[string]string{"global": "- likes tea"}}
	for i := 1; i <= n; i++ {
		role := agent.RoleUser
		if i%2 == 0 {
			role = agent.RoleAssistant
		}
		s.msgs = append(s.msgs, agent.StoredMessage{ID: int64(i), Message: agent.Message{Role: role, Content: fmt.Sprintf("message %d", i)}})
	}
	return s
}

func saveCall(entry, doc string) agent.Response {
	return calls(agent.ToolCall{ID: "s", Name: "save_memory", Arguments: fmt.Sprintf(`{"history_entry":%q,"memory_update":%q}`, entry, doc)})
}

func TestConsolidationAtWindow(t *testing.T) {
	store := fillSession(60)
	p := &script{replies: []agent.Response{saveCall("Talked about tea and Lisbon.", "- likes tea\n- lives in Lisbon")}}
	c := agent.NewConsolidator(store, agent.ConsolidatorConfig{Window: 50, Provider: func() agent.Provider { return p }}, nil, nil)
	c.Check(t.Context(), "telegram:1")
	c.Close(time.Minute)

	reqs := p.reqs()
	if len(reqs) != 1 || reqs[0].ForceTool != "save_memory" || len(reqs[0].Tools) != 1 {
		t.Fatalf("requests = %+v; want one forced save_memory call", reqs)
	}
	if !strings.Contains(reqs[0].Messages[1].Content, "- likes tea") || !strings.Contains(reqs[0].Messages[1].Content, "message 1\n") {
		t.Errorf("prompt lacks memory or messages:\n%s", reqs[0].Messages[1].Content)
	}
	if len(store.commits) != 1 {
		t.Fatalf("%d commits, want 1", len(store.commits))
	}
	got := store.commits[0]
	if got.UpToID != 34 || !strings.HasPrefix(got.HistoryEntry, "[") || *got.Memory != "- likes tea\n- lives in Lisbon" {
		t.Errorf("commit = %+v; want up to 34 (keeping 26, starting at a user message), dated entry", got)
	}
	if store.msgs[0].Role != agent.RoleUser || len(store.msgs) != 26 {
		t.Errorf("live messages after: %d starting with %s", len(store.msgs), store.msgs[0].Role)
	}
}

func TestConsolidationBelowWindowDoesNothing(t *testing.T) {
	store := fillSession(20)
	p := &script{}
	c := agent.NewConsolidator(store, agent.ConsolidatorConfig{Window: 50, Provider: func() agent.Provider { return p }}, nil, nil)
	c.Check(t.Context(), "s")
	c.Close(time.Minute)
	if len(p.reqs()) != 0 {
		t.Errorf("%d model calls below the window", len(p.reqs()))
	}
}

func TestConsolidationFailureToldOnce(t *testing.T) {
	store := fillSession(60)
	p := &script{fallback: func(agent.Request) (agent.Response, error) { return agent.Response{}, errors.New("model down") }}
	var mu sync.Mutex
	var told []string
	outcomes := map[string]int{}
	c := agent.NewConsolidator(store, agent.ConsolidatorConfig{
		Window: 50, Backoff: time.Millisecond,
		Provider: func() agent.Provider { return p },
		Notify: func(_ context.Context, session, text string) {
			mu.Lock()
			told = append(told, session+": "+text)
			mu.Unlock()
		},
	}, nil, func(o string) { mu.Lock(); outcomes[o]++; mu.Unlock() })
	c.Check(t.Context(), "telegram:7")
	c.Wait()
	c.Close(time.Minute)

	if got := len(p.reqs()); got != 3 {
		t.Errorf("%d attempts, want 3", got)
	}
	if len(told) != 1 || !strings.Contains(told[0], "telegram:7: I could not update my long-term memory after 3 attempts") || !strings.Contains(told[0], "model down") {
		t.Errorf("told = %q", told)
	}
	if outcomes["failed"] != 3 || len(store.commits) != 0 || len(store.msgs) != 60 {
		t.Errorf("outcomes %v, commits %d, live %d: nothing may change on failure", outcomes, len(store.commits), len(store.msgs))
	}
}

func TestConsolidationRejectsReplyWithoutTool(t *testing.T) {
	store := fillSession(10)
	p := &script{replies: []agent.Response{text("I refuse")}}
	c := agent.NewConsolidator(store, agent.ConsolidatorConfig{Provider: func() agent.Provider { return p }}, nil, nil)
	if err := c.Flush(t.Context(), "s"); err == nil || !strings.Contains(err.Error(), "did not call save_memory") {
		t.Fatalf("Flush = %v", err)
	}
	if len(store.msgs) != 10 {
		t.Errorf("messages were marked despite the failure")
	}
}

func TestFlushConsolidatesEverything(t *testing.T) {
	store := fillSession(7)
	p := &script{replies: []agent.Response{saveCall("[2026-01-02 03:04] Short chat.", "")}}
	c := agent.NewConsolidator(store, agent.ConsolidatorConfig{Provider: func() agent.Provider { return p }}, nil, nil)
	if err := c.Flush(t.Context(), "s"); err != nil {
		t.Fatal(err)
	}
	if len(store.msgs) != 0 || store.commits[0].UpToID != 7 || store.commits[0].Memory != nil || store.history[0] != "[2026-01-02 03:04] Short chat." {
		t.Errorf("after flush: %d live, commit %+v", len(store.msgs), store.commits)
	}
}

func TestOversizedMemoryIsAskedToCondense(t *testing.T) {
	store := fillSession(4)
	store.memory["global"] = strings.Repeat("fact ", 300)
	p := &script{replies: []agent.Response{saveCall("x", "condensed")}}
	c := agent.NewConsolidator(store, agent.ConsolidatorConfig{MaxChars: 1000, Provider: func() agent.Provider { return p }}, nil, nil)
	if err := c.Flush(t.Context(), "s"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.reqs()[0].Messages[1].Content, "over its limit of 1000: condense it") {
		t.Error("the prompt does not ask to condense an oversized memory")
	}
}

func TestCloseDropsWaitingRetries(t *testing.T) {
	store := fillSession(60)
	p := &script{fallback: func(agent.Request) (agent.Response, error) { return agent.Response{}, errors.New("model down") }}
	c := agent.NewConsolidator(store, agent.ConsolidatorConfig{Window: 50, Backoff: time.Hour, Provider: func() agent.Provider { return p }}, nil, nil)
	c.Check(t.Context(), "s")
	// The first attempt fails at once; the retry would wait an hour.
	start := time.Now()
	c.Close(time.Hour)
	if len(p.reqs()) > 1 {
		t.Errorf("%d attempts; Close must not let a retry run", len(p.reqs()))
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("Close took %s; it must not wait out a retry's backoff", d)
	}
}

func TestFailedConsolidationCoolsDown(t *testing.T) {
	store := fillSession(60)
	p := &script{fallback: func(agent.Request) (agent.Response, error) { return agent.Response{}, errors.New("model down") }}
	c := agent.NewConsolidator(store, agent.ConsolidatorConfig{Window: 50, Backoff: time.Millisecond, Provider: func() agent.Provider { return p }}, nil, nil)
	c.Check(t.Context(), "s")
	c.Wait()
	c.Check(t.Context(), "s") // the next turn, right after the failed streak
	c.Wait()
	if n := len(p.reqs()); n != 3 {
		t.Errorf("%d attempts; the turn after a failed streak must not start another", n)
	}
	// /new still tries at once.
	if err := c.Flush(t.Context(), "s"); err == nil || len(p.reqs()) != 4 {
		t.Errorf("Flush = %v after %d attempts; want one more, failing", err, len(p.reqs()))
	}
}

// memNotices is an agent.NoticeStore in memory; it outlives consolidators
// as the database outlives a restart.
type memNotices struct {
	mu   sync.Mutex
	keys map[string]bool
}

func (n *memNotices) ClaimNotice(_ context.Context, key string, _ time.Duration) (bool, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.keys[key] {
		return false, nil
	}
	n.keys[key] = true
	return true, nil
}

func (n *memNotices) ForgetNotice(_ context.Context, key string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.keys, key)
	return nil
}

// A chat told that consolidation keeps failing is not told again by the
// next process; after a success, a new failure streak is told.
func TestConsolidationNoticeSurvivesRestart(t *testing.T) {
	notices := &memNotices{keys: map[string]bool{}}
	var mu sync.Mutex
	told := 0
	down := true
	p := &script{fallback: func(agent.Request) (agent.Response, error) {
		mu.Lock()
		defer mu.Unlock()
		if down {
			return agent.Response{}, errors.New("model down")
		}
		return saveCall("[2026-01-01 10:00] talked", "facts"), nil
	}}
	run := func() {
		t.Helper()
		c := agent.NewConsolidator(fillSession(60), agent.ConsolidatorConfig{
			Window: 50, Backoff: time.Millisecond, Notices: notices,
			Provider: func() agent.Provider { return p },
			Notify:   func(context.Context, string, string) { mu.Lock(); told++; mu.Unlock() },
		}, nil, nil)
		c.Check(t.Context(), "telegram:7")
		c.Wait()
		c.Close(time.Minute)
	}
	run()
	run() // a restart, still failing
	if told != 1 {
		t.Fatalf("told %d times across a restart, want once", told)
	}
	setDown := func(v bool) { mu.Lock(); down = v; mu.Unlock() }
	setDown(false)
	run() // recovered
	setDown(true)
	run() // a new streak
	if told != 2 {
		t.Errorf("told %d times in all, want 2 (a new streak after a success is told)", told)
	}
}

// Fold takes the messages before a time out of the session's window, up
// to a user message, and keeps what they said in memory.
func TestFoldBeforeTime(t *testing.T) {
	store := fillSession(7)
	start := time.Date(2026, 1, 2, 9, 0, 0, 0, time.UTC)
	for i := range store.msgs {
		store.msgs[i].CreatedAt = start.Add(time.Duration(i) * time.Minute)
	}
	p := &script{replies: []agent.Response{saveCall("[2026-01-02 09:00] Refused part.", "")}}
	c := agent.NewConsolidator(store, agent.ConsolidatorConfig{Provider: func() agent.Provider { return p }}, nil, nil)
	c.Fold("s", start.Add(4*time.Minute)) // message 5, a user message, starts the turn
	c.Close(time.Minute)
	if len(store.commits) != 1 || store.commits[0].UpToID != 4 {
		t.Fatalf("commits %+v, want one up to message 4", store.commits)
	}
	if len(store.msgs) != 3 || store.msgs[0].Content != "message 5" || store.history[0] != "[2026-01-02 09:00] Refused part." {
		t.Errorf("live after fold: %+v, history %q", store.msgs, store.history)
	}

	// The turn that was refused is not on record yet: everything before
	// it is folded.
	store = fillSession(4)
	for i := range store.msgs {
		store.msgs[i].CreatedAt = start.Add(time.Duration(i) * time.Minute)
	}
	p = &script{replies: []agent.Response{saveCall("[2026-01-02 09:00] All of it.", "")}}
	c = agent.NewConsolidator(store, agent.ConsolidatorConfig{Provider: func() agent.Provider { return p }}, nil, nil)
	c.Fold("s", start.Add(time.Hour))
	c.Close(time.Minute)
	if len(store.commits) != 1 || store.commits[0].UpToID != 4 || len(store.msgs) != 0 {
		t.Errorf("commits %+v, %d live; want all 4 folded", store.commits, len(store.msgs))
	}
}
