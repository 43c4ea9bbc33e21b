package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nanobot-go/nanobot/turns"
)

// RecordInbound stores an inbound update as pending, before the channel
// acknowledges it. A replay of a recorded (channel, update id) changes
// nothing and returns the existing id with inserted false. A zero ReceivedAt
// becomes now.
func (s *Store) RecordInbound(ctx context.Context, it turns.InboxItem) (id int64, inserted bool, err error) {
	err = s.write(ctx, func(tx *sql.Tx) error {
		now := millis(time.Now())
		res, err := tx.ExecContext(ctx, `INSERT INTO inbox
			(channel, update_id, chat_id, payload, state, received_at, updated_at)
			VALUES (?, ?, ?, ?, 'pending', ?, ?)
			ON CONFLICT (channel, update_id) DO NOTHING`,
			it.Channel, it.UpdateID, it.ChatID, it.Payload, millis(it.ReceivedAt), now)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if n == 1 {
			inserted = true
			if id, err = res.LastInsertId(); err != nil || id%pruneEvery != 0 {
				return err
			}
			return pruneQueues(ctx, tx, time.Now())
		}
		return tx.QueryRowContext(ctx, `SELECT id FROM inbox WHERE channel = ? AND update_id = ?`,
			it.Channel, it.UpdateID).Scan(&id)
	})
	if err != nil {
		return 0, false, fmt.Errorf("record inbound: %w", err)
	}
	return id, inserted, nil
}

// Handled inbox items and delivered (or failed) replies are kept for a
// while and then pruned, so that the queues stay bounded however many
// messages arrive: an item goes once it is older than queueRetention or
// not among the newest queueKeep of its kind (an inbox item stays while a
// kept reply refers to it, so at most twice that many are kept). The inbox keeps an update
// long enough to drop a replay of it: Telegram resends only the last
// batch it was not told about, and keeps nothing longer than a day. The
// conversation itself is in the messages table, which keeps everything.
const (
	queueRetention = 7 * 24 * time.Hour
	queueKeep      = 1000
	// pruneEvery is how many recorded updates go between two prunings.
	pruneEvery = 64
)

// pruneQueues deletes what the queues no longer need. A reply refers to
// the item it answers, so replies go first, and an item a kept reply
// refers to stays.
func pruneQueues(ctx context.Context, tx *sql.Tx, now time.Time) error {
	cutoff := millis(now.Add(-queueRetention))
	if _, err := tx.ExecContext(ctx, `DELETE FROM outbox WHERE state <> 'pending' AND (updated_at < ?1
		OR id <= (SELECT id FROM outbox WHERE state <> 'pending' ORDER BY id DESC LIMIT 1 OFFSET ?2))`,
		cutoff, queueKeep); err != nil {
		return fmt.Errorf("prune outbox: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM inbox WHERE state = 'done' AND (updated_at < ?1
			OR id <= (SELECT id FROM inbox WHERE state = 'done' ORDER BY id DESC LIMIT 1 OFFSET ?2))
		AND id NOT IN (SELECT inbox_id FROM outbox WHERE inbox_id IS NOT NULL)`,
		cutoff, queueKeep); err != nil {
		return fmt.Errorf("prune inbox: %w", err)
	}
	return nil
}

// PendingInbound returns the channel's unanswered updates, pending or
// started, in the order they arrived. An empty channel means every channel.
func (s *Store) PendingInbound(ctx context.Context, channel string) ([]turns.InboxItem, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, channel, update_id, chat_id, payload, state, received_at,
			coalesce(message_id, 0)
		FROM inbox WHERE state <> 'done' AND (?1 = '' OR channel = ?1) ORDER BY id`, channel)
	if err != nil {
		return nil, fmt.Errorf("read pending inbound: %w", err)
	}
	defer rows.Close()
	var items []turns.InboxItem
	for rows.Next() {
		var it turns.InboxItem
		var received int64
		if err := rows.Scan(&it.ID, &it.Channel, &it.UpdateID, &it.ChatID, &it.Payload, &it.State, &received, &it.MessageID); err != nil {
			return nil, fmt.Errorf("read pending inbound: %w", err)
		}
		it.ReceivedAt = fromMillis(received)
		items = append(items, it)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read pending inbound: %w", err)
	}
	return items, nil
}

// completeInbound marks the updates done and, when reply is not nil,
// enqueues it, in one transaction, so an answered update is never answered
// again and never left without its reply. Updates that are all done already
// (their turn's last record closed them) stay as they are and nothing is
// enqueued. It returns the reply's outbox id (0 without a reply). An
// unknown id fails it and changes nothing.
func (s *Store) completeInbound(ctx context.Context, ids []int64, reply *turns.OutboxItem) (outboxID int64, err error) {
	err = s.write(ctx, func(tx *sql.Tx) error {
		var err error
		outboxID, err = closeInbound(ctx, tx, ids, reply)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("complete inbound: %w", err)
	}
	return outboxID, nil
}

func closeInbound(ctx context.Context, tx *sql.Tx, ids []int64, reply *turns.OutboxItem) (int64, error) {
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	if len(ids) > 0 {
		var known, open int
		if err := tx.QueryRowContext(ctx, `SELECT count(*), count(*) FILTER (WHERE state <> 'done')
			FROM inbox WHERE id IN (`+placeholders(len(ids))+`)`, int64Args(ids)...).Scan(&known, &open); err != nil {
			return 0, err
		}
		switch {
		case known != len(ids):
			return 0, fmt.Errorf("inbox items %v: %w", ids, ErrNotFound)
		case open == 0:
			return 0, nil
		}
		if _, err := tx.ExecContext(ctx, `UPDATE inbox SET state = 'done', updated_at = ?
			WHERE state <> 'done' AND id IN (`+placeholders(len(ids))+`)`,
			append([]any{millis(time.Now())}, int64Args(ids)...)...); err != nil {
			return 0, err
		}
	}
	if reply == nil {
		return 0, nil
	}
	return enqueue(ctx, tx, *reply)
}

// Enqueue stores a reply as pending delivery and returns its id. A zero
// CreatedAt becomes now.
func (s *Store) Enqueue(ctx context.Context, it turns.OutboxItem) (int64, error) {
	var id int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		var err error
		id, err = enqueue(ctx, tx, it)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("enqueue outbound: %w", err)
	}
	return id, nil
}

