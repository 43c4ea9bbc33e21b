package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/nanobot-go/nanobot/agent"
)

// Outbox delivers messages to chats now, outside the turn's answer.
type Outbox interface {
	// Send queues text for chat on the turn's channel.
	Send(ctx context.Context, from agent.Turn, chat, text string) error
}

// Message is the message tool: send a message now, to the turn's own chat
// or, for the owner, to another allowed private chat.
type Message struct {
	Outbox Outbox
	// MayReach says whether the turn may write to a chat other than its
	// own (nil error: yes); nil allows only the turn's own chat.
	MayReach func(t agent.Turn, chat string) error
}

var _ agent.Tool = Message{}

type messageParams struct {
	Content string `json:"content"`
	ChatID  jobID  `json:"chat_id"`
}

// maxMessage bounds one message (the channel splits it into parts).
const maxMessage = 20000

// Spec describes message.
func (Message) Spec() agent.ToolSpec {
	return agent.ToolSpec{
		Name: "message",
		Description: "Send a message now, before your answer (progress on long work, something urgent). " +
			"An answer that only repeats it is not sent again.",
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "content": {"type": "string", "description": "Markdown."},
    "chat_id": {"type": "integer", "description": "Omit for this chat; the owner may name an allowed user's private chat."}
  },
  "required": ["content"],
  "additionalProperties": false
}`),
	}
}

// Run sends the message.
func (m Message) Run(ctx context.Context, args json.RawMessage) (string, error) {
	var p messageParams
	if err := decodeArgs(args, &p); err != nil {
		return "", err
	}
	content := strings.TrimSpace(p.Content)
	switch {
	case content == "":
		return "", errors.New("content is empty: give the text to send")
	case len([]rune(content)) > maxMessage:
		return "", fmt.Errorf("content has %d characters, more than the %d one message may have; send less", len([]rune(content)), maxMessage)
	}
	t, ok := agent.TurnFrom(ctx)
	if !ok || t.ChatID == "" || t.Channel == "" || m.Outbox == nil {
		return "", errors.New("this conversation has no chat to send messages to")
	}
	chat := t.ChatID
	if p.ChatID != 0 {
		chat = fmt.Sprint(int64(p.ChatID))
	}
	if chat != t.ChatID {
		if m.MayReach == nil {
			return "", errors.New("messages can only go to this chat")
		}
		if err := m.MayReach(t, chat); err != nil {
			return "", err
		}
	}
	if err := m.Outbox.Send(ctx, t, chat, content); err != nil {
		return "", fmt.Errorf("send the message: %w", err)
	}
	agent.NoteSent(ctx, chat, content)
	if chat == t.ChatID {
		return "Sent to this chat.", nil
	}
	return fmt.Sprintf("Sent to chat %s.", chat), nil
}
