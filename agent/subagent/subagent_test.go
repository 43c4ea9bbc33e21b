package subagent

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/agent"
)

// fakes record what the manager does.
type fakeStore struct {
	mu      sync.Mutex
	next    int64
	states  map[int64]string
	running []Task
	session []agent.Message
}

func (s *fakeStore) StartSubagent(_ context.Context, t Task) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next++
	if s.states == nil {
		s.states = map[int64]string{}
	}
	s.states[s.next] = StateRunning
	return s.next, nil
}

func (s *fakeStore) FinishSubagent(_ context.Context, id int64, state, _ string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.states[id] = state
	return nil
}

func (s *fakeStore) RunningSubagents(context.Context) ([]Task, error) { return s.running, nil }

func (s *fakeStore) Recent(context.Context, string, int) ([]agent.Message, error) {
	return s.session, nil
}

func (s *fakeStore) state(id int64) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.states[id]
}

type fakeReporter struct{ got chan string }

func (r fakeReporter) Report(_ context.Context, _ Task, text string) error {
	r.got <- text
	return nil
}

type runnerFunc func(ctx context.Context) (agent.Result, error)

func (f runnerFunc) Run(ctx context.Context, _ agent.Turn, _ agent.Message) (agent.Result, error) {
	return f(ctx)
}

var chat = agent.Turn{Channel: "telegram", ChatID: "42", SenderID: "42"}

func TestReports(t *testing.T) {
	tests := []struct {
		name      string
		res       agent.Result
		err       error
		wantState string
		want      []string
		not       string
	}{
		{name: "finished", res: agent.Result{Stop: agent.StopAnswered, Text: "42 it is."}, wantState: StateFinished,
			want: []string{`[Background task "answer" finished]`, "Result:\n42 it is."}, not: "NOT done"},
		{name: "step limit", res: agent.Result{Stop: agent.StopLimit, Text: "I got halfway."}, wantState: StateLimit,
			want: []string{"stopped at its step limit (15 steps) before it finished: the task is NOT done", "What it said: I got halfway.", "not completed"}, not: "finished]"},
		{name: "timeout", res: agent.Result{Stop: agent.StopTimeout, Text: "Out of time."}, wantState: StateTimeout,
			want: []string{"ran out of time (30m0s)", "NOT done"}},
		{name: "model down", res: agent.Result{Stop: agent.StopFailed, Text: "Sorry, I cannot answer right now."}, err: errors.New("model call: 503"),
			wantState: StateFailed, want: []string{"failed before it finished: the task is NOT done", "Sorry, I cannot answer right now."}},
		{name: "empty answer", res: agent.Result{Stop: agent.StopAnswered}, wantState: StateFailed, want: []string{"failed", "ended without a result"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &fakeStore{session: []agent.Message{{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{Name: "web_fetch", Arguments: `{"url":"https://example.org"}`}}}}}
			rep := fakeReporter{got: make(chan string, 1)}
			m := New(store, runnerFunc(func(context.Context) (agent.Result, error) { return tt.res, tt.err }), rep,
				Config{MaxPerChat: 3, Timeout: 30 * time.Minute, MaxIterations: 15}, nil, nil)
			tk, err := m.Spawn(t.Context(), chat, "Find the answer.", "answer")
			if err != nil {
				t.Fatal(err)
			}
			text := <-rep.got
			m.Close()
			for _, w := range append(tt.want, `It made 1 tool call: web_fetch({"url":"https://example.org"})`) {
				if !strings.Contains(text, w) {
					t.Errorf("report lacks %q:\n%s", w, text)
				}
			}
			if tt.not != "" && strings.Contains(text, tt.not) {
				t.Errorf("report has %q:\n%s", tt.not, text)
			}
			if got := store.state(tk.ID); got != tt.wantState {
				t.Errorf("state %q, want %q", got, tt.wantState)
			}
		})
	}
}

func TestLimitStopAndShutdown(t *testing.T) {
	store := &fakeStore{}
	rep := fakeReporter{got: make(chan string, 10)}
	started := make(chan struct{}, 10)
	m := New(store, runnerFunc(func(ctx context.Context) (agent.Result, error) {
		started <- struct{}{}
		<-ctx.Done()
		return agent.Result{}, ctx.Err()
	}), rep, Config{MaxPerChat: 2}, nil, nil)
	for range 2 {
		if _, err := m.Spawn(t.Context(), chat, "wait", ""); err != nil {
			t.Fatal(err)
		}
		<-started
	}
	if _, err := m.Spawn(t.Context(), chat, "a third", ""); err == nil || !strings.Contains(err.Error(), "2 background tasks are already running in this chat") {
		t.Errorf("third spawn: %v", err)
	}
	other := chat
	other.ChatID = "7"
	if _, err := m.Spawn(t.Context(), other, "elsewhere", ""); err != nil {
		t.Errorf("another chat is limited by this one's tasks: %v", err)
	}
	<-started
	if got := m.Running("telegram", "42"); len(got) != 2 || got[0].Label != "wait" {
		t.Errorf("Running = %+v", got)
	}
	if stopped := m.Stop("telegram", "42"); len(stopped) != 2 {
		t.Errorf("Stop = %+v", stopped)
	}
	m.Close() // the other chat's task is cut off by the shutdown
	for id, want := range map[int64]string{1: StateCancelled, 2: StateCancelled, 3: StateRunning} {
		if got := store.state(id); got != want {
			t.Errorf("task %d: state %q, want %q", id, got, want)
		}
	}
	if len(rep.got) != 0 {
		t.Errorf("%d reports for cancelled and shut down tasks, want none", len(rep.got))
	}
}

func TestRecover(t *testing.T) {
	store := &fakeStore{states: map[int64]string{9: StateRunning}, running: []Task{{ID: 9, Channel: "telegram", ChatID: "42", Label: "notes", Task: "Write notes."}}}
	rep := fakeReporter{got: make(chan string, 1)}
	m := New(store, runnerFunc(func(context.Context) (agent.Result, error) {
		t.Error("a task was run again")
		return agent.Result{}, nil
	}), rep, Config{}, nil, nil)
	if err := m.Recover(t.Context()); err != nil {
		t.Fatal(err)
	}
	if text := <-rep.got; !strings.Contains(text, `[Background task "notes" was interrupted by a restart`) || !strings.Contains(text, "It made no tool calls.") {
		t.Errorf("report %q", text)
	}
	if got := store.state(9); got != StateInterrupted {
		t.Errorf("state %q", got)
	}
}
