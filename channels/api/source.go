package api

import (
	"context"
	"encoding/json"
	"strings"
	"time"
	"unicode"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/internal/human"
	"github.com/nanobot-go/nanobot/session"
	"github.com/nanobot-go/nanobot/turns"
)

// payload is what the inbox records of a request: who sent it, in which
// conversation, and the message.
type payload struct {
	Client string `json:"client"`
	Chat   string `json:"chat"`
	Text   string `json:"text"`
}

// SystemMessage is the inbox item of a background task's report to a
// conversation (key: the task's id): answered in a turn of it like a
// request, and kept in its history for the client's next request.
func SystemMessage(chat, client string, key int64, text string, at time.Time) turns.InboxItem {
	data, _ := json.Marshal(payload{Client: client, Chat: chat, Text: text})
	return turns.InboxItem{Channel: Channel, UpdateID: 1<<62 | key, ChatID: chat, Payload: data,
		State: turns.InboxPending, ReceivedAt: at.UTC()}
}

// turnOf is the turn of a client's conversation.
func turnOf(p payload) agent.Turn {
	s := session.Chat(Channel, p.Chat)
	return agent.Turn{Session: s.String(), Channel: Channel, ChatID: p.Chat, SenderID: p.Client, SenderName: p.Client}
}

// Prepare reads a recorded request.
func (a *API) Prepare(_ context.Context, it turns.InboxItem) turns.Job {
	var p payload
	if err := json.Unmarshal(it.Payload, &p); err != nil || p.Chat == "" || strings.TrimSpace(p.Text) == "" {
		a.log.Error("unreadable API message; closed unanswered", "inbox_id", it.ID, "err", err)
		return turns.Job{Now: true, Turn: agent.Turn{Channel: Channel, ChatID: it.ChatID}}
	}
	t := turnOf(p)
	return turns.Job{Chat: t.Session, Text: p.Text, Turn: t, Data: p}
}

// Plan is the turn of one request; after a crash, the rest of it.
func (a *API) Plan(_ context.Context, batch []*turns.Job) turns.Plan {
	first := batch[0]
	msg := agent.Message{Role: agent.RoleUser, Content: turns.MergedText(batch), CreatedAt: first.Item.ReceivedAt}
	w := a.waiterOf(batch)
	return turns.Plan{
		Turn:    first.Turn,
		Message: msg,
		Resume:  first.Item.State == turns.InboxStarted,
		Told: func(res agent.Result, err error) string {
			if w != nil {
				w.mu.Lock()
				w.usage, w.failed = res.Usage, err != nil
				w.mu.Unlock()
			}
			return turns.Told(res, err)
		},
	}
}

// Progress shows a streaming client what the turn does, as comment lines.
func (a *API) Progress(_ context.Context, batch []*turns.Job) (func(agent.ProgressEvent), func()) {
	w := a.waiterOf(batch)
	if w == nil || w.progress == nil {
		return func(agent.ProgressEvent) {}, func() {}
	}
	return w.progress, func() {}
}

const argLimit = 80

// progressLine is an event as one line of text, or "" for events not
// shown. It is a single line: what the model wrote must not start a new
// line of the stream, where it could pass for data.
func progressLine(ev agent.ProgressEvent) string {
	var line string
	switch ev.Kind {
	case agent.ProgressTool:
		line = "calling " + ev.Tool
		if arg := human.Args(ev.Args, argLimit); arg != "" {
			line += " " + arg
		}
	case agent.ProgressToolDone:
		line = ev.Tool + " done in " + human.Duration(ev.Duration)
		if ev.Failed {
			line = ev.Tool + " failed after " + human.Duration(ev.Duration)
		}
	default:
		return ""
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029' {
			return ' '
		}
		return r
	}, line)
}
