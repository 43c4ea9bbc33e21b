package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nanobot-go/nanobot/agent"
)

// Limits of search_history.
const (
	defaultSearchLimit = 5
	maxSearchLimit     = 50
)

// maxSearchOutput bounds what search_history returns, in bytes; the
// snippets of past messages are short already (about 200 characters).
const maxSearchOutput = 12000

// SearchHistory is the search_history tool: full-text search over HISTORY
// and, when the chat's transcript is wired, over the chat's past messages.
type SearchHistory struct{ Memory }

var _ agent.ReadOnlyTool = SearchHistory{}

type searchHistoryParams struct {
	Query string `json:"query"`
	Limit int    `json:"limit"`
}

// Spec describes search_history.
func (SearchHistory) Spec() agent.ToolSpec {
	return agent.ToolSpec{
		Name:        "search_history",
		Description: "Search HISTORY (dated, newest first) and this chat's past messages (best first) by words.",
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "query": {"type": "string", "description": "Words to look for."},
    "limit": {"type": "integer", "minimum": 1, "maximum": 50, "description": "How many entries, and messages, to return; 5 when omitted."}
  },
  "required": ["query"],
  "additionalProperties": false
}`),
	}
}

// ReadOnly reports that search_history changes nothing: its calls of a
// reply may run together with other reads.
func (SearchHistory) ReadOnly() bool { return true }

// Run searches HISTORY and the chat's past messages.
func (t SearchHistory) Run(ctx context.Context, args json.RawMessage) (string, error) {
	var p searchHistoryParams
	if err := decodeArgs(args, &p); err != nil {
		return "", err
	}
	query := strings.TrimSpace(p.Query)
	if query == "" {
		return "", errors.New(`"query" is required`)
	}
	if t.Search == nil {
		return "", errors.New("history is not available")
	}
	limit := p.Limit
	if limit <= 0 {
		limit = defaultSearchLimit
	}
	limit = min(limit, maxSearchLimit)
	hits, err := t.Search(ctx, t.scope(ctx), query, limit)
	if err != nil {
		return "", fmt.Errorf("search history: %w", err)
	}
	chat := t.chat(ctx)
	if chat == "" || t.Find == nil {
		if len(hits) == 0 {
			return fmt.Sprintf("no entries match %q", query), nil
		}
		return historyLines(hits, limit), nil
	}
	found, err := t.Find(ctx, chat, query, limit)
	if err != nil {
		return "", fmt.Errorf("search past messages: %w", err)
	}
	if len(hits) == 0 && len(found) == 0 {
		return fmt.Sprintf("no entries or messages match %q", query), nil
	}
	var sb strings.Builder
	if len(hits) > 0 {
		sb.WriteString("HISTORY:\n" + historyLines(hits, limit) + "\n")
	}
	if len(found) > 0 {
		if sb.Len() > 0 {
			sb.WriteByte('\n')
		}
		sb.WriteString("Past messages:\n")
		for i, h := range found {
			if i == limit {
				break
			}
			sb.WriteString(messageLine(h.ID, h.At, h.Role, h.Snippet) + "\n")
		}
	}
	return boundOutput(strings.TrimSuffix(sb.String(), "\n"), maxSearchOutput), nil
}

// historyLines renders up to limit HISTORY entries, each dated.
func historyLines(hits []HistoryHit, limit int) string {
	var sb strings.Builder
	for i, h := range hits {
		if i == limit {
			break
		}
		text := strings.TrimSpace(h.Text)
		if !datedEntry.MatchString(text) {
			text = "[" + h.At.Format(historyTime) + "] " + text
		}
		sb.WriteString(text)
		sb.WriteByte('\n')
	}
	return strings.TrimSuffix(sb.String(), "\n")
}

// messageLine renders a past message as "[2026-03-01 14:02] #12345 user: text".
func messageLine(id int64, at time.Time, role, text string) string {
	return fmt.Sprintf("[%s] #%d %s: %s", at.Format(historyTime), id, role, text)
}

// boundOutput cuts text to at most n bytes at a line break, saying so.
func boundOutput(text string, n int) string {
	if len(text) <= n {
		return text
	}
	const more = "\n… (more not shown)"
	cut := strings.LastIndexByte(text[:n-len(more)], '\n')
	if cut <= 0 { // one long line: cut it at a character boundary
		cut = n - len(more)
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
	}
	return text[:cut] + more
}
