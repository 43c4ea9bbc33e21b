package memory

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/turns"
)

var _ agent.History = (*Store)(nil)

// A stored message is in one of three states: 'live' (part of the
// conversation the model sees), 'consolidated' (summarised into MEMORY and
// HISTORY) or 'archived' (left behind by /new). Only live messages are read
// back for the model; the others stay as the record.

// SessionStats counts a session's messages.
type SessionStats struct {
	Live  int // not yet consolidated or archived
	Total int // every message ever stored
	// FirstLiveID is the id of the oldest live message (0: none).
	FirstLiveID int64
}

const messageColumns = `id, role, content, images, tool_calls, tool_call_id, name,
	created_at, prompt_tokens, completion_tokens, extra`

// Append stores msgs at the end of session, all or none. A zero CreatedAt
// becomes now. Each assistant message is a model call: its tokens are added
// to the session's usage of the day in the same transaction, which saves a
// synced write per call.
func (s *Store) Append(ctx context.Context, session string, msgs ...agent.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := appendMessages(ctx, tx, session, msgs)
		return err
	})
	if err != nil {
		return fmt.Errorf("append messages: %w", err)
	}
	return nil
}

// Commit writes one record of a turn in one transaction: its messages (and
// their usage), the audit rows of its tool calls and, for a turn that
// answers inbound items, their state. The record that first gives the turn
// a message links the pending items to that message and starts them; the
// Last record marks them done and queues the answer for delivery to the
// turn's chat. So a started item always has its message, and an answered
// one its reply.
func (s *Store) Commit(ctx context.Context, t agent.Turn, r agent.Record) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		first, err := appendMessages(ctx, tx, t.Session, r.Messages)
		if err != nil {
			return err
		}
		for _, ev := range r.Events {
			if err := insertAudit(ctx, tx, auditEntry(ev)); err != nil {
				return err
			}
		}
		if len(t.Inbox) == 0 {
			return nil
		}
		if first != 0 {
			if _, err := tx.ExecContext(ctx, `UPDATE inbox SET state = 'started', message_id = ?, updated_at = ?
				WHERE state = 'pending' AND id IN (`+placeholders(len(t.Inbox))+`)`,
				append([]any{first, millis(time.Now())}, int64Args(t.Inbox)...)...); err != nil {
				return err
			}
		}
		if err := takeInto(ctx, tx, t.Inbox, r.Inbox); err != nil {
			return err
		}
		if !r.Last {
			return nil
		}
		return finishTurn(ctx, tx, t, r.Answer(), r.Quiet)
	})
	if err != nil {
		return fmt.Errorf("commit turn: %w", err)
	}
	return nil
}

// takeInto links the pending items taken into a running turn (messages
// its chat sent during it, recorded in this write) to the turn's first
// message, as if they had started it: the turn's last record closes them
// with its own, and after a crash they resume with it, never again on
// their own.
func takeInto(ctx context.Context, tx *sql.Tx, turn, taken []int64) error {
	if len(taken) == 0 {
		return nil
	}
	_, err := tx.ExecContext(ctx, `UPDATE inbox SET state = 'started', updated_at = ?,
		message_id = (SELECT message_id FROM inbox WHERE message_id IS NOT NULL AND id IN (`+placeholders(len(turn))+`) LIMIT 1)
		WHERE state = 'pending' AND id IN (`+placeholders(len(taken))+`)
		AND EXISTS (SELECT 1 FROM inbox WHERE message_id IS NOT NULL AND id IN (`+placeholders(len(turn))+`))`,
		slices.Concat([]any{millis(time.Now())}, int64Args(turn), int64Args(taken), int64Args(turn))...)
	return err
}

// FinishTurn closes the inbound items of a turn that ended without a last
// record (the model could not be reached, the budget was used up), queueing
// text (or the turn's Fallback when text is empty) and recording it in the
// turn's Mirror, in one transaction. Items already closed stay as they are
// and nothing is queued.
func (s *Store) FinishTurn(ctx context.Context, t agent.Turn, text string) error {
	if len(t.Inbox) == 0 {
		return nil
	}
	err := s.write(ctx, func(tx *sql.Tx) error { return finishTurn(ctx, tx, t, text, false) })
	if err != nil {
		return fmt.Errorf("finish turn: %w", err)
	}
	return nil
}

