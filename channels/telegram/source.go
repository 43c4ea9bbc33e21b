package telegram

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/session"
	"github.com/nanobot-go/nanobot/turns"
)

type jobKind int

const (
	jobText   jobKind = iota // plain text; consecutive ones of a sender merge
	jobMedia                 // photo, document or voice: prepared at run time
	jobNew                   // /new, in order with the chat's messages
	jobSystem                // a message from the daemon itself (a background task's report); never merged
)

// job is what the channel read of one recorded item.
type job struct {
	item   turns.InboxItem
	msg    *models.Message
	kind   jobKind
	text   string // what the model reads: mention stripped, "[Name]: " in groups
	sender int64
	from   string // the user a system message acts for
}

// source is the channel's side of the turn engine: it reads the channel's
// inbox items and builds their turns.
type source struct{ c *Channel }

// queueOf is the engine's queue of a Telegram chat.
func queueOf(chat string) string { return session.Chat(channelName, chat).String() }

func (s source) Prepare(ctx context.Context, it turns.InboxItem) turns.Job {
	j, reply, queue := s.c.prepare(ctx, it)
	if !queue {
		return turns.Job{Now: true, Reply: reply, Turn: agent.Turn{Channel: channelName, ChatID: it.ChatID}}
	}
	tj := turns.Job{Chat: queueOf(it.ChatID), Text: j.text, Data: j}
	if j.kind == jobText {
		tj.Merge = strconv.FormatInt(j.sender, 10)
	}
	return tj
}

// jobs is the channel's view of a batch, with the items as they are now.
func jobs(batch []*turns.Job) []*job {
	out := make([]*job, len(batch))
	for i, b := range batch {
		j := *b.Data.(*job)
		j.item = b.Item
		out[i] = &j
	}
	return out
}

func (s source) Plan(ctx context.Context, batch []*turns.Job) turns.Plan {
	c := s.c
	js := jobs(batch)
	first, last := js[0], js[len(js)-1]
	var replyTo int64
	if c.cfg.ReplyToMessage && last.msg != nil {
		replyTo = int64(last.msg.ID)
	}
	address := agent.Turn{Channel: channelName, ChatID: first.item.ChatID, ReplyTo: replyTo}
	if first.kind == jobNew && first.item.State != turns.InboxStarted {
		return turns.Plan{Turn: address, Answered: true, Reply: c.resetSession(ctx, first)}
	}
	t := c.turnFor(first)
	t.ReplyTo = replyTo
	if first.item.State == turns.InboxStarted {
		msg := agent.Message{Role: agent.RoleUser, Content: turns.MergedText(batch), CreatedAt: first.item.ReceivedAt}
		return turns.Plan{Turn: t, Message: msg, Resume: true}
	}
	msg, reply, ok := c.buildMessage(ctx, js)
	if !ok {
		return turns.Plan{Turn: address, Answered: true, Reply: reply}
	}
	return turns.Plan{Turn: t, Message: msg}
}

// Busy shows "typing…" while the batch's turn runs.
func (s source) Busy(ctx context.Context, batch []*turns.Job) func() {
	return s.c.startTyping(ctx, batch[0].Item.ChatID)
}

// StorageFull tells the chat that its message waits for disk space. The
// outbox cannot hold the notice, so it is sent directly.
func (s source) StorageFull(ctx context.Context, batch []*turns.Job, _ time.Duration) {
	c := s.c
	chat := batch[0].Item.ChatID
	id, err := chatID(chat)
	if err != nil {
		return
	}
	callCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := c.bot.SendMessage(callCtx, &bot.SendMessageParams{ChatID: id, Text: storageFullText}); err != nil {
		c.log.Warn("tell the chat the disk is full", "chat_id", chat, "err", c.scrub(err))
	}
}

const storageFullText = "I can't save anything right now: the disk of the server I run on is full. " +
	"Your message is not lost; I'll answer it as soon as there is space again."

func (c *Channel) turnFor(j *job) agent.Turn {
	t := agent.Turn{
		ID:      turns.NewID(),
		Session: queueOf(j.item.ChatID),
		Channel: channelName,
		ChatID:  j.item.ChatID,
	}
	if j.msg != nil && j.msg.From != nil {
		t.SenderID = strconv.FormatInt(j.msg.From.ID, 10)
		t.SenderName = displayName(j.msg.From)
	} else if j.from != "" {
		t.SenderID = j.from
	}
	return t
}

func (c *Channel) resetSession(ctx context.Context, j *job) string {
	if c.sessions == nil {
		return "Starting a new conversation is not available."
	}
	if err := c.sessions.Reset(ctx, queueOf(j.item.ChatID)); err != nil {
		c.log.Error("reset session", "chat_id", j.item.ChatID, "err", err)
		var ue interface{ UserMessage() string }
		if errors.As(err, &ue) {
			return ue.UserMessage()
		}
		return "Sorry, I could not start a new conversation. Please try again."
	}
	return "Started a new conversation. What's next?"
}

// startTyping shows "typing…" in chat until the returned function is called.
func (c *Channel) startTyping(ctx context.Context, chat string) func() {
	id, err := chatID(chat)
	if err != nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(c.cfg.TypingInterval)
		defer tick.Stop()
		for {
			callCtx, cancelCall := context.WithTimeout(ctx, 10*time.Second)
			_, err := c.bot.SendChatAction(callCtx, &bot.SendChatActionParams{ChatID: id, Action: models.ChatActionTyping})
			cancelCall()
			if err != nil && ctx.Err() == nil {
				c.log.Debug("send typing", "chat_id", chat, "err", c.scrub(err))
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

func mergedText(batch []*job) string {
	parts := make([]string, 0, len(batch))
	for _, j := range batch {
		if j.text != "" {
			parts = append(parts, j.text)
		}
	}
	return strings.Join(parts, "\n\n")
}
