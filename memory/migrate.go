package memory

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
)

// The schema's history: NNNN_name.sql files, applied in order, each in its
// own transaction, the last applied number kept in PRAGMA user_version.
// A file may hold parts for one kind of SQLite library only, between
// whole-line directives: "-- #if fts5", "-- #else", "-- #endif" (see render).
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

type migrationData struct {
	FTS5 bool // the SQLite library has FTS5
}

func (d migrationData) conditions() map[string]bool {
	return map[string]bool{"fts5": d.FTS5}
}

// render keeps the lines of a migration that apply to conds. A line that is
// exactly "-- #if NAME", "-- #else" or "-- #endif" (spaces around it aside)
// opens, flips or closes a part kept only when conds[NAME] holds. Parts do
// not nest, and an unknown NAME is an error. (A plain preprocessor rather
// than text/template: that package's reflection keeps every exported method
// of the program in the binary, about 3 MB of it.)
func render(text string, conds map[string]bool) (string, error) {
	var b strings.Builder
	b.Grow(len(text))
	open, keep, sawElse := false, true, false
	for n, line := range strings.SplitAfter(text, "\n") {
		directive, ok := strings.CutPrefix(strings.TrimSpace(line), "-- #")
		word, name, _ := strings.Cut(directive, " ")
		name = strings.TrimSpace(name)
		switch {
		case !ok:
			if keep {
				b.WriteString(line)
			}
		case word == "if":
			v, known := conds[name]
			switch {
			case open:
				return "", fmt.Errorf("line %d: #if inside another #if", n+1)
			case !known:
				return "", fmt.Errorf("line %d: unknown condition %q", n+1, name)
			}
			open, keep, sawElse = true, v, false
		case word == "else" && name == "" && open && !sawElse:
			keep, sawElse = !keep, true
		case word == "endif" && name == "" && open:
			open, keep = false, true
		default:
			return "", fmt.Errorf("line %d: misplaced or unknown directive %q", n+1, strings.TrimSpace(line))
		}
	}
	if open {
		return "", fmt.Errorf("#if without its #endif")
	}
	return b.String(), nil
}

func loadMigrations(data migrationData) ([]migration, error) {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	ms := make([]migration, 0, len(entries))
	for i, e := range entries {
		prefix, _, _ := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(prefix)
		if err != nil || v != i+1 {
			return nil, fmt.Errorf("migration %s: want number %04d", e.Name(), i+1)
		}
		text, err := migrationFiles.ReadFile("migrations/" + e.Name())
		if err != nil {
			return nil, err
		}
		sql, err := render(string(text), data.conditions())
		if err != nil {
			return nil, fmt.Errorf("migration %s: %w", e.Name(), err)
		}
		ms = append(ms, migration{version: v, name: e.Name(), sql: sql})
	}
	return ms, nil
}

// rowQuerier is what *sql.DB and *sql.Tx share for single-row reads.
type rowQuerier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func userVersion(ctx context.Context, q rowQuerier) (int, error) {
	var v int
	if err := q.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return v, nil
}

// SchemaError reports a database whose schema this program cannot use: one
// written by a newer version (migrations only go forward, so an older binary
// must not touch it), or, for a read-only open, one not yet migrated.
type SchemaError struct {
	Path     string
	Database int // the highest migration recorded in the database
	Program  int // the highest migration this program knows
}

func (e *SchemaError) Error() string {
	if e.Database > e.Program {
		return fmt.Sprintf("the database %s was written by a newer nanobot (schema version %d; this version knows up to %d): "+
			"run the newer version again, or restore a backup this version made (nanobot restore FILE)", e.Path, e.Database, e.Program)
	}
	return fmt.Sprintf("the database %s has schema version %d, this program needs %d (open it read-write once to migrate)",
		e.Path, e.Database, e.Program)
}

// Newer reports that the database comes from a newer program.
func (e *SchemaError) Newer() bool { return e.Database > e.Program }

// SchemaVersion is the highest schema version this program knows.
func SchemaVersion() int {
	ms, err := loadMigrations(migrationData{})
	if err != nil || len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].version
}

// migrate applies the migrations the database lacks.
func (s *Store) migrate(ctx context.Context, path string, fts5 bool) error {
	ms, err := loadMigrations(migrationData{FTS5: fts5})
	if err != nil {
		return err
	}
	return s.apply(ctx, path, ms)
}

// apply runs the migrations of ms newer than the database, each in its own
// write transaction with the version bump, so a failing step leaves the
// database as the previous step left it. There are no down migrations: a
// database newer than the program is refused. Another process may migrate
// at the same time: each step re-reads the version under the write lock and
// skips what is already done. (Statements that cannot run in a transaction,
// such as VACUUM or PRAGMA journal_mode, do not belong in a migration.)
func (s *Store) apply(ctx context.Context, path string, ms []migration) error {
	latest := 0
	if len(ms) > 0 {
		latest = ms[len(ms)-1].version
	}
	current, err := userVersion(ctx, s.db)
	if err != nil {
		return err
	}
	if current > latest {
		return &SchemaError{Path: path, Database: current, Program: latest}
	}
	for _, m := range ms {
		if m.version <= current {
			continue
		}
		err := s.write(ctx, func(tx *sql.Tx) error {
			v, err := userVersion(ctx, tx)
			if err != nil || v >= m.version {
				return err
			}
			if _, err := tx.ExecContext(ctx, m.sql); err != nil {
				return err
			}
			_, err = tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, m.version))
			return err
		})
		if err != nil {
			return fmt.Errorf("migrate %s: %w", m.name, err)
		}
	}
	return nil
}

// checkVersion refuses a database whose schema this program does not match.
func (s *Store) checkVersion(ctx context.Context, path string) error {
	v, err := userVersion(ctx, s.db)
	if err != nil {
		return err
	}
	if want := SchemaVersion(); v != want {
		return &SchemaError{Path: path, Database: v, Program: want}
	}
	return nil
}
