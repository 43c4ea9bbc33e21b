// Package subagent runs background tasks for a chat: the spawn tool starts
// one with its own loop (fewer steps, fewer tools, no chat history) in its
// own session, and returns at once, so the chat goes on while it works.
// When it ends, its result, or an honest account of why it stopped and
// what it had done, goes back to the chat as a system message that the
// main agent phrases for the user. Tasks are recorded as they start and
// end; one still running when the daemon stops is reported as interrupted
// at the next start, never run again.
package subagent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/session"
)

// States of a task, as stored.
const (
	StateRunning     = "running"
	StateFinished    = "finished"
	StateLimit       = "limit"   // stopped at its step limit
	StateTimeout     = "timeout" // stopped at its time limit
	StateFailed      = "failed"
	StateCancelled   = "cancelled" // /stop
	StateInterrupted = "interrupted"
)

var (
	errStopped  = errors.New("stopped by /stop")
	errShutdown = errors.New("shutting down")
)

// Task is one background task.
type Task struct {
	ID        int64
	Channel   string
	ChatID    string
	SenderID  string
	Label     string
	Task      string
	StartedAt time.Time
}

// Session is the session of a task's turn.
func Session(id int64) string { return session.Task(id).String() }

// Store records tasks from start to end.
type Store interface {
	StartSubagent(ctx context.Context, t Task) (int64, error)
	FinishSubagent(ctx context.Context, id int64, state, result string) error
	// RunningSubagents returns the tasks recorded as running.
	RunningSubagents(ctx context.Context) ([]Task, error)
	// Recent reads a task's session, for what it had done.
	Recent(ctx context.Context, session string, limit int) ([]agent.Message, error)
}

// Runner runs a task's turn: a loop with the task's limits and tools.
type Runner interface {
	Run(ctx context.Context, t agent.Turn, msg agent.Message) (agent.Result, error)
}

// Reporter puts a system message into a chat's turns, once per key.
type Reporter interface {
	Report(ctx context.Context, t Task, text string) error
}

// Config holds the limits; it can change while the manager runs. The
// Runner enforces the steps and the time; they are here for the reports.
type Config struct {
	MaxPerChat    int
	Timeout       time.Duration
	MaxIterations int
}

// Manager starts, tracks and stops tasks.
type Manager struct {
	store  Store
	runner Runner
	report Reporter
	log    *slog.Logger
	now    func() time.Time

	mu      sync.Mutex
	cfg     Config
	running map[int64]*running
	closed  bool
	wg      sync.WaitGroup
}

type running struct {
	task   Task
	cancel context.CancelCauseFunc
}

// New returns a manager.
func New(store Store, runner Runner, report Reporter, cfg Config, log *slog.Logger, now func() time.Time) *Manager {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if now == nil {
		now = time.Now
	}
	return &Manager{store: store, runner: runner, report: report, log: log, now: now, cfg: cfg, running: map[int64]*running{}}
}

// SetConfig applies new limits to tasks started from now on.
func (m *Manager) SetConfig(c Config) {
	m.mu.Lock()
	m.cfg = c
	m.mu.Unlock()
}

// Spawn starts a task for the chat of turn t and returns it at once. Its
// errors are sentences for the model.
func (m *Manager) Spawn(ctx context.Context, t agent.Turn, task, label string) (Task, error) {
	task, label = strings.TrimSpace(task), strings.TrimSpace(label)
	if task == "" {
		return Task{}, errors.New("task is empty: describe what the background task should do")
	}
	if label == "" {
		label = defaultLabel(task)
	}
	m.mu.Lock()
	cfg, closed := m.cfg, m.closed
	n := m.countLocked(t.Channel, t.ChatID)
	m.mu.Unlock()
	switch {
	case closed:
		return Task{}, errors.New("background tasks cannot start now: the assistant is shutting down")
	case cfg.MaxPerChat > 0 && n >= cfg.MaxPerChat:
		return Task{}, fmt.Errorf("%d background tasks are already running in this chat, the most allowed (agent.subagents.max_per_chat); wait for one to finish, or the user can stop them with /stop", n)
	}
	tk := Task{Channel: t.Channel, ChatID: t.ChatID, SenderID: t.SenderID, Label: label, Task: task, StartedAt: m.now()}
	id, err := m.store.StartSubagent(ctx, tk)
	if err != nil {
		return Task{}, fmt.Errorf("record the background task: %w", err)
	}
	tk.ID = id
	// The Runner's turn deadline is the task's timeout; this context is
	// for /stop and the shutdown.
	runCtx, cancel := context.WithCancelCause(context.Background())
	m.mu.Lock()
	if m.closed || (cfg.MaxPerChat > 0 && m.countLocked(t.Channel, t.ChatID) >= cfg.MaxPerChat) {
		m.mu.Unlock()
		cancel(nil)
		_ = m.store.FinishSubagent(context.WithoutCancel(ctx), id, StateFailed, "not started: the limit was reached")
		return Task{}, fmt.Errorf("the limit of %d background tasks in this chat was reached just now", cfg.MaxPerChat)
	}
	m.running[id] = &running{task: tk, cancel: cancel}
	m.wg.Add(1)
	m.mu.Unlock()
	m.log.Info("background task started", "task_id", id, "chat_id", t.ChatID, "label", label)
	go m.run(runCtx, tk, cfg)
	return tk, nil
}

