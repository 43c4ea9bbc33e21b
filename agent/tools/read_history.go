package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/nanobot-go/nanobot/agent"
)

// Limits of read_history.
const (
	defaultReadSpan = 5     // messages before and after when not given
	maxReadMessages = 50    // messages in one page
	maxReadMessage  = 2000  // characters of one message
	maxReadOutput   = 16000 // bytes of one page
)

// ReadHistory is the read_history tool: a page of the chat's own earlier
// conversation around a message id that search_history found.
type ReadHistory struct{ Memory }

var _ agent.ReadOnlyTool = ReadHistory{}

type readHistoryParams struct {
	Around *int64 `json:"around"`
	Before *int   `json:"before"`
	After  *int   `json:"after"`
}

// Spec describes read_history.
func (ReadHistory) Spec() agent.ToolSpec {
	return agent.ToolSpec{
		Name:        "read_history",
		Description: "Read this chat's messages around an #id from search_history (max 50).",
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "around": {"type": "integer", "description": "Message id."},
    "before": {"type": "integer", "description": "Older, 5 if omitted."},
    "after": {"type": "integer", "description": "Newer, 5 if omitted."}
  },
  "required": ["around"],
  "additionalProperties": false
}`),
	}
}

// ReadOnly reports that read_history changes nothing: its calls of a reply
// may run together with other reads.
func (ReadHistory) ReadOnly() bool { return true }

// Run reads a page of the chat's transcript.
func (t ReadHistory) Run(ctx context.Context, args json.RawMessage) (string, error) {
	var p readHistoryParams
	if err := decodeArgs(args, &p); err != nil {
		return "", err
	}
	if p.Around == nil || *p.Around <= 0 {
		return "", errors.New(`"around" is required: the id of a message of this chat, as search_history shows it (#id)`)
	}
	chat := t.chat(ctx)
	if chat == "" || t.Read == nil {
		return "", errors.New("this chat's earlier messages are not available")
	}
	before, after := span(p.Before), span(p.After)
	if before+after >= maxReadMessages {
		return "", fmt.Errorf("before + after is %d; at most %d messages fit in a page", before+after, maxReadMessages-1)
	}
	msgs, err := t.Read(ctx, chat, *p.Around, before, after)
	if errors.Is(err, ErrNotInChat) {
		return "", fmt.Errorf("message #%d is not a message of this chat", *p.Around)
	}
	if err != nil {
		return "", fmt.Errorf("read history: %w", err)
	}
	if len(msgs) == 0 {
		return fmt.Sprintf("no messages to show around #%d", *p.Around), nil
	}
	var sb strings.Builder
	for _, m := range msgs {
		text := strings.TrimSpace(m.Text)
		if cut := firstRunes(text, maxReadMessage); len(cut) < len(text) {
			text = cut + "… (cut)"
		}
		sb.WriteString(messageLine(m.ID, m.At, m.Role, strings.ReplaceAll(text, "\n", "\n    ")) + "\n")
	}
	return boundOutput(strings.TrimSuffix(sb.String(), "\n"), maxReadOutput), nil
}

// span is a before or after count: defaultReadSpan when omitted.
func span(n *int) int {
	if n == nil {
		return defaultReadSpan
	}
	return max(*n, 0)
}