// finishTurn closes t's items with text as the answer; a quiet answer (a
// tool delivered it already) is not queued.
func finishTurn(ctx context.Context, tx *sql.Tx, t agent.Turn, text string, quiet bool) error {
	ids, err := turnItems(ctx, tx, t.Inbox)
	if err != nil {
		return err
	}
	if strings.TrimSpace(text) == "" {
		text = t.Fallback
	}
	var reply *turns.OutboxItem
	if text != "" && !quiet {
		reply = &turns.OutboxItem{Channel: t.Channel, ChatID: t.ChatID, Text: text, ReplyTo: t.ReplyTo,
			InboxID: slices.Max(ids)}
	}
	queued, err := closeInbound(ctx, tx, ids, reply)
	if err != nil || queued == 0 || t.Mirror == "" {
		return err
	}
	// Not a model call of that session: no usage is counted.
	return insertAssistant(ctx, tx, t.Mirror, text)
}

// turnItems returns ids with every other item their turn answers: those
// linked to the same first message. A turn closes them all, so none of
// them is answered again by a second resume.
func turnItems(ctx context.Context, tx *sql.Tx, ids []int64) ([]int64, error) {
	rows, err := tx.QueryContext(ctx, `SELECT id FROM inbox WHERE message_id IN
		(SELECT message_id FROM inbox WHERE message_id IS NOT NULL AND id IN (`+placeholders(len(ids))+`))`,
		int64Args(ids)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := slices.Clone(ids)
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return slices.Compact(slices.Sorted(slices.Values(out))), rows.Err()
}

// appendMessages inserts msgs and returns the id of the first (0: none).
func appendMessages(ctx context.Context, tx *sql.Tx, session string, msgs []agent.Message) (int64, error) {
	if len(msgs) == 0 {
		return 0, nil
	}
	channel, chat, err := chatOf(ctx, tx, session)
	if err != nil {
		return 0, err
	}
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO messages
		(session, channel, chat, role, content, images, tool_calls, tool_call_id, name,
		 created_at, prompt_tokens, completion_tokens, extra)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return 0, err
	}
	defer stmt.Close()
	var first int64
	for _, m := range msgs {
		images, err := jsonOrNull(m.Images)
		if err != nil {
			return 0, err
		}
		calls, err := jsonOrNull(m.ToolCalls)
		if err != nil {
			return 0, err
		}
		var extra any // NULL when the provider added nothing
		if len(m.Extra) > 0 {
			extra = string(m.Extra)
		}
		res, err := stmt.ExecContext(ctx, session, channel, chat, string(m.Role), m.Content, images, calls,
			m.ToolCallID, m.Name, millis(m.CreatedAt),
			m.Usage.PromptTokens, m.Usage.CompletionTokens, extra)
		if err != nil {
			return 0, err
		}
		if first == 0 {
			if first, err = res.LastInsertId(); err != nil {
				return 0, err
			}
		}
		if m.Role == agent.RoleAssistant {
			if err := addUsage(ctx, tx, session, m.CreatedAt, m.Model, m.Usage); err != nil {
				return 0, err
			}
		}
	}
	return first, nil
}

// Recent returns at most limit of the session's newest live messages, oldest
// first. The window is trimmed at the front to start at a user message, so
// an assistant's tool calls are never separated from their results; it is
// empty when no user message falls inside it. Only the window is read.
func (s *Store) Recent(ctx context.Context, session string, limit int) ([]agent.Message, error) {
	if limit <= 0 {
		return nil, nil
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+messageColumns+` FROM messages
		WHERE session = ? AND state = 'live' ORDER BY id DESC LIMIT ?`, session, limit)
	if err != nil {
		return nil, fmt.Errorf("read recent messages: %w", err)
	}
	stored, err := scanMessages(rows)
	if err != nil {
		return nil, fmt.Errorf("read recent messages: %w", err)
	}
	slices.Reverse(stored)
	start := slices.IndexFunc(stored, func(m agent.StoredMessage) bool { return m.Role == agent.RoleUser })
	if start < 0 {
		return nil, nil
	}
	msgs := make([]agent.Message, 0, len(stored)-start)
	for _, m := range stored[start:] {
		msgs = append(msgs, m.Message)
	}
	return msgs, nil
}

