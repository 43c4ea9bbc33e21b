package memory

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/jobs"
	"github.com/nanobot-go/nanobot/session"
)

// The store is the jobs service's: it returns that package's types and
// errors (jobs.ErrLimit, jobs.ErrNotFound, jobs.ErrStale) as they are.
var _ jobs.Store = (*Store)(nil)

// jobsVersionKey is bumped by every add, removal, pause and resumption,
// from any process, so a running daemon can tell that its schedule is out
// of date.
const jobsVersionKey = "jobs.version"

const jobColumns = `id, channel, chat_id, created_by, message, kind, spec, zone,
	coalesce(next_run, 0), coalesce(last_run, 0), created_at, paused`

// AddJob stores a job unless its chat has max (> 0) jobs already, and
// returns its id.
func (s *Store) AddJob(ctx context.Context, j jobs.Job, max int) (int64, error) {
	var id int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		if max > 0 {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM jobs
				WHERE channel = ? AND chat_id = ? AND removed_at IS NULL`, j.Channel, j.ChatID).Scan(&n); err != nil {
				return err
			}
			if n >= max {
				return fmt.Errorf("chat %s has %d jobs: %w", j.ChatID, n, jobs.ErrLimit)
			}
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO jobs
			(channel, chat_id, created_by, message, kind, spec, zone, next_run, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			j.Channel, j.ChatID, j.CreatedBy, j.Message, j.Kind, j.Spec, j.Zone, nullMillis(j.NextRun), millis(j.CreatedAt))
		if err != nil {
			return err
		}
		if id, err = res.LastInsertId(); err != nil {
			return err
		}
		return bumpJobsVersion(ctx, tx)
	})
	if err != nil {
		return 0, fmt.Errorf("add job: %w", err)
	}
	return id, nil
}

func bumpJobsVersion(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO state (key, value, updated_at) VALUES (?1, '1', ?2)
		ON CONFLICT (key) DO UPDATE SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT), updated_at = ?2`,
		jobsVersionKey, millis(time.Now()))
	return err
}

// JobsVersion changes whenever a job is added, removed, paused or resumed.
func (s *Store) JobsVersion(ctx context.Context) (string, error) { return s.State(ctx, jobsVersionKey) }

// Job returns a job that has not been removed.
func (s *Store) Job(ctx context.Context, id int64) (jobs.Job, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+jobColumns+` FROM jobs WHERE id = ? AND removed_at IS NULL`, id)
	if err != nil {
		return jobs.Job{}, fmt.Errorf("read job: %w", err)
	}
	list, err := scanJobs(rows)
	if err != nil {
		return jobs.Job{}, fmt.Errorf("read job: %w", err)
	}
	if len(list) == 0 {
		return jobs.Job{}, fmt.Errorf("job %d: %w", id, jobs.ErrNotFound)
	}
	return list[0], nil
}

// Jobs returns a chat's jobs (every chat's when chat is empty), oldest
// first. Removed jobs are left out.
func (s *Store) Jobs(ctx context.Context, channel, chat string) ([]jobs.Job, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+jobColumns+` FROM jobs
		WHERE removed_at IS NULL AND (?1 = '' OR (channel = ?1 AND chat_id = ?2)) ORDER BY id`, channel, chat)
	if err != nil {
		return nil, fmt.Errorf("read jobs: %w", err)
	}
	list, err := scanJobs(rows)
	if err != nil {
		return nil, fmt.Errorf("read jobs: %w", err)
	}
	return list, nil
}

// JobSlots returns the next run of every job that has one and is not
// paused: all a scheduler needs to keep in memory.
func (s *Store) JobSlots(ctx context.Context) ([]jobs.Slot, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, next_run FROM jobs
		WHERE removed_at IS NULL AND next_run IS NOT NULL AND paused = 0 ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("read job slots: %w", err)
	}
	defer rows.Close()
	var out []jobs.Slot
	for rows.Next() {
		var js jobs.Slot
		var next int64
		if err := rows.Scan(&js.ID, &next); err != nil {
			return nil, fmt.Errorf("read job slots: %w", err)
		}
		js.NextRun = fromMillis(next)
		out = append(out, js)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read job slots: %w", err)
	}
	return out, nil
}

