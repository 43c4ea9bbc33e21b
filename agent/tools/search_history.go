package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/nanobot-go/nanobot/agent"
)

// Limits of search_history.
const (
	defaultSearchLimit = 5
	maxSearchLimit     = 50
)

// SearchHistory is the search_history tool: full-text search over HISTORY.
type SearchHistory struct{ Memory }

var _ agent.Tool = SearchHistory{}

type searchHistoryParams struct {
	Query string `json:"query"`
	Limit int    `json:"limit"`
}

// Spec describes search_history.
func (SearchHistory) Spec() agent.ToolSpec {
	return agent.ToolSpec{
		Name:        "search_history",
		Description: "Search the HISTORY log of past conversations by words; returns matching dated entries, newest first.",
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "query": {"type": "string", "description": "Words to look for."},
    "limit": {"type": "integer", "minimum": 1, "maximum": 50, "description": "How many entries to return; 5 when omitted."}
  },
  "required": ["query"],
  "additionalProperties": false
}`),
	}
}

// Run searches HISTORY.
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
	if len(hits) == 0 {
		return fmt.Sprintf("no entries match %q", query), nil
	}
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
	return strings.TrimSuffix(sb.String(), "\n"), nil
}
