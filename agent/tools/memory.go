package tools

import (
	"context"
	"time"

	"github.com/nanobot-go/nanobot/agent"
)

// DefaultMemoryMaxChars is the size MEMORY should stay under.
const DefaultMemoryMaxChars = 8000

// historyTime is how HISTORY entries are dated: "[2006-01-02 15:04] ".
const historyTime = "2006-01-02 15:04"

// HistoryHit is one HISTORY entry found by a search.
type HistoryHit struct {
	At   time.Time
	Text string
}

// Memory is what the memory tools need from the store, as functions so that
// the wiring can adapt any store to it.
type Memory struct {
	// Scope returns the memory scope of the turn in ctx ("global" or
	// "chat:<session>"); "global" when nil.
	Scope func(ctx context.Context) string
	// Save replaces the MEMORY document of scope.
	Save func(ctx context.Context, scope, doc string) error
	// Append adds an entry to the HISTORY of scope.
	Append func(ctx context.Context, scope string, at time.Time, entry string) error
	// Search finds HISTORY entries of scope, newest first; any text is a
	// valid query.
	Search func(ctx context.Context, scope, query string, limit int) ([]HistoryHit, error)
	// MaxChars is the size MEMORY should stay under;
	// DefaultMemoryMaxChars when zero.
	MaxChars int
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// NewMemoryTools returns save_memory and search_history over m.
func NewMemoryTools(m Memory) []agent.Tool {
	return []agent.Tool{SaveMemory{m}, SearchHistory{m}}
}

func (m Memory) scope(ctx context.Context) string {
	if m.Scope == nil {
		return "global"
	}
	return m.Scope(ctx)
}

func (m Memory) now() time.Time {
	if m.Now == nil {
		return time.Now()
	}
	return m.Now()
}

func (m Memory) maxChars() int {
	if m.MaxChars > 0 {
		return m.MaxChars
	}
	return DefaultMemoryMaxChars
}