// RemoveJob removes a job of the chat (of any chat when channel is
// empty); false when there is no such job.
func (s *Store) RemoveJob(ctx context.Context, channel, chat string, id int64) (bool, error) {
	var removed bool
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE jobs SET removed_at = ?, next_run = NULL
			WHERE id = ? AND removed_at IS NULL AND (?3 = '' OR (channel = ?3 AND chat_id = ?4))`,
			millis(time.Now()), id, channel, chat)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil || n == 0 {
			return err
		}
		removed = true
		return bumpJobsVersion(ctx, tx)
	})
	if err != nil {
		return false, fmt.Errorf("remove job: %w", err)
	}
	return removed, nil
}

// FireJob records a firing as a pending inbox item of channel "cron" and,
// unless it is manual, moves the job's next run on (removing a job that has
// none left), in one transaction. A
// scheduled firing needs the job to be due at its slot and not paused
// (jobs.ErrStale otherwise). A slot that was recorded before is not recorded again:
// inserted is false and the existing item's id is returned.
func (s *Store) FireJob(ctx context.Context, f jobs.Firing) (inboxID int64, inserted bool, err error) {
	err = s.write(ctx, func(tx *sql.Tx) error {
		var next sql.NullInt64
		var paused bool
		if err := tx.QueryRowContext(ctx, `SELECT next_run, paused FROM jobs WHERE id = ? AND removed_at IS NULL`,
			f.JobID).Scan(&next, &paused); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("job %d: %w", f.JobID, jobs.ErrNotFound)
			}
			return err
		}
		if !f.Manual {
			if paused || !next.Valid || next.Int64 != f.Slot.UnixMilli() {
				return fmt.Errorf("job %d at %s: %w", f.JobID, f.Slot.UTC().Format(time.RFC3339), jobs.ErrStale)
			}
			// A job without a next run (a one-shot reminder) is done: it
			// leaves the chat's list and its limit.
			if _, err := tx.ExecContext(ctx, `UPDATE jobs SET next_run = ?1, last_run = ?2,
				removed_at = CASE WHEN ?1 IS NULL THEN ?3 END WHERE id = ?4`,
				nullMillis(f.Next), f.Slot.UnixMilli(), millis(time.Now()), f.JobID); err != nil {
				return err
			}
		}
		now := millis(time.Now())
		res, err := tx.ExecContext(ctx, `INSERT INTO inbox
			(channel, update_id, chat_id, payload, state, received_at, updated_at)
			VALUES ('cron', ?, ?, ?, 'pending', ?, ?)
			ON CONFLICT (channel, update_id) DO NOTHING`, f.UpdateID, f.ChatID, f.Payload, now, now)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 1 {
			inserted = true
			inboxID, err = res.LastInsertId()
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT id FROM inbox WHERE channel = 'cron' AND update_id = ?`,
			f.UpdateID).Scan(&inboxID)
	})
	if err != nil {
		return 0, false, fmt.Errorf("fire job: %w", err)
	}
	return inboxID, inserted, nil
}

