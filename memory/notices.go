package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// noticeRetention is how long a notice is remembered at most: older ones
// are dropped, so strangers cannot grow the table without bound.
const noticeRetention = 30 * 24 * time.Hour

// ClaimNotice reports whether the notice key may be given now: it was not
// given within period (0: ever, until forgotten). A true answer records it,
// in one transaction, so across restarts and concurrent callers a notice is
// given once per period.
func (s *Store) ClaimNotice(ctx context.Context, key string, period time.Duration) (bool, error) {
	now := time.Now()
	var claimed bool
	err := s.write(ctx, func(tx *sql.Tx) error {
		var at int64
		err := tx.QueryRowContext(ctx, `SELECT at FROM notices WHERE key = ?`, key).Scan(&at)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return err
		case period <= 0 || now.Sub(time.UnixMilli(at)) < period:
			return nil
		}
		claimed = true
		if _, err := tx.ExecContext(ctx, `DELETE FROM notices WHERE at < ?`, now.Add(-noticeRetention).UnixMilli()); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO notices (key, at) VALUES (?, ?)
			ON CONFLICT (key) DO UPDATE SET at = excluded.at`, key, now.UnixMilli())
		return err
	})
	if err != nil {
		return false, fmt.Errorf("claim notice: %w", err)
	}
	return claimed, nil
}

// ForgetNotice lets the notice key be given again (what it warned of is
// over).
func (s *Store) ForgetNotice(ctx context.Context, key string) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM notices WHERE key = ?`, key)
		return err
	})
	if err != nil {
		return fmt.Errorf("forget notice: %w", err)
	}
	return nil
}
