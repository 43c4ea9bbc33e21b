package memory

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"text/template"
)

// The schema's history: NNNN_name.sql files, applied in order, each in its
// own transaction, the last applied number kept in PRAGMA user_version.
// Files are text/template documents rendered with migrationData.
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
		t, err := template.New(e.Name()).Option("missingkey=error").Parse(string(text))
		if err != nil {
			return nil, fmt.Errorf("migration %s: %w", e.Name(), err)
		}
		var b strings.Builder
		if err := t.Execute(&b, data); err != nil {
			return nil, fmt.Errorf("migration %s: %w", e.Name(), err)
		}
		ms = append(ms, migration{version: v, name: e.Name(), sql: b.String()})
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

// migrate applies the migrations the database lacks. Another process may
// migrate at the same time: each step re-reads the version under the write
// lock and skips what is already done.
func (s *Store) migrate(ctx context.Context, fts5 bool) error {
	ms, err := loadMigrations(migrationData{FTS5: fts5})
	if err != nil {
		return err
	}
	current, err := userVersion(ctx, s.db)
	if err != nil {
		return err
	}
	if current > len(ms) {
		return fmt.Errorf("database schema version %d is newer than this program's %d", current, len(ms))
	}
	for _, m := range ms[current:] {
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
func (s *Store) checkVersion(ctx context.Context) error {
	ms, err := loadMigrations(migrationData{})
	if err != nil {
		return err
	}
	v, err := userVersion(ctx, s.db)
	if err != nil {
		return err
	}
	if v != len(ms) {
		return fmt.Errorf("database schema version %d, this program needs %d (open it read-write once to migrate)", v, len(ms))
	}
	return nil
}
