package telegram

import (
	"context"
	"strings"
)

// Background is the work the daemon does on its own in a chat, for the
// /jobs, /subagents and /stop commands.
type Background interface {
	// Jobs lists the chat's scheduled jobs.
	Jobs(ctx context.Context, chat string) string
	// Tasks lists the chat's running background tasks.
	Tasks(ctx context.Context, chat string) string
	// StopTasks cancels the chat's background tasks and says what it
	// stopped ("" when none ran).
	StopTasks(ctx context.Context, chat string) string
}

// SetBackground connects the daemon's background work; call it before Run.
func (c *Channel) SetBackground(b Background) { c.background.Store(&b) }

func (c *Channel) backgroundWork() Background {
	if p := c.background.Load(); p != nil {
		return *p
	}
	return nil
}

// OutboxChanged tells the channel that replies were queued outside it (a
// scheduled job's answer), so it delivers them now rather than at its next
// look at the outbox.
func (c *Channel) OutboxChanged() { c.send.notify() }

func (c *Channel) jobsReply(ctx context.Context, chat string) string {
	b := c.backgroundWork()
	if b == nil {
		return "Scheduled jobs are not available."
	}
	return b.Jobs(ctx, chat)
}

func (c *Channel) tasksReply(ctx context.Context, chat string) string {
	b := c.backgroundWork()
	if b == nil {
		return "Background tasks are not available."
	}
	return b.Tasks(ctx, chat)
}

// stopReply is /stop: the running turn and the chat's background tasks.
func (c *Channel) stopReply(ctx context.Context, chat string) string {
	turn := c.disp.stop(chat)
	b := c.backgroundWork()
	if b == nil {
		return turn
	}
	tasks := b.StopTasks(ctx, chat)
	switch {
	case tasks == "":
		return turn
	case strings.HasPrefix(turn, "Nothing"):
		return tasks
	}
	return turn + " " + tasks
}
