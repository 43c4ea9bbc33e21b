package tools

import (
	"context"
	"errors"
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

// MessageHit is one past message of the chat found by a search.
type MessageHit struct {
	ID      int64
	Role    string // "user" or "assistant"
	At      time.Time
	Snippet string // the matching part of the message
}

// PastMessage is one message of the chat's transcript.
type PastMessage struct {
	ID   int64
	Role string
	At   time.Time
	Text string
}

// ErrNotInChat is what Memory.Read returns (wrapped) for a message id that
// is not one of the chat's own.
var ErrNotInChat = errors.New("not a message of this chat")

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
	// Chat returns the chat of the turn in ctx, as its session
	// ("telegram:123"); "" for a turn of no chat. A chat's transcript is its
	// own whatever the memory scope is: no other chat's messages are found
	// or read. The transcript tools are unavailable when nil.
	Chat func(ctx context.Context) string
	// Find finds past messages of chat, best match first; any text is a
	// valid query.
	Find func(ctx context.Context, chat, query string, limit int) ([]MessageHit, error)
	// Read returns up to before messages of chat older than the message id,
	// that message and up to after newer ones, oldest first; ErrNotInChat
	// when id is not one of chat's messages.
	Read func(ctx context.Context, chat string, id int64, before, after int) ([]PastMessage, error)
	// MaxChars is the size MEMORY should stay under;
	// DefaultMemoryMaxChars when zero.
	MaxChars int
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// NewMemoryTools returns save_memory, search_history and read_history over
// m.
func NewMemoryTools(m Memory) []agent.Tool {
	return []agent.Tool{SaveMemory{m}, SearchHistory{m}, ReadHistory{m}}
}

// chat is the chat of the turn in ctx, "" when there is none or the
// transcript is not wired.
func (m Memory) chat(ctx context.Context) string {
	if m.Chat == nil {
		return ""
	}
	return m.Chat(ctx)
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
