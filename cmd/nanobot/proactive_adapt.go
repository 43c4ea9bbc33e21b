package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/subagent"
	"github.com/nanobot-go/nanobot/channels/telegram"
	"github.com/nanobot-go/nanobot/jobs"
	"github.com/nanobot-go/nanobot/memory"
	"github.com/nanobot-go/nanobot/schedule"
	"github.com/nanobot-go/nanobot/session"
	"github.com/nanobot-go/nanobot/turns"
)

// The adapters between the background work and the daemon, the store and
// the chat channel.

// chatOutbox is the message tool's way out: the chat's outbox.
type chatOutbox struct{ p *proactive }

func (o chatOutbox) Send(ctx context.Context, from agent.Turn, chat, text string) error {
	mirror := session.Chat(from.Channel, chat).String()
	if mirror == from.Session {
		mirror = "" // the conversation holds the tool call already
	}
	_, err := o.p.rt.store.Deliver(ctx, turns.OutboxItem{Channel: from.Channel, ChatID: chat, Text: text,
		State: turns.OutboxPending, CreatedAt: time.Now().UTC()}, mirror)
	if err != nil {
		return err
	}
	o.p.bell.Ring(from.Channel)
	return nil
}

// taskRunner runs a background task's turn, after the chat's budget.
type taskRunner struct{ p *proactive }

func (r taskRunner) Run(ctx context.Context, t agent.Turn, msg agent.Message) (agent.Result, error) {
	if text, over := r.p.rt.overBudget(ctx, t.Session); over {
		return agent.Result{Text: text}, errors.New("today's token budget for this chat is used up")
	}
	return r.p.taskLoop.Run(ctx, t, msg)
}

// taskReporter brings a task's end into its chat's turns: recorded as a
// system message of the chat's channel and handed to the turn engine.
type taskReporter struct {
	store *memory.Store
	turns *turns.Engine
	now   func() time.Time
}

func (r taskReporter) Report(ctx context.Context, t subagent.Task, text string) error {
	it, err := telegram.SystemMessage(t.ChatID, t.ID, t.SenderID, text, r.now())
	if err != nil {
		return err
	}
	id, inserted, err := r.store.RecordInbound(ctx, it)
	if err != nil {
		return fmt.Errorf("record system message: %w", err)
	}
	if inserted {
		it.ID = id
		r.turns.Add(ctx, it)
	}
	return nil
}

// spawner is the spawn tool's view of the manager.
type spawner struct{ m *subagent.Manager }

func (s spawner) Spawn(ctx context.Context, t agent.Turn, task, label string) (int64, string, error) {
	tk, err := s.m.Spawn(ctx, t, task, label)
	return tk.ID, tk.Label, err
}

// taskStore adapts the store to what the manager consumes.
type taskStore struct{ s *memory.Store }

func (a taskStore) StartSubagent(ctx context.Context, t subagent.Task) (int64, error) {
	return a.s.StartSubagent(ctx, memory.Subagent(t))
}

func (a taskStore) FinishSubagent(ctx context.Context, id int64, state, result string) error {
	return a.s.FinishSubagent(ctx, id, state, result)
}

func (a taskStore) RunningSubagents(ctx context.Context) ([]subagent.Task, error) {
	list, err := a.s.RunningSubagents(ctx)
	out := make([]subagent.Task, len(list))
	for i, t := range list {
		out[i] = subagent.Task(t)
	}
	return out, err
}

func (a taskStore) Recent(ctx context.Context, session string, limit int) ([]agent.Message, error) {
	return a.s.Recent(ctx, session, limit)
}

// cronJobs is the cron tool's view of the jobs service: the calling turn's
// chat only.
type cronJobs struct{ s *jobs.Service }

func chatOf(t agent.Turn) jobs.Chat {
	return jobs.Chat{Channel: t.Channel, ChatID: t.ChatID, UserID: t.SenderID}
}

