package memory

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ErrNotNanobot is returned for a file that is an SQLite database but not
// one nanobot wrote.
var ErrNotNanobot = errors.New("not a nanobot database")

// Counts are what a database holds, as a backup reports them.
type Counts struct {
	Sessions int64 // distinct sessions with messages
	Messages int64
	Memory   int64 // MEMORY documents (one per scope)
	History  int64 // HISTORY entries
	Jobs     int64 // live scheduled jobs: not removed, with a run to come; see HasJobs
	// EndedJobs are the rows of removed jobs and of one-shot jobs that
	// have run, kept so their turns' usage still counts for their chat.
	EndedJobs int64
	HasJobs   bool // the schema has a jobs table
}

// BackupInfo describes a checked database copy.
type BackupInfo struct {
	Path          string
	Bytes         int64
	Duration      time.Duration // how long the copy and its checks took
	SchemaVersion int
	Counts        Counts
}

// Backup writes a consistent copy of the database at src to dest while other
// connections (the gateway) keep reading and writing it: VACUUM INTO on a
// connection of its own reads one snapshot, so the copy holds exactly the
// transactions committed when it started, compacted, in one self-contained
// file without a WAL. The copy is written next to dest under a temporary
// name, checked with PRAGMA integrity_check, synced and only then renamed to
// dest, so dest is never a partial file. An existing dest is an error.
func Backup(ctx context.Context, src, dest string) (BackupInfo, error) {
	start := time.Now()
	info, err := backup(ctx, src, dest)
	if err != nil {
		return BackupInfo{}, fmt.Errorf("back up %s: %w", src, err)
	}
	info.Duration = time.Since(start)
	return info, nil
}

// Backup writes a checked copy of the store's database to dest; see the
// package-level Backup.
func (s *Store) Backup(ctx context.Context, dest string) (BackupInfo, error) {
	return Backup(ctx, s.path, dest)
}

func backup(ctx context.Context, src, dest string) (BackupInfo, error) {
	src, err := filepath.Abs(src)
	if err != nil {
		return BackupInfo{}, err
	}
	if _, err := os.Stat(src); err != nil {
		return BackupInfo{}, err
	}
	dest, err = filepath.Abs(dest)
	if err != nil {
		return BackupInfo{}, err
	}
	if dest == src {
		return BackupInfo{}, errors.New("the copy would overwrite the database itself")
	}
	if _, err := os.Lstat(dest); err == nil {
		return BackupInfo{}, fmt.Errorf("%s already exists", dest)
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o700); err != nil {
		return BackupInfo{}, err
	}
	tmp, err := tempFile(dest)
	if err != nil {
		return BackupInfo{}, err
	}
	keep := false
	defer func() {
		if !keep {
			os.Remove(tmp)
		}
	}()
	if err := vacuumInto(ctx, src, tmp); err != nil {
		return BackupInfo{}, err
	}
	info, err := Inspect(ctx, tmp)
	if err != nil {
		return BackupInfo{}, fmt.Errorf("check the copy: %w", err)
	}
	if err := syncFile(tmp); err != nil {
		return BackupInfo{}, err
	}
	if err := os.Rename(tmp, dest); err != nil {
		return BackupInfo{}, err
	}
	keep = true
	if err := syncDir(filepath.Dir(dest)); err != nil {
		return BackupInfo{}, err
	}
	info.Path = dest
	return info, nil
}

// tempFile creates an empty private file next to dest (VACUUM INTO accepts
// an empty file, and this way the copy is never readable by others).
func tempFile(dest string) (string, error) {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	tmp := dest + ".tmp-" + hex.EncodeToString(b[:])
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	return tmp, f.Close()
}

// openRaw opens one plain connection to path, without the store's setup or
// migrations.
func openRaw(path string, readOnly bool) (*sql.DB, error) {
	params := url.Values{"_busy_timeout": {fmt.Sprint(busyTimeout.Milliseconds())}}
	if readOnly {
		params.Set("mode", "ro")
	} else {
		params.Set("mode", "rw")
	}
	db, err := sql.Open("sqlite3", dsn(path, params))
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

func vacuumInto(ctx context.Context, src, dest string) error {
	db, err := openRaw(src, true)
	if err != nil {
		return err
	}
	defer db.Close()
	// A plain path: only names starting with "file:" are read as URIs.
	if _, err := db.ExecContext(ctx, `VACUUM INTO ?`, dest); err != nil {
		return fmt.Errorf("copy: %w", err)
	}
	return nil
}

// Inspect checks the database at path without changing it: PRAGMA
// integrity_check must pass, it must be a nanobot database, and not one from
// a newer version. It returns its size, schema version and counts.
func Inspect(ctx context.Context, path string) (BackupInfo, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return BackupInfo{}, err
	}
	db, err := openRaw(path, true)
	if err != nil {
		return BackupInfo{}, err
	}
	defer db.Close()
	if err := integrityCheck(ctx, db); err != nil {
		return BackupInfo{}, err
	}
	v, err := userVersion(ctx, db)
	if err != nil {
		return BackupInfo{}, err
	}
	info := BackupInfo{Path: path, Bytes: fi.Size(), SchemaVersion: v}
	if v == 0 || !hasTable(ctx, db, "messages") || !hasTable(ctx, db, "memory") {
		return BackupInfo{}, fmt.Errorf("%s: %w", path, ErrNotNanobot)
	}
	if latest := SchemaVersion(); v > latest {
		return BackupInfo{}, &SchemaError{Path: path, Database: v, Program: latest}
	}
	info.Counts, err = count(ctx, db)
	if err != nil {
		return BackupInfo{}, err
	}
	return info, nil
}

func integrityCheck(ctx context.Context, db *sql.DB) error {
	rows, err := db.QueryContext(ctx, `PRAGMA integrity_check(20)`)
	if err != nil {
		return fmt.Errorf("integrity check: %w", err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return fmt.Errorf("integrity check: %w", err)
		}
		problems = append(problems, line)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("integrity check: %w", err)
	}
	if len(problems) == 1 && problems[0] == "ok" {
		return nil
	}
	return fmt.Errorf("integrity check failed: %s", strings.Join(problems, "; "))
}

func hasTable(ctx context.Context, db *sql.DB, name string) bool {
	var n int
	err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?`, name).Scan(&n)
	return err == nil && n > 0
}

func count(ctx context.Context, db *sql.DB) (Counts, error) {
	var c Counts
	for _, q := range []struct {
		sql string
		n   *int64
	}{
		{`SELECT count(DISTINCT session) FROM messages`, &c.Sessions},
		{`SELECT count(*) FROM messages`, &c.Messages},
		{`SELECT count(*) FROM memory`, &c.Memory},
		{`SELECT count(*) FROM history`, &c.History},
	} {
		if err := db.QueryRowContext(ctx, q.sql).Scan(q.n); err != nil {
			return Counts{}, fmt.Errorf("count: %w", err)
		}
	}
	// Scheduled jobs arrive with a later schema; older databases have none.
	if hasTable(ctx, db, "jobs") {
		c.HasJobs = true
		if err := db.QueryRowContext(ctx, `SELECT
			count(*) FILTER (WHERE removed_at IS NULL AND next_run IS NOT NULL),
			count(*) FILTER (WHERE removed_at IS NOT NULL OR next_run IS NULL)
			FROM jobs`).Scan(&c.Jobs, &c.EndedJobs); err != nil {
			return Counts{}, fmt.Errorf("count jobs: %w", err)
		}
	}
	return c, nil
}

func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return err
	}
	return nil
}