func (m *Manager) countLocked(channel, chat string) int {
	n := 0
	for _, r := range m.running {
		if r.task.Channel == channel && r.task.ChatID == chat {
			n++
		}
	}
	return n
}

func defaultLabel(task string) string {
	words := strings.Fields(task)
	if len(words) > 6 {
		return strings.Join(words[:6], " ") + "…"
	}
	return strings.Join(words, " ")
}

// run is a task from start to end.
func (m *Manager) run(ctx context.Context, tk Task, cfg Config) {
	defer m.wg.Done()
	defer func() {
		m.mu.Lock()
		if r := m.running[tk.ID]; r != nil {
			r.cancel(nil)
			delete(m.running, tk.ID)
		}
		m.mu.Unlock()
	}()
	t := agent.Turn{ID: "task" + strconv.FormatInt(tk.ID, 10), Session: Session(tk.ID), Channel: tk.Channel, ChatID: tk.ChatID, SenderID: tk.SenderID}
	msg := agent.Message{Role: agent.RoleUser, CreatedAt: tk.StartedAt, Content: fmt.Sprintf(
		"[You are a background task the assistant started for the user of this chat. Work on the task below on your own: nobody reads your messages until you finish, and you cannot ask questions. You have at most %d steps. When you are done, answer with the result: what you found or did, concisely, with what the user needs.]\n\nTask: %s",
		cfg.MaxIterations, tk.Task)}
	res, err := m.runner.Run(agent.WithTurn(ctx, t), t, msg)
	cause := context.Cause(ctx)
	log := m.log.With("task_id", tk.ID, "chat_id", tk.ChatID)
	state, text := outcome(res, err, cause)
	switch state {
	case "":
		log.Info("background task interrupted by shutdown; it is reported as interrupted on the next start")
		return
	case StateCancelled:
		log.Info("background task stopped by the user")
		m.finish(tk, state, "")
		return
	}
	log.Info("background task ended", "state", state, "iterations", res.Iterations, "tool_calls", res.ToolCalls)
	work := m.workDone(tk)
	if err := m.report.Report(context.Background(), tk, reportText(tk, state, text, work, cfg)); err != nil {
		log.Error("report background task; it is reported as interrupted on the next start", "err", err)
		return
	}
	m.finish(tk, state, text)
}

// outcome says how a task's turn ended: its state and the text that tells
// of it ("" state: the daemon is shutting down).
func outcome(res agent.Result, err error, cause error) (state, text string) {
	switch {
	case errors.Is(cause, errShutdown):
		return "", ""
	case errors.Is(cause, errStopped):
		return StateCancelled, ""
	case res.Stop == agent.StopTimeout || errors.Is(err, context.DeadlineExceeded):
		return StateTimeout, res.Text
	case err != nil && res.Text != "":
		return StateFailed, res.Text
	case err != nil:
		return StateFailed, err.Error()
	case res.Stop == agent.StopLimit:
		return StateLimit, res.Text
	case res.Stop == agent.StopLoop:
		return StateFailed, res.Text
	case res.Stop == agent.StopAnswered && strings.TrimSpace(res.Text) != "":
		return StateFinished, res.Text
	}
	return StateFailed, "it ended without a result"
}

func (m *Manager) finish(tk Task, state, result string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := m.store.FinishSubagent(ctx, tk.ID, state, result); err != nil {
		m.log.Error("record the end of a background task", "task_id", tk.ID, "err", err)
	}
}

