package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/nanobot-go/nanobot/agent"
)

// datedEntry matches a HISTORY entry that already starts with its date.
var datedEntry = regexp.MustCompile(`^\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}\]`)

// SaveMemory is the save_memory tool: append to HISTORY, replace MEMORY.
type SaveMemory struct{ Memory }

var _ agent.Tool = SaveMemory{}

type saveMemoryParams struct {
	HistoryEntry string `json:"history_entry"`
	MemoryUpdate string `json:"memory_update"`
}

// Spec describes save_memory.
func (SaveMemory) Spec() agent.ToolSpec {
	return agent.ToolSpec{
		Name: "save_memory",
		Description: "Save to long-term memory; give one or both. history_entry: 2-5 sentences on what happened and was decided, added, dated, to the searchable HISTORY log. " +
			"memory_update: the whole new MEMORY document in Markdown (durable facts: who the user is, preferences, projects, standing instructions), keeping all still worth keeping.",
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "history_entry": {"type": "string", "description": "Dated now unless it starts with [YYYY-MM-DD HH:MM]."},
    "memory_update": {"type": "string"}
  },
  "additionalProperties": false
}`),
	}
}

// Run saves what it was given.
func (t SaveMemory) Run(ctx context.Context, args json.RawMessage) (string, error) {
	var p saveMemoryParams
	if err := decodeArgs(args, &p); err != nil {
		return "", err
	}
	entry, doc := strings.TrimSpace(p.HistoryEntry), strings.TrimSpace(p.MemoryUpdate)
	if entry == "" && doc == "" {
		return "", errors.New(`give "history_entry", "memory_update" or both; empty text is not saved`)
	}
	switch {
	case entry != "" && t.Append == nil:
		return "", errors.New("history is not available")
	case doc != "" && t.Save == nil:
		return "", errors.New("memory is not available")
	}
	scope := t.scope(ctx)
	var done []string
	if entry != "" {
		at := t.now()
		if !datedEntry.MatchString(entry) {
			entry = "[" + at.Format(historyTime) + "] " + entry
		}
		if err := t.Append(ctx, scope, at, entry); err != nil {
			return "", fmt.Errorf("append the history entry: %w", err)
		}
		done = append(done, "History entry saved.")
	}
	if doc != "" {
		if err := t.Save(ctx, scope, doc); err != nil {
			if len(done) > 0 {
				return "", fmt.Errorf("the history entry was saved, but updating memory failed: %w", err)
			}
			return "", fmt.Errorf("update memory: %w", err)
		}
		n, limit := utf8.RuneCountInString(doc), t.maxChars()
		done = append(done, fmt.Sprintf("Memory updated (%d characters).", n))
		if n > limit {
			done = append(done, fmt.Sprintf("It is over the limit of %d characters: it was saved, but condense it next time (merge related facts, drop stale ones).", limit))
		}
	}
	return strings.Join(done, " "), nil
}
