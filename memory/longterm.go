package memory

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/nanobot-go/nanobot/agent"
)

// The store applies consolidation's outcome in consolidation's own types.
var _ agent.ConsolidationStore = (*Store)(nil)

// Scopes of long-term memory: GlobalScope is shared by every chat of the
// owner; ChatScope(session) belongs to one chat only.
const GlobalScope = "global"

// ChatScope returns the memory scope of one session.
func ChatScope(session string) string { return "chat:" + session }

// HistoryEntry is one dated HISTORY entry.
type HistoryEntry struct {
	ID   int64
	At   time.Time
	Text string
}

const (
	defaultHistoryLimit = 10
	maxHistoryLimit     = 100
)

// Memory returns the scope's MEMORY document ("" when there is none).
func (s *Store) Memory(ctx context.Context, scope string) (string, error) {
	var doc string
	err := s.db.QueryRowContext(ctx, `SELECT doc FROM memory WHERE scope = ?`, scope).Scan(&doc)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("read memory: %w", err)
	}
	return doc, nil
}

// SetMemory replaces the scope's MEMORY document.
func (s *Store) SetMemory(ctx context.Context, scope, doc string) error {
	err := s.write(ctx, func(tx *sql.Tx) error { return setMemory(ctx, tx, scope, doc) })
	if err != nil {
		return fmt.Errorf("save memory: %w", err)
	}
	return nil
}

// ErrMemoryChanged is returned by EditMemory when the document is no longer
// the text the edit started from.
var ErrMemoryChanged = errors.New("memory changed meanwhile")

// MemoryDoc is one scope's MEMORY document.
type MemoryDoc struct {
	Scope   string
	Doc     string
	Updated time.Time
}

// MemoryRevision is one text a MEMORY document had, from the time At it
// was written.
type MemoryRevision struct {
	ID  int64
	At  time.Time
	Doc string
}

// EditMemory replaces the scope's MEMORY document with doc if it is still
// base (an absent document is ""), and otherwise changes nothing and
// returns an error wrapping ErrMemoryChanged: an edit never overwrites a
// write it has not seen.
func (s *Store) EditMemory(ctx context.Context, scope, base, doc string) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		var current string
		err := tx.QueryRowContext(ctx, `SELECT doc FROM memory WHERE scope = ?`, scope).Scan(&current)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if current != base {
			return ErrMemoryChanged
		}
		return setMemory(ctx, tx, scope, doc)
	})
	if err != nil {
		return fmt.Errorf("edit memory of %s: %w", scope, err)
	}
	return nil
}

// MemoryScopes returns every scope that has a MEMORY document, the global
// one first, then the chats' in the order of their names.
func (s *Store) MemoryScopes(ctx context.Context) ([]MemoryDoc, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT scope, doc, updated_at FROM memory
		ORDER BY scope <> ?, scope`, GlobalScope)
	if err != nil {
		return nil, fmt.Errorf("read memory scopes: %w", err)
	}
	defer rows.Close()
	var out []MemoryDoc
	for rows.Next() {
		var d MemoryDoc
		var at int64
		if err := rows.Scan(&d.Scope, &d.Doc, &at); err != nil {
			return nil, fmt.Errorf("read memory scopes: %w", err)
		}
		d.Updated = fromMillis(at)
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read memory scopes: %w", err)
	}
	return out, nil
}

// MemoryRevisions returns the texts the scope's MEMORY had, newest (the
// current one) first: at most limit of them (<= 0: all that are kept, the
// newest 50).
func (s *Store) MemoryRevisions(ctx context.Context, scope string, limit int) ([]MemoryRevision, error) {
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	rows, err := s.db.QueryContext(ctx, `SELECT id, at, doc FROM memory_revisions
		WHERE scope = ? ORDER BY id DESC LIMIT ?`, scope, limit)
	if err != nil {
		return nil, fmt.Errorf("read memory revisions: %w", err)
	}
	defer rows.Close()
	var out []MemoryRevision
	for rows.Next() {
		var r MemoryRevision
		var at int64
		if err := rows.Scan(&r.ID, &at, &r.Doc); err != nil {
			return nil, fmt.Errorf("read memory revisions: %w", err)
		}
		r.At = fromMillis(at)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read memory revisions: %w", err)
	}
	return out, nil
}

// AppendHistory adds an entry dated at (zero: now) to the scope's HISTORY.
func (s *Store) AppendHistory(ctx context.Context, scope string, at time.Time, entry string) error {
	err := s.write(ctx, func(tx *sql.Tx) error { return appendHistory(ctx, tx, scope, at, entry) })
	if err != nil {
		return fmt.Errorf("append history: %w", err)
	}
	return nil
}

// History returns the scope's latest entries, newest (last appended) first.
// limit defaults to 10 when <= 0 and is at most 100.
func (s *Store) History(ctx context.Context, scope string, limit int) ([]HistoryEntry, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, at, entry FROM history
		WHERE scope = ? ORDER BY id DESC LIMIT ?`, scope, historyLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("read history: %w", err)
	}
	entries, err := scanHistory(rows)
	if err != nil {
		return nil, fmt.Errorf("read history: %w", err)
	}
	return entries, nil
}

