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
	"syscall"

	"github.com/mattn/go-sqlite3"
)

// DamagedError reports a database SQLite cannot use as one: a file that is
// not a database at all, or one with damaged pages. Restarting cannot help;
// restoring a backup can.
type DamagedError struct {
	Path     string   // the database file
	Problems []string // what PRAGMA quick_check found, when it ran
	Err      error    // SQLite's error, when opening failed
}

func (e *DamagedError) Error() string {
	detail := ""
	var se sqlite3.Error
	switch {
	case errors.As(e.Err, &se):
		detail = se.Error()
	case e.Err != nil:
		detail = e.Err.Error()
	case len(e.Problems) > 0:
		detail = "quick_check: " + e.Problems[0]
		if n := len(e.Problems) - 1; n > 0 {
			detail += fmt.Sprintf(" (and %d more problems)", n)
		}
	}
	return fmt.Sprintf("the database %s is damaged (%s)", e.Path, detail)
}

func (e *DamagedError) Unwrap() error { return e.Err }

// ReadOnlyError reports a data directory (or database file) this process
// cannot write: a read-only mount, or one owned by another user. Reading
// commands still work; the gateway and every command that writes cannot.
type ReadOnlyError struct {
	Path string // the directory or file that refused the write
	Err  error
}

func (e *ReadOnlyError) Error() string {
	return fmt.Sprintf("%s is not writable by this process (uid %d): %v", e.Path, os.Getuid(), e.Err)
}

func (e *ReadOnlyError) Unwrap() error { return e.Err }

// classify turns SQLite's and the file system's errors about the database
// at path into a *DamagedError or a *ReadOnlyError where they are one.
func classify(path string, err error) error {
	if err == nil {
		return nil
	}
	var se sqlite3.Error
	if errors.As(err, &se) {
		switch se.Code {
		case sqlite3.ErrNotADB, sqlite3.ErrCorrupt:
			return &DamagedError{Path: path, Err: err}
		case sqlite3.ErrReadonly:
			return &ReadOnlyError{Path: filepath.Dir(path), Err: err}
		}
	}
	if errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EROFS) || errors.Is(err, syscall.EPERM) {
		// The file when it exists (made read-only itself), else the
		// directory that cannot take it.
		where := path
		var pe *os.PathError
		if errors.As(err, &pe) {
			where = pe.Path
		}
		if _, serr := os.Stat(where); serr != nil {
			where = filepath.Dir(where)
		}
		return &ReadOnlyError{Path: where, Err: err}
	}
	return err
}

// writable reports whether this process may create files in dir.
func writable(dir string) bool {
	return syscall.Access(dir, 2 /* W_OK */) == nil
}

// walInUse reports a write-ahead log with frames next to the database: a
// reader must then see it, which an immutable open would not.
func walInUse(path string) bool {
	fi, err := os.Stat(path + "-wal")
	return err == nil && fi.Size() > 0
}

// QuickCheck runs PRAGMA quick_check, which reads every page of the
// database and checks its structure (not the order of index entries, which
// integrity_check also checks at several times the cost). It returns nil
// for a sound database and a *DamagedError listing what it found
// otherwise. Its cost grows with the file: see BenchmarkQuickCheck.
//
// The check runs on a connection of its own, opened for it: the pool's
// connections may hold the pages they read before in their cache and would
// not see damage done to the file since.
func (s *Store) QuickCheck(ctx context.Context) error {
	db, err := sql.Open("sqlite3", dsn(s.path, url.Values{
		"mode":          {"ro"},
		"_busy_timeout": {fmt.Sprint(busyTimeout.Milliseconds())},
	}))
	if err != nil {
		return fmt.Errorf("quick_check: %w", err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	rows, err := db.QueryContext(ctx, `PRAGMA quick_check(20)`)
	if err != nil {
		return fmt.Errorf("quick_check: %w", classify(s.path, err))
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return fmt.Errorf("quick_check: %w", classify(s.path, err))
		}
		if line != "ok" {
			problems = append(problems, strings.TrimSpace(line))
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("quick_check: %w", classify(s.path, err))
	}
	if len(problems) > 0 {
		return &DamagedError{Path: s.path, Problems: problems}
	}
	return nil
}

// Fresh reports that there is no database at path yet (no file, or an
// empty one): opening it would start an empty database.
func Fresh(path string) bool {
	fi, err := os.Stat(path)
	return errors.Is(err, os.ErrNotExist) || err == nil && fi.Size() == 0
}

// LitestreamDir is Litestream's state directory of the database at path
// ("" when there is none): it exists once Litestream has replicated the
// database, and survives the database's loss.
func LitestreamDir(path string) string {
	dir := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+"-litestream")
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return dir
	}
	return ""
}