func enqueue(ctx context.Context, tx *sql.Tx, it turns.OutboxItem) (int64, error) {
	inbox := sql.NullInt64{Int64: it.InboxID, Valid: it.InboxID != 0}
	res, err := tx.ExecContext(ctx, `INSERT INTO outbox
		(channel, chat_id, text, reply_to, inbox_id, state, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, 'pending', ?, ?)`,
		it.Channel, it.ChatID, it.Text, it.ReplyTo, inbox, millis(it.CreatedAt), millis(time.Now()))
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

// PendingOutbound returns the channel's undelivered replies in the order
// they were enqueued. An empty channel means every channel.
func (s *Store) PendingOutbound(ctx context.Context, channel string) ([]turns.OutboxItem, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, channel, chat_id, text, reply_to, inbox_id,
			state, attempts, sent_message_id, created_at
		FROM outbox WHERE state = 'pending' AND (?1 = '' OR channel = ?1) ORDER BY id`, channel)
	if err != nil {
		return nil, fmt.Errorf("read pending outbound: %w", err)
	}
	defer rows.Close()
	var items []turns.OutboxItem
	for rows.Next() {
		var it turns.OutboxItem
		var inbox sql.NullInt64
		var created int64
		if err := rows.Scan(&it.ID, &it.Channel, &it.ChatID, &it.Text, &it.ReplyTo, &inbox,
			&it.State, &it.Attempts, &it.SentMessageID, &created); err != nil {
			return nil, fmt.Errorf("read pending outbound: %w", err)
		}
		it.InboxID = inbox.Int64
		it.CreatedAt = fromMillis(created)
		items = append(items, it)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read pending outbound: %w", err)
	}
	return items, nil
}

// MarkSent records that the channel accepted the reply, with the id it gave
// the delivered message.
func (s *Store) MarkSent(ctx context.Context, id, messageID int64) error {
	err := s.finishOutbound(ctx, id, "sent", messageID, "")
	if err != nil {
		return fmt.Errorf("mark outbound sent: %w", err)
	}
	return nil
}

// MarkOutboundFailed gives up on a reply, keeping it and the reason.
func (s *Store) MarkOutboundFailed(ctx context.Context, id int64, reason string) error {
	err := s.finishOutbound(ctx, id, "failed", 0, reason)
	if err != nil {
		return fmt.Errorf("mark outbound failed: %w", err)
	}
	return nil
}

func (s *Store) finishOutbound(ctx context.Context, id int64, state string, messageID int64, reason string) error {
	// Until it is written a crash sends the reply again: it goes first.
	return s.writeTx(ctx, state == "sent", func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE outbox SET state = ?, sent_message_id = ?, error = ?,
			attempts = attempts + 1, updated_at = ? WHERE id = ?`,
			state, messageID, reason, millis(time.Now()), id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return fmt.Errorf("outbox item %d: %w", id, ErrNotFound)
		}
		return nil
	})
}

// State returns the value stored under key ("" when absent).
func (s *Store) State(ctx context.Context, key string) (string, error) {
	var v string
	err := s.db.QueryRowContext(ctx, `SELECT value FROM state WHERE key = ?`, key).Scan(&v)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("read state %q: %w", key, err)
	}
	return v, nil
}

// SetState stores value under key.
func (s *Store) SetState(ctx context.Context, key, value string) error {
	// Small and rare, and a reply's delivery progress among them: a part
	// recorded late is a part sent again after a crash.
	err := s.writeTx(ctx, true, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO state (key, value, updated_at) VALUES (?, ?, ?)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
			key, value, millis(time.Now()))
		return err
	})
	if err != nil {
		return fmt.Errorf("save state %q: %w", key, err)
	}
	return nil
}

// Deliver queues a message for a chat outside any turn's answer and, when
// session is not empty, records its text there as an assistant message, in
// one transaction: the message tool sending to a chat whose conversation
// did not see it written.
func (s *Store) Deliver(ctx context.Context, it turns.OutboxItem, session string) (int64, error) {
	var id int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		var err error
		if id, err = enqueue(ctx, tx, it); err != nil || session == "" {
			return err
		}
		return insertAssistant(ctx, tx, session, it.Text)
	})
	if err != nil {
		return 0, fmt.Errorf("deliver message: %w", err)
	}
	return id, nil
}