// SearchHistory returns the scope's entries that contain every word of
// query, newest (last appended) first. Any text is a valid query: operators,
// quotes and punctuation are taken literally, never as search syntax, and a
// query without words finds nothing. limit defaults to 10 when <= 0 and is at
// most 100.
func (s *Store) SearchHistory(ctx context.Context, scope, query string, limit int) ([]HistoryEntry, error) {
	phrases := searchPhrases(query)
	if len(phrases) == 0 {
		return nil, nil
	}
	// The index intersects the words with the scope and is walked by
	// descending rowid, so the search stops after the limit instead of
	// collecting and sorting every match (of every scope).
	rows, err := s.db.QueryContext(ctx, `SELECT h.id, h.at, h.entry
		FROM history_fts JOIN history AS h ON h.id = history_fts.rowid
		WHERE history_fts MATCH ? AND h.scope = ?
		ORDER BY history_fts.rowid DESC LIMIT ?`, s.matchExpr(scope, phrases), scope, historyLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("search history: %w", err)
	}
	entries, err := scanHistory(rows)
	if err != nil {
		return nil, fmt.Errorf("search history: %w", err)
	}
	return entries, nil
}

// searchPhrases turns user text into quoted full-text phrases, one per
// whitespace-separated term, made of the term's letters and digits.
// Everything else separates tokens for the index anyway, so dropping it
// changes no meaning and leaves no syntax to misparse, in FTS5 and FTS4
// alike: "a:b" becomes the phrase "a b", `NEAR(` becomes "NEAR", "*" nothing.
func searchPhrases(query string) []string {
	var phrases []string
	for term := range strings.FieldsSeq(query) {
		words := strings.FieldsFunc(term, func(r rune) bool {
			return !unicode.IsLetter(r) && !unicode.IsNumber(r) && !unicode.IsMark(r) &&
				!unicode.Is(unicode.Co, r)
		})
		if len(words) > 0 {
			phrases = append(phrases, `"`+strings.Join(words, " ")+`"`)
		}
	}
	return phrases
}

// matchExpr is the full-text query for entries of scope that contain every
// phrase.
func (s *Store) matchExpr(scope string, phrases []string) string {
	key := "s" + hex.EncodeToString([]byte(scope)) // = history.scope_key
	var b strings.Builder
	if s.fts5 {
		b.WriteString(`scope_key : "` + key + `"`)
		for _, p := range phrases {
			b.WriteString(" AND entry : " + p)
		}
		return b.String()
	}
	// FTS4 takes no column filter on a phrase. Unfiltered phrases may also
	// match scope_key, whose only token is the scope's own key: harmless.
	b.WriteString("scope_key:" + key)
	for _, p := range phrases {
		b.WriteString(" " + p)
	}
	return b.String()
}

// Consolidate applies c in one transaction: the history entry is appended,
// the memory document replaced and the summarised messages marked
// consolidated, or, on any error, nothing changes.
func (s *Store) Consolidate(ctx context.Context, c agent.Consolidation) error {
	if c.Session == "" || c.Scope == "" {
		return errors.New("consolidate: session and scope are required")
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE messages SET state = 'consolidated'
			WHERE session = ? AND state = 'live' AND id <= ?`, c.Session, c.UpToID); err != nil {
			return fmt.Errorf("mark messages: %w", err)
		}
		if c.HistoryEntry != "" {
			if err := appendHistory(ctx, tx, c.Scope, c.At, c.HistoryEntry); err != nil {
				return fmt.Errorf("append history: %w", err)
			}
		}
		if c.Memory != nil {
			if err := setMemory(ctx, tx, c.Scope, *c.Memory); err != nil {
				return fmt.Errorf("save memory: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("consolidate: %w", err)
	}
	return nil
}

func setMemory(ctx context.Context, tx *sql.Tx, scope, doc string) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO memory (scope, doc, updated_at) VALUES (?, ?, ?)
		ON CONFLICT (scope) DO UPDATE SET doc = excluded.doc, updated_at = excluded.updated_at`,
		scope, doc, millis(time.Now()))
	return err
}

func appendHistory(ctx context.Context, tx *sql.Tx, scope string, at time.Time, entry string) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO history (scope, at, entry) VALUES (?, ?, ?)`,
		scope, millis(at), entry)
	return err
}

func historyLimit(limit int) int {
	if limit <= 0 {
		return defaultHistoryLimit
	}
	return min(limit, maxHistoryLimit)
}

func scanHistory(rows *sql.Rows) ([]HistoryEntry, error) {
	defer rows.Close()
	var entries []HistoryEntry
	for rows.Next() {
		var e HistoryEntry
		var at int64
		if err := rows.Scan(&e.ID, &at, &e.Text); err != nil {
			return nil, err
		}
		e.At = fromMillis(at)
		entries = append(entries, e)
	}
	return entries, rows.Err()
}
