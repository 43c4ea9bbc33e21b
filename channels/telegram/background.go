package telegram

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/turns"
)

// systemChannel is the inbox channel of messages from the daemon itself
// into a chat's turns.
const systemChannel = "telegram.system"

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

func (c *Channel) backgroundWork() Background { return c.cfg.Background }

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
	turn := c.turns.Stop(queueOf(chat))
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

// systemMessage is the payload of a system item.
type systemMessage struct {
	Text   string `json:"text"`
	Sender string `json:"sender_id,omitempty"`
}

// SystemMessage is the inbox item of a message from the daemon itself (a
// background task's report) into a chat's turns: recorded and handed to
// the turn engine, it waits in order with the chat's messages, the model
// reads it as the turn's message, and its answer goes to the chat like
// any reply. key identifies the message (recording it again changes
// nothing); sender is the user the turn acts for.
func SystemMessage(chat string, key int64, sender, text string, at time.Time) (turns.InboxItem, error) {
	payload, err := json.Marshal(systemMessage{Text: text, Sender: sender})
	if err != nil {
		return turns.InboxItem{}, err
	}
	return turns.InboxItem{Channel: systemChannel, UpdateID: key, ChatID: chat, Payload: payload,
		State: turns.InboxPending, ReceivedAt: at.UTC()}, nil
}

// systemJob is the job of a recorded system message.
func systemJob(it turns.InboxItem) (*job, string, bool) {
	var m systemMessage
	if err := json.Unmarshal(it.Payload, &m); err != nil || strings.TrimSpace(m.Text) == "" {
		return nil, "", false
	}
	return &job{item: it, kind: jobSystem, text: m.Text, from: m.Sender}, "", true
}
