// Package memory is nanobot's durable state in one SQLite file: the messages
// of every session, long-term MEMORY and HISTORY, the inbox and outbox that
// make the daemon lose nothing across crashes, the audit trail of tool calls
// and token usage.
//
// The store keeps exactly what it is given. Callers redact secrets before they
// hand text over; the store adds nothing of its own (no DSN, no credentials).
//
// Times are stored as unix milliseconds and returned in UTC.
package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mattn/go-sqlite3" // registers the "sqlite3" driver

	"github.com/nanobot-go/nanobot/turns"
)

// ErrNotFound is returned when a record to update does not exist.
var ErrNotFound = errors.New("not found")

const (
	// busyTimeout is how long a statement waits for another process (a CLI
	// command next to the daemon) to release the write lock.
	busyTimeout = 5 * time.Second
	// pingTimeout bounds Ping, so a locked or broken database reports
	// unready quickly instead of hanging a health check.
	pingTimeout = 2 * time.Second
	// maxConns lets reads run beside the single writer (WAL).
	maxConns = 4
)

// Store is nanobot's database. It is safe for concurrent use.
type Store struct {
	db   *sql.DB
	path string // absolute
	// ping is a separate pool for the write probe, so the probe never queues
	// behind the store's own connections.
	ping *sql.DB
	// writer serializes write transactions inside the process: they queue
	// here (and honour ctx) instead of spinning in SQLite's busy handler.
	writer writeLock
	// fts5 reports that history_fts is an FTS5 table (FTS4 otherwise).
	fts5 bool
}

type options struct {
	readOnly  bool
	forceFTS4 bool // tests: exercise the FTS4 fallback in an FTS5 build
}

// Open opens (creating it if needed) the database at path, with its
// directory, in WAL mode, and brings its schema up to date.
func Open(ctx context.Context, path string) (*Store, error) {
	return open(ctx, path, options{})
}

// OpenReadOnly opens an existing, up-to-date database for inspection (the
// CLI next to a running daemon). Every write method fails.
func OpenReadOnly(ctx context.Context, path string) (*Store, error) {
	return open(ctx, path, options{readOnly: true})
}

func open(ctx context.Context, path string, opt options) (*Store, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	if opt.readOnly {
		if _, err := os.Stat(abs); err != nil {
			return nil, fmt.Errorf("open database: %w", err)
		}
	} else if err := createFile(abs); err != nil {
		return nil, fmt.Errorf("open database: %w", classify(abs, err))
	}

	params := url.Values{
		"_busy_timeout":    {fmt.Sprint(busyTimeout.Milliseconds())},
		"_foreign_keys":    {"1"},
		"_txlock":          {"immediate"},
		"_stmt_cache_size": {"32"},
	}
	if opt.readOnly {
		params.Set("mode", "ro")
		params.Set("_query_only", "1")
		// A reader in a directory it cannot write (a read-only mount, a
		// copy owned by the daemon's user) cannot create the WAL index
		// SQLite needs even to read; with no log to replay the file holds
		// everything, and an immutable open reads it as it is.
		if !writable(filepath.Dir(abs)) && !walInUse(abs) {
			params.Set("immutable", "1")
		}
	} else {
		params.Set("mode", "rw")
		params.Set("_journal_mode", "WAL")
		// An inbound update is acknowledged once it is committed, so a
		// commit must survive a power cut, not only a crash: sync the WAL
		// on every commit (NORMAL would not).
		params.Set("_synchronous", "FULL")
	}
	db, err := sql.Open("sqlite3", dsn(abs, params))
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	db.SetMaxOpenConns(maxConns)
	db.SetMaxIdleConns(maxConns)

	s := &Store{db: db, path: abs}
	if err := s.init(ctx, abs, opt); err != nil {
		s.Close()
		return nil, fmt.Errorf("open database: %w", classify(abs, err))
	}
	return s, nil
}

// createFile creates the database file and its directory readable by the
// owner only: conversations are private. SQLite gives the -wal and -shm
// files the same mode.
func createFile(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	return f.Close()
}

// dsn builds a file: URI, so any byte of the path ('?', '#', '%') is safe.
func dsn(path string, params url.Values) string {
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + params.Encode()
}

