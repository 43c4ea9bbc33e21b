package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// lastSeenEvery is how stale a web session's last_seen may get: a request
// writes it at most this often, so reads stay reads.
const lastSeenEvery = time.Minute

// WebSession is a signed-in browser of the web console. Its secret is not
// kept: only the SHA-256 of it, to find the session by.
type WebSession struct {
	ID       string
	Agent    string // the browser's User-Agent
	Created  time.Time
	LastSeen time.Time
	Expires  time.Time
}

// AddWebLogin stores a one-time sign-in token by its hash, valid until
// expires, and drops the logins that have expired.
func (s *Store) AddWebLogin(ctx context.Context, hash string, expires time.Time) error {
	if hash == "" || expires.IsZero() {
		return errors.New("add web login: hash and expiry are required")
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM web_logins WHERE expires <= ?`, millis(time.Now())); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO web_logins (hash, expires) VALUES (?, ?)`, hash, expires.UnixMilli())
		return err
	})
	if err != nil {
		return fmt.Errorf("add web login: %w", err)
	}
	return nil
}

// TakeWebLogin uses up the sign-in token with this hash: it is deleted,
// and ok is true only if it existed and had not expired at now. Of callers
// racing for one token, one at most gets true.
func (s *Store) TakeWebLogin(ctx context.Context, hash string, now time.Time) (ok bool, err error) {
	err = s.write(ctx, func(tx *sql.Tx) error {
		var expires int64
		err := tx.QueryRowContext(ctx, `SELECT expires FROM web_logins WHERE hash = ?`, hash).Scan(&expires)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM web_logins WHERE hash = ?`, hash); err != nil {
			return err
		}
		ok = expires > millis(now)
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("take web login: %w", err)
	}
	return ok, nil
}

// AddWebSession stores a session found by the hash of its secret, and
// drops the sessions that have expired. A zero Created is now; a zero
// LastSeen is Created.
func (s *Store) AddWebSession(ctx context.Context, ws WebSession, hash string) error {
	if ws.ID == "" || hash == "" || ws.Expires.IsZero() {
		return errors.New("add web session: id, hash and expiry are required")
	}
	created := millis(ws.Created)
	lastSeen := created
	if !ws.LastSeen.IsZero() {
		lastSeen = ws.LastSeen.UnixMilli()
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM web_sessions WHERE expires <= ?`, millis(time.Now())); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO web_sessions (id, hash, agent, created, last_seen, expires)
			VALUES (?, ?, ?, ?, ?, ?)`, ws.ID, hash, ws.Agent, created, lastSeen, ws.Expires.UnixMilli())
		return err
	})
	if err != nil {
		return fmt.Errorf("add web session: %w", err)
	}
	return nil
}

const webSessionColumns = `id, agent, created, last_seen, expires`

// WebSessionByHash returns the session whose secret has this hash; ok is
// false when there is none or it has expired at now. It records now as
// the session's last use, at most once a minute.
func (s *Store) WebSessionByHash(ctx context.Context, hash string, now time.Time) (WebSession, bool, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+webSessionColumns+` FROM web_sessions
		WHERE hash = ? AND expires > ?`, hash, millis(now))
	if err != nil {
		return WebSession{}, false, fmt.Errorf("read web session: %w", err)
	}
	list, err := scanWebSessions(rows)
	if err != nil {
		return WebSession{}, false, fmt.Errorf("read web session: %w", err)
	}
	if len(list) == 0 {
		return WebSession{}, false, nil
	}
	ws := list[0]
	if now.Sub(ws.LastSeen) < lastSeenEvery {
		return ws, true, nil
	}
	seen := millis(now)
	err = s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE web_sessions SET last_seen = ?1 WHERE id = ?2 AND last_seen < ?1`, seen, ws.ID)
		return err
	})
	if err != nil {
		return WebSession{}, false, fmt.Errorf("touch web session: %w", err)
	}
	ws.LastSeen = fromMillis(seen)
	return ws, true, nil
}

// WebSessions returns the sessions unexpired at now, newest first.
func (s *Store) WebSessions(ctx context.Context, now time.Time) ([]WebSession, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+webSessionColumns+` FROM web_sessions
		WHERE expires > ? ORDER BY created DESC, id`, millis(now))
	if err != nil {
		return nil, fmt.Errorf("read web sessions: %w", err)
	}
	list, err := scanWebSessions(rows)
	if err != nil {
		return nil, fmt.Errorf("read web sessions: %w", err)
	}
	return list, nil
}

// RevokeWebSession ends a session; false when there is no such session.
func (s *Store) RevokeWebSession(ctx context.Context, id string) (bool, error) {
	var revoked bool
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM web_sessions WHERE id = ?`, id)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		revoked = n > 0
		return err
	})
	if err != nil {
		return false, fmt.Errorf("revoke web session: %w", err)
	}
	return revoked, nil
}

func scanWebSessions(rows *sql.Rows) ([]WebSession, error) {
	defer rows.Close()
	var out []WebSession
	for rows.Next() {
		var ws WebSession
		var created, seen, expires int64
		if err := rows.Scan(&ws.ID, &ws.Agent, &created, &seen, &expires); err != nil {
			return nil, err
		}
		ws.Created, ws.LastSeen, ws.Expires = fromMillis(created), fromMillis(seen), fromMillis(expires)
		out = append(out, ws)
	}
	return out, rows.Err()
}
