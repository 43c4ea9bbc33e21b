package web

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/internal/human"
	"github.com/nanobot-go/nanobot/turns"
)

// payload is what the inbox records of a message typed in the console.
type payload struct {
	Text string `json:"text"`
}

// SystemMessage is the inbox item of a background task's report to the
// console's chat (key: the task's id), answered in a turn of the chat
// like a message.
func SystemMessage(key int64, text string, at time.Time) turns.InboxItem {
	data, _ := json.Marshal(payload{Text: text})
	return turns.InboxItem{Channel: Channel, UpdateID: systemKeys | key, ChatID: Chat, Payload: data,
		State: turns.InboxPending, ReceivedAt: at.UTC()}
}

// systemKeys sets apart the update ids of system messages from the
// pages' (hashes and random numbers below 1<<63 that do not set it only
// by chance).
const systemKeys = 1 << 62

// turn is the turn of the console's chat: the owner's.
func (w *Web) turn() agent.Turn {
	sender := w.cfg.Owner
	if sender == "" {
		sender = Chat
	}
	return agent.Turn{Session: Session(), Channel: Channel, ChatID: Chat, SenderID: sender, SenderName: Chat}
}

// Prepare reads a recorded message.
func (w *Web) Prepare(_ context.Context, it turns.InboxItem) turns.Job {
	var p payload
	if err := json.Unmarshal(it.Payload, &p); err != nil || strings.TrimSpace(p.Text) == "" {
		w.log.Error("unreadable console message; closed unanswered", "inbox_id", it.ID, "err", err)
		return turns.Job{Now: true, Turn: w.turn()}
	}
	t := w.turn()
	return turns.Job{Chat: t.Session, Merge: Chat, Text: p.Text, Turn: t}
}

// Plan is the turn of a message, or of several typed while one ran.
func (w *Web) Plan(_ context.Context, batch []*turns.Job) turns.Plan {
	first := batch[0]
	return turns.Plan{
		Turn:    first.Turn,
		Message: agent.Message{Role: agent.RoleUser, Content: turns.MergedText(batch), CreatedAt: first.Item.ReceivedAt},
		Resume:  first.Item.State == turns.InboxStarted,
	}
}

// Busy tells the pages a turn runs, until it ends.
func (w *Web) Busy(context.Context, []*turns.Job) func() {
	w.hub.publish("turn", map[string]bool{"running": true})
	return func() { w.hub.publish("turn", map[string]bool{"running": false}) }
}

// progressEvent is a tool call as the page shows it.
type progressEvent struct {
	Kind       string `json:"kind"` // "tool" | "tool_done"
	Tool       string `json:"tool"`
	Args       string `json:"args,omitempty"`
	Failed     bool   `json:"failed,omitempty"`
	DurationMS int64  `json:"duration_ms,omitempty"`
}

const argLimit = 300

// Progress shows the pages which tool the turn calls, as it happens.
func (w *Web) Progress(context.Context, []*turns.Job) (func(agent.ProgressEvent), func()) {
	return func(ev agent.ProgressEvent) {
		switch ev.Kind {
		case agent.ProgressTool:
			w.hub.publish("progress", progressEvent{Kind: "tool", Tool: human.Visible(ev.Tool), Args: human.Visible(human.Cut(ev.Args, argLimit))})
		case agent.ProgressToolDone:
			w.hub.publish("progress", progressEvent{Kind: "tool_done", Tool: human.Visible(ev.Tool), Failed: ev.Failed,
				DurationMS: ev.Duration.Milliseconds()})
		}
	}, func() {}
}

// chatMessage is a message of the conversation as the page shows it.
type chatMessage struct {
	ID   int64     `json:"id"`
	Role string    `json:"role"`
	Text string    `json:"text"`
	At   time.Time `json:"at"`
}

// shown is how many of the conversation's latest messages a page gets.
const shown = 200

// messages is GET /api/messages?after=ID: the conversation's user and
// assistant texts since its last /new.
func (w *Web) messages(rw http.ResponseWriter, r *http.Request, _ visitor) {
	after, _ := strconv.ParseInt(r.URL.Query().Get("after"), 10, 64)
	// The live messages are few (consolidation folds older ones into
	// memory), but they are read oldest first: all of them, the latest kept.
	msgs, err := w.store.LiveMessages(r.Context(), Session(), 0)
	if err != nil {
		w.fail(rw, "read the conversation", err)
		return
	}
	out := []chatMessage{}
	for _, m := range msgs {
		if m.ID <= after || strings.TrimSpace(m.Content) == "" {
			continue
		}
		if m.Role == agent.RoleUser || m.Role == agent.RoleAssistant {
			out = append(out, chatMessage{ID: m.ID, Role: string(m.Role), Text: m.Content, At: m.CreatedAt.UTC()})
		}
	}
	out = out[max(0, len(out)-shown):]
	writeJSON(rw, http.StatusOK, map[string]any{"messages": out, "running": w.engine.ChatLoad(Session()).Busy})
}