func (s *Store) init(ctx context.Context, path string, opt options) error {
	fts5Available := false
	if !opt.forceFTS4 {
		if err := s.db.QueryRowContext(ctx, `SELECT sqlite_compileoption_used('ENABLE_FTS5')`).Scan(&fts5Available); err != nil {
			return fmt.Errorf("probe fts5: %w", err)
		}
	}
	if opt.readOnly {
		if err := s.checkVersion(ctx, path); err != nil {
			return err
		}
	} else if err := s.migrate(ctx, path, fts5Available); err != nil {
		return err
	}
	var ddl string
	if err := s.db.QueryRowContext(ctx,
		`SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = 'history_fts'`).Scan(&ddl); err != nil {
		return fmt.Errorf("inspect search index: %w", err)
	}
	s.fts5 = strings.Contains(strings.ToLower(ddl), "fts5")
	if s.fts5 && !fts5Available && !opt.forceFTS4 {
		return errors.New("the history index uses FTS5, which this build lacks (build with -tags sqlite_fts5)")
	}
	if opt.readOnly {
		return nil
	}

	ping, err := sql.Open("sqlite3", dsn(path, url.Values{
		"mode":          {"rw"},
		"_busy_timeout": {fmt.Sprint((pingTimeout / 2).Milliseconds())},
		"_txlock":       {"immediate"},
	}))
	if err != nil {
		return fmt.Errorf("open probe connection: %w", err)
	}
	// A fresh connection per probe notices a database file that was removed,
	// replaced or made unreadable since the store opened it.
	ping.SetMaxOpenConns(1)
	ping.SetMaxIdleConns(0)
	s.ping = ping
	return nil
}

// ShrinkMemory closes the pool's idle connections, for a daemon handing
// memory back while it waits: SQLite frees each one's page cache, schema
// and prepared statements, and the next query opens a connection afresh
// (about a millisecond). Connections in use are left alone.
func (s *Store) ShrinkMemory(context.Context) {
	s.db.SetMaxIdleConns(0)
	s.db.SetMaxIdleConns(maxConns)
}

// Close closes the database. Pending writes have completed when it returns.
func (s *Store) Close() error {
	var errs []error
	if s.ping != nil {
		errs = append(errs, s.ping.Close())
	}
	errs = append(errs, s.db.Close())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close database: %w", err)
	}
	return nil
}

// Ping proves the database is writable: it commits a write to a heartbeat
// row through its own connection within two seconds. A database locked by
// another process, removed, read-only or full makes it fail.
func (s *Store) Ping(ctx context.Context) error {
	if s.ping == nil {
		return errors.New("ping database: opened read-only")
	}
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	err := func() error {
		tx, err := s.ping.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if _, err := tx.ExecContext(ctx,
			`INSERT INTO heartbeat (id, at) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET at = excluded.at`,
			millis(time.Now())); err != nil {
			return err
		}
		return tx.Commit()
	}()
	if err != nil {
		return fmt.Errorf("ping database: %w", err)
	}
	return nil
}

// write runs fn in one write transaction (BEGIN IMMEDIATE), committed if fn
// returns nil and rolled back otherwise.
func (s *Store) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return s.writeTx(ctx, false, fn)
}

// writeTx is write; an urgent one goes before the queued others.
func (s *Store) writeTx(ctx context.Context, urgent bool, fn func(tx *sql.Tx) error) error {
	if err := s.writer.lock(ctx, urgent); err != nil {
		return err
	}
	defer s.writer.unlock()

	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return storageError(err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return storageError(err)
	}
	return storageError(tx.Commit())
}

// storageError marks a write refused because the disk is full, so callers
// far from SQLite can wait for space instead of giving up.
func storageError(err error) error {
	var se sqlite3.Error
	if errors.As(err, &se) && se.Code == sqlite3.ErrFull {
		return fmt.Errorf("%w: %w", turns.ErrStorageFull, err)
	}
	return err
}

// millis converts t for storage; the zero time means now.
func millis(t time.Time) int64 {
	if t.IsZero() {
		t = time.Now()
	}
	return t.UnixMilli()
}

func fromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// placeholders returns "?, ?, ?" for n arguments.
func placeholders(n int) string {
	if n <= 0 {
		return ""
	}
	return strings.Repeat("?, ", n-1) + "?"
}

func int64Args(ids []int64) []any {
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	return args
}

// FTS5 reports whether the linked SQLite library has FTS5 (builds with
// -tags sqlite_fts5); without it HISTORY search falls back to FTS4.
func FTS5() bool {
	db, err := sql.Open("sqlite3", ":memory:")
	if err != nil {
		return false
	}
	defer db.Close()
	var ok bool
	if err := db.QueryRow(`SELECT sqlite_compileoption_used('ENABLE_FTS5')`).Scan(&ok); err != nil {
		return false
	}
	return ok
}