// LiveMessages returns the session's oldest live messages, at most limit of
// them (all when limit <= 0), oldest first: what consolidation summarises.
func (s *Store) LiveMessages(ctx context.Context, session string, limit int) ([]agent.StoredMessage, error) {
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+messageColumns+` FROM messages
		WHERE session = ? AND state = 'live' ORDER BY id LIMIT ?`, session, limit)
	if err != nil {
		return nil, fmt.Errorf("read live messages: %w", err)
	}
	msgs, err := scanMessages(rows)
	if err != nil {
		return nil, fmt.Errorf("read live messages: %w", err)
	}
	return msgs, nil
}

// SessionStats counts the session's messages.
func (s *Store) SessionStats(ctx context.Context, session string) (SessionStats, error) {
	var st SessionStats
	var first sql.NullInt64
	err := s.db.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM messages WHERE session = ?1 AND state = 'live'),
		(SELECT count(*) FROM messages WHERE session = ?1),
		(SELECT min(id) FROM messages WHERE session = ?1 AND state = 'live')`, session).
		Scan(&st.Live, &st.Total, &first)
	if err != nil {
		return SessionStats{}, fmt.Errorf("count session messages: %w", err)
	}
	st.FirstLiveID = first.Int64
	return st, nil
}

// ResetSession starts the session afresh (/new): every live message is
// archived, kept in the database but never sent to the model again.
func (s *Store) ResetSession(ctx context.Context, session string) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE messages SET state = 'archived'
			WHERE session = ? AND state = 'live'`, session)
		return err
	})
	if err != nil {
		return fmt.Errorf("reset session: %w", err)
	}
	return nil
}

func scanMessages(rows *sql.Rows) ([]agent.StoredMessage, error) {
	defer rows.Close()
	var msgs []agent.StoredMessage
	for rows.Next() {
		var (
			m                    agent.StoredMessage
			role                 string
			images, calls, extra sql.NullString
			created              int64
		)
		if err := rows.Scan(&m.ID, &role, &m.Content, &images, &calls, &m.ToolCallID, &m.Name,
			&created, &m.Usage.PromptTokens, &m.Usage.CompletionTokens, &extra); err != nil {
			return nil, err
		}
		if extra.Valid && extra.String != "" {
			m.Extra = json.RawMessage(extra.String)
		}
		m.Role = agent.Role(role)
		m.CreatedAt = fromMillis(created)
		if images.Valid {
			if err := json.Unmarshal([]byte(images.String), &m.Images); err != nil {
				return nil, fmt.Errorf("message %d: images: %w", m.ID, err)
			}
		}
		if calls.Valid {
			if err := json.Unmarshal([]byte(calls.String), &m.ToolCalls); err != nil {
				return nil, fmt.Errorf("message %d: tool calls: %w", m.ID, err)
			}
		}
		msgs = append(msgs, m)
	}
	return msgs, rows.Err()
}

// jsonOrNull encodes a non-empty slice as JSON; an empty one is NULL.
func jsonOrNull[T any](v []T) (sql.NullString, error) {
	if len(v) == 0 {
		return sql.NullString{}, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return sql.NullString{}, err
	}
	return sql.NullString{String: string(b), Valid: true}, nil
}

// insertAssistant records text as an assistant message of session that was
// no model call (no usage is counted).
func insertAssistant(ctx context.Context, tx *sql.Tx, session, text string) error {
	channel, chat, err := chatOf(ctx, tx, session)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO messages (session, channel, chat, role, content, created_at)
		VALUES (?, ?, ?, 'assistant', ?, ?)`, session, channel, chat, text, millis(time.Now()))
	return err
}