func (c cronJobs) Add(ctx context.Context, t agent.Turn, message string, when schedule.Input) (string, error) {
	j, err := c.s.Add(ctx, chatOf(t), message, when)
	if err != nil {
		return "", err
	}
	return "Job set up. " + jobs.Describe(j) + ". When it runs, you get its message in a turn of its own and your answer is sent to this chat.", nil
}

func (c cronJobs) List(ctx context.Context, t agent.Turn) (string, error) {
	return c.s.List(ctx, chatOf(t))
}

func (c cronJobs) Remove(ctx context.Context, t agent.Turn, id int64) (string, error) {
	if err := c.s.Remove(ctx, chatOf(t), id); err != nil {
		return "", err
	}
	return fmt.Sprintf("Job %d removed.", id), nil
}

// jobStore adapts the store to what the jobs service consumes.
type jobStore struct{ s *memory.Store }

var _ jobs.Store = jobStore{}

func jobErr(err error) error {
	switch {
	case errors.Is(err, memory.ErrLimit):
		return fmt.Errorf("%w: %w", jobs.ErrLimit, err)
	case errors.Is(err, memory.ErrNotFound):
		return fmt.Errorf("%w: %w", jobs.ErrNotFound, err)
	case errors.Is(err, memory.ErrStale):
		return fmt.Errorf("%w: %w", jobs.ErrStale, err)
	}
	return err
}

func (a jobStore) AddJob(ctx context.Context, j jobs.Job, max int) (int64, error) {
	id, err := a.s.AddJob(ctx, memory.Job(j), max)
	return id, jobErr(err)
}

func (a jobStore) Job(ctx context.Context, id int64) (jobs.Job, error) {
	j, err := a.s.Job(ctx, id)
	return jobs.Job(j), jobErr(err)
}

func (a jobStore) Jobs(ctx context.Context, channel, chat string) ([]jobs.Job, error) {
	list, err := a.s.Jobs(ctx, channel, chat)
	out := make([]jobs.Job, len(list))
	for i, j := range list {
		out[i] = jobs.Job(j)
	}
	return out, err
}

func (a jobStore) JobSlots(ctx context.Context) ([]jobs.Slot, error) {
	list, err := a.s.JobSlots(ctx)
	out := make([]jobs.Slot, len(list))
	for i, s := range list {
		out[i] = jobs.Slot(s)
	}
	return out, err
}

func (a jobStore) RemoveJob(ctx context.Context, channel, chat string, id int64) (bool, error) {
	return a.s.RemoveJob(ctx, channel, chat, id)
}

func (a jobStore) FireJob(ctx context.Context, f jobs.Firing) (int64, bool, error) {
	id, inserted, err := a.s.FireJob(ctx, memory.Firing(f))
	return id, inserted, jobErr(err)
}

func (a jobStore) SkipJob(ctx context.Context, id int64, slot, next time.Time) error {
	return jobErr(a.s.SkipJob(ctx, id, slot, next))
}

func (a jobStore) JobsVersion(ctx context.Context) (string, error) { return a.s.JobsVersion(ctx) }

// consolidationStore adapts the store to what consolidation consumes.
type consolidationStore struct{ s *memory.Store }

func (c consolidationStore) LiveMessages(ctx context.Context, session string, limit int) ([]agent.StoredMessage, error) {
	msgs, err := c.s.LiveMessages(ctx, session, limit)
	if err != nil {
		return nil, err
	}
	out := make([]agent.StoredMessage, len(msgs))
	for i, m := range msgs {
		out[i] = agent.StoredMessage{ID: m.ID, Message: m.Message}
	}
	return out, nil
}

func (c consolidationStore) Memory(ctx context.Context, scope string) (string, error) {
	return c.s.Memory(ctx, scope)
}

func (c consolidationStore) Consolidate(ctx context.Context, k agent.Consolidation) error {
	return c.s.Consolidate(ctx, memory.Consolidation{Session: k.Session, Scope: k.Scope, UpToID: k.UpToID, HistoryEntry: k.HistoryEntry, Memory: k.Memory, At: k.At})
}