// SkipJob moves a job from slot to next without firing it (a run missed
// while the daemon was down, under the skip policy). jobs.ErrStale when the job
// is no longer due at slot.
func (s *Store) SkipJob(ctx context.Context, id int64, slot, next time.Time) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE jobs SET next_run = ? WHERE id = ? AND removed_at IS NULL AND next_run = ?`,
			nullMillis(next), id, slot.UnixMilli())
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return fmt.Errorf("job %d at %s: %w", id, slot.UTC().Format(time.RFC3339), jobs.ErrStale)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("skip job: %w", err)
	}
	return nil
}

// PauseJob pauses a job (paused true) or resumes it, and returns it. A
// paused job keeps its next run but is left out of JobSlots and does not
// fire on schedule; resuming a paused job sets its next run to next (none
// when next is zero). Either is counted as a change of the jobs, so other
// processes reload their schedule. jobs.ErrNotFound for a removed or
// unknown job.
func (s *Store) PauseJob(ctx context.Context, id int64, paused bool, next time.Time) (jobs.Job, error) {
	var j jobs.Job
	err := s.write(ctx, func(tx *sql.Tx) error {
		q := `UPDATE jobs SET paused = 1 WHERE id = ? AND removed_at IS NULL AND paused = 0`
		args := []any{id}
		if !paused {
			q = `UPDATE jobs SET paused = 0, next_run = ? WHERE id = ? AND removed_at IS NULL AND paused = 1`
			args = []any{nullMillis(next), id}
		}
		res, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n > 0 {
			if err := bumpJobsVersion(ctx, tx); err != nil {
				return err
			}
		}
		rows, err := tx.QueryContext(ctx, `SELECT `+jobColumns+` FROM jobs WHERE id = ? AND removed_at IS NULL`, id)
		if err != nil {
			return err
		}
		list, err := scanJobs(rows)
		if err != nil {
			return err
		}
		if len(list) == 0 {
			return fmt.Errorf("job %d: %w", id, jobs.ErrNotFound)
		}
		j = list[0]
		return nil
	})
	if err != nil {
		return jobs.Job{}, fmt.Errorf("pause job: %w", err)
	}
	return j, nil
}

// ChatUsageOn returns what a chat's turns used on the day of on: its own
// session ("channel:chat"), the sessions of its scheduled jobs ("cron:<id>")
// and background tasks ("subagent:<id>"), and the sessions in also.
func (s *Store) ChatUsageOn(ctx context.Context, channel, chat string, on time.Time, also ...string) (agent.Usage, error) {
	var u agent.Usage
	extra, _ := json.Marshal(append([]string{}, also...))
	err := s.db.QueryRowContext(ctx, `SELECT `+usageSums+`
		FROM usage WHERE day = ?1 AND ((channel = ?2 AND chat = ?3)
			OR session IN (SELECT value FROM json_each(?4)))`,
		day(on), channel, chat, string(extra)).Scan(&u.PromptTokens, &u.CompletionTokens, &u.CachedTokens)
	if err != nil {
		return agent.Usage{}, fmt.Errorf("read chat usage: %w", err)
	}
	return u, nil
}

func scanJobs(rows *sql.Rows) ([]jobs.Job, error) {
	defer rows.Close()
	var out []jobs.Job
	for rows.Next() {
		var j jobs.Job
		var next, last, created int64
		if err := rows.Scan(&j.ID, &j.Channel, &j.ChatID, &j.CreatedBy, &j.Message, &j.Kind, &j.Spec, &j.Zone,
			&next, &last, &created, &j.Paused); err != nil {
			return nil, err
		}
		j.NextRun, j.LastRun, j.CreatedAt = optMillis(next), optMillis(last), fromMillis(created)
		out = append(out, j)
	}
	return out, rows.Err()
}

func nullMillis(t time.Time) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixMilli(), Valid: true}
}

func optMillis(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return fromMillis(ms)
}

// SessionChat returns the chat a session belongs to: a "channel:chat"
// session is its own, and "cron:<id>" and "subagent:<id>" are those of their
// job and background task (removed ones included). chat is "" for a session
// of no known chat.
func (s *Store) SessionChat(ctx context.Context, name string) (channel, chat string, err error) {
	return chatOf(ctx, s.db, name)
}

// chatOf is SessionChat within q.
func chatOf(ctx context.Context, q rowQuerier, name string) (channel, chat string, err error) {
	sess, err := session.Parse(name)
	if err != nil {
		return "", "", nil
	}
	var table string
	switch sess.Kind {
	case session.KindChat:
		return sess.Channel, sess.Chat, nil
	case session.KindJob:
		table = "jobs"
	case session.KindTask:
		table = "subagents"
	default:
		return "", "", nil
	}
	err = q.QueryRowContext(ctx, `SELECT channel, chat_id FROM `+table+` WHERE id = ?`, sess.ID).Scan(&channel, &chat)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", nil
	}
	if err != nil {
		return "", "", fmt.Errorf("read the chat of %s: %w", name, err)
	}
	return channel, chat, nil
}