// sendRequest is POST /api/messages. ID, when the page sends one, makes
// a retried send the same message.
type sendRequest struct {
	Text string `json:"text"`
	ID   string `json:"id"`
}

const maxText = 32 << 10

const helpText = `Type a message and the assistant answers, with its tools and memory. Commands:
/stop — stop the turn that runs
/new — start a new conversation (what matters is kept in MEMORY)
/status — the model, this conversation, today's tokens
/help — this text`

// send is POST /api/messages: a command is answered at once, a message
// recorded and queued for its turn.
func (w *Web) send(rw http.ResponseWriter, r *http.Request, _ visitor) {
	var req sendRequest
	if !readJSON(rw, r, &req) {
		return
	}
	text := strings.TrimSpace(req.Text)
	switch {
	case text == "":
		writeError(rw, http.StatusBadRequest, "the message is empty")
		return
	case len(text) > maxText:
		writeError(rw, http.StatusRequestEntityTooLarge, "the message is longer than 32 KB")
		return
	}
	if name, ok := command(text); ok {
		reply, err := w.command(r.Context(), name)
		if err != nil {
			w.fail(rw, "answer /"+name, err)
			return
		}
		writeJSON(rw, http.StatusOK, map[string]string{"reply": reply})
		return
	}
	it, inserted, err := w.record(r.Context(), text, req.ID)
	switch {
	case errors.Is(err, turns.ErrStorageFull):
		writeError(rw, http.StatusServiceUnavailable, "the assistant's disk is full: nothing new can be saved until space is freed")
		return
	case err != nil:
		w.fail(rw, "save the message", err)
		return
	}
	if inserted { // else a page's retry of a message kept already
		w.engine.Add(context.WithoutCancel(r.Context()), it)
		w.hub.publish("message", struct{}{})
	}
	writeJSON(rw, http.StatusAccepted, map[string]bool{"queued": true})
}

// record stores a message in the inbox; the same page id is the same
// message, stored once.
func (w *Web) record(ctx context.Context, text, pageID string) (turns.InboxItem, bool, error) {
	data, _ := json.Marshal(payload{Text: text})
	var n [8]byte
	if pageID != "" {
		sum := sha256.Sum256([]byte(pageID))
		copy(n[:], sum[:])
	} else {
		rand.Read(n[:])
	}
	it := turns.InboxItem{Channel: Channel, UpdateID: int64(binary.BigEndian.Uint64(n[:]) >> 1), ChatID: Chat,
		Payload: data, State: turns.InboxPending, ReceivedAt: w.cfg.Now()}
	id, inserted, err := w.store.RecordInbound(ctx, it)
	if err != nil {
		return it, false, err
	}
	it.ID = id
	if inserted && w.hooks.Inbound != nil {
		w.hooks.Inbound()
	}
	return it, inserted, nil
}

// command is the name of a slash command the console answers itself.
func command(text string) (string, bool) {
	name, _, _ := strings.Cut(strings.TrimPrefix(text, "/"), " ")
	if !strings.HasPrefix(text, "/") {
		return "", false
	}
	switch name {
	case "stop", "new", "status", "help":
		return name, true
	}
	return "", false
}

func (w *Web) command(ctx context.Context, name string) (string, error) {
	chat := Session()
	switch name {
	case "stop":
		if !w.engine.ChatLoad(chat).Busy {
			return "Nothing is running.", nil
		}
		return w.engine.Stop(chat), nil
	case "new":
		// In the chat's queue like a message: a running turn ends before
		// the session is folded into memory.
		return w.engine.Await(ctx, resetter{w}, turns.Job{Chat: chat, Text: "/new"})
	case "status":
		return w.sessions.Status(ctx, chat)
	}
	return helpText, nil
}

// resetter is the source of a /new: its turn is the reset, answered
// without the model.
type resetter struct{ w *Web }

func (r resetter) Prepare(context.Context, turns.InboxItem) turns.Job { return turns.Job{Now: true} }

func (r resetter) Plan(ctx context.Context, _ []*turns.Job) turns.Plan {
	reply := "New conversation started. What matters from the last one is kept in memory."
	if err := r.w.sessions.Reset(ctx, Session()); err != nil {
		var ue interface{ UserMessage() string }
		if errors.As(err, &ue) {
			reply = ue.UserMessage()
		} else {
			reply = "Sorry, I could not start a new conversation. Please try again."
			r.w.log.Error("reset the console's conversation", "err", err)
		}
	}
	r.w.hub.publish("reset", struct{}{})
	return turns.Plan{Turn: r.w.turn(), Answered: true, Reply: reply}
}
