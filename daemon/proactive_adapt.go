package daemon

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/subagent"
	"github.com/nanobot-go/nanobot/channels/api"
	"github.com/nanobot-go/nanobot/channels/telegram"
	"github.com/nanobot-go/nanobot/channels/web"
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
	if text, over := r.p.rt.budget.Over(ctx, t.Session); over {
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
	var it turns.InboxItem
	var err error
	switch t.Channel {
	case web.Channel:
		it = web.SystemMessage(t.ID, text, r.now())
	case api.Channel:
		it = api.SystemMessage(t.ChatID, t.SenderID, t.ID, text, r.now())
	default:
		if it, err = telegram.SystemMessage(t.ChatID, t.ID, t.SenderID, text, r.now()); err != nil {
			return err
		}
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
