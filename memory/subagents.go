package memory

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/nanobot-go/nanobot/agent/subagent"
)

// The store records the subagent manager's tasks in its own types.
var _ subagent.Store = (*Store)(nil)

// StartSubagent records a task as running and returns its id.
func (s *Store) StartSubagent(ctx context.Context, t subagent.Task) (int64, error) {
	var id int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO subagents (channel, chat_id, sender_id, label, task, state, started_at)
			VALUES (?, ?, ?, ?, ?, 'running', ?)`, t.Channel, t.ChatID, t.SenderID, t.Label, t.Task, millis(t.StartedAt))
		if err != nil {
			return err
		}
		id, err = res.LastInsertId()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("start subagent: %w", err)
	}
	return id, nil
}

// FinishSubagent records how a task ended.
func (s *Store) FinishSubagent(ctx context.Context, id int64, state, result string) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE subagents SET state = ?, result = ?, ended_at = ? WHERE id = ?`,
			state, result, millis(time.Now()), id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return fmt.Errorf("subagent %d: %w", id, ErrNotFound)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("finish subagent: %w", err)
	}
	return nil
}

// RunningSubagents returns the tasks recorded as running, oldest first.
func (s *Store) RunningSubagents(ctx context.Context) ([]subagent.Task, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, channel, chat_id, sender_id, label, task, started_at
		FROM subagents WHERE state = 'running' ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("read running subagents: %w", err)
	}
	defer rows.Close()
	var out []subagent.Task
	for rows.Next() {
		var t subagent.Task
		var started int64
		if err := rows.Scan(&t.ID, &t.Channel, &t.ChatID, &t.SenderID, &t.Label, &t.Task, &started); err != nil {
			return nil, fmt.Errorf("read running subagents: %w", err)
		}
		t.StartedAt = fromMillis(started)
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read running subagents: %w", err)
	}
	return out, nil
}