// reportText is the system message that brings a task's end to its chat.
func reportText(tk Task, state, text, work string, cfg Config) string {
	var head string
	switch state {
	case StateFinished:
		head = fmt.Sprintf("[Background task %q finished]", tk.Label)
	case StateLimit:
		head = fmt.Sprintf("[Background task %q stopped at its step limit (%d steps) before it finished: the task is NOT done]", tk.Label, cfg.MaxIterations)
	case StateTimeout:
		head = fmt.Sprintf("[Background task %q ran out of time (%s) and was stopped before it finished: the task is NOT done]", tk.Label, cfg.Timeout)
	case StateInterrupted:
		head = fmt.Sprintf("[Background task %q was interrupted by a restart of the assistant and was not finished; it will not continue on its own]", tk.Label)
	default:
		head = fmt.Sprintf("[Background task %q failed before it finished: the task is NOT done]", tk.Label)
	}
	var b strings.Builder
	b.WriteString(head + "\n")
	fmt.Fprintf(&b, "Task: %s\n", tk.Task)
	if text = strings.TrimSpace(text); text != "" {
		if state == StateFinished {
			b.WriteString("\nResult:\n" + text + "\n")
		} else {
			b.WriteString("\nWhat it said: " + text + "\n")
		}
	}
	if work != "" {
		b.WriteString("\n" + work + "\n")
	}
	b.WriteString("\nThis message comes from the assistant's background work, not from the user. Tell the user about it in your own words now")
	if state != StateFinished {
		b.WriteString("; say plainly that the task was not completed and what was done")
	}
	b.WriteString(".")
	return b.String()
}

// workDone lists the tool calls a task made, from its session.
func (m *Manager) workDone(tk Task) string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	msgs, err := m.store.Recent(ctx, Session(tk.ID), 400)
	if err != nil {
		m.log.Warn("read background task session", "task_id", tk.ID, "err", err)
		return ""
	}
	var calls []string
	for _, msg := range msgs {
		for _, c := range msg.ToolCalls {
			calls = append(calls, c.Name+"("+oneLine(c.Arguments, 80)+")")
		}
	}
	if len(calls) == 0 {
		return "It made no tool calls."
	}
	shown := calls
	if len(shown) > 12 {
		shown = shown[len(shown)-12:]
	}
	out := fmt.Sprintf("It made %d tool call%s", len(calls), plural(len(calls)))
	if len(shown) < len(calls) {
		out += fmt.Sprintf(", the last %d", len(shown))
	}
	return out + ": " + strings.Join(shown, "; ")
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > max {
		return string(r[:max-1]) + "…"
	}
	return s
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// Recover reports the tasks a restart cut off as interrupted, with what
// they had done, and records them so. Call it once at start, before
// Spawn.
func (m *Manager) Recover(ctx context.Context) error {
	tasks, err := m.store.RunningSubagents(ctx)
	if err != nil {
		return fmt.Errorf("load running background tasks: %w", err)
	}
	m.mu.Lock()
	cfg := m.cfg
	m.mu.Unlock()
	for _, tk := range tasks {
		work := m.workDone(tk)
		if err := m.report.Report(ctx, tk, reportText(tk, StateInterrupted, "", work, cfg)); err != nil {
			return fmt.Errorf("report interrupted background task %d: %w", tk.ID, err)
		}
		m.finish(tk, StateInterrupted, work)
		m.log.Info("background task interrupted by a restart reported", "task_id", tk.ID, "chat_id", tk.ChatID)
	}
	return nil
}

// Info is a running task, for /subagents.
type Info struct {
	Task
	Running time.Duration
}

// Running lists the chat's running tasks, oldest first.
func (m *Manager) Running(channel, chat string) []Info {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Info
	for _, r := range m.running {
		if r.task.Channel == channel && r.task.ChatID == chat {
			out = append(out, Info{Task: r.task, Running: m.now().Sub(r.task.StartedAt)})
		}
	}
	slices.SortFunc(out, func(a, b Info) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// Stop cancels the chat's running tasks and returns them.
func (m *Manager) Stop(channel, chat string) []Task {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Task
	for _, r := range m.running {
		if r.task.Channel == channel && r.task.ChatID == chat {
			r.cancel(errStopped)
			out = append(out, r.task)
		}
	}
	slices.SortFunc(out, func(a, b Task) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// Close stops every task for the shutdown and waits for them: they stay
// recorded as running and are reported as interrupted at the next start.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	for _, r := range m.running {
		r.cancel(errShutdown)
	}
	m.mu.Unlock()
	m.wg.Wait()
}
