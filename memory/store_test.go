package memory

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/agent"
)

func dbPath(tb testing.TB) string {
	tb.Helper()
	return filepath.Join(tb.TempDir(), "nanobot.db")
}

func openAt(t *testing.T, path string, opt options) *Store {
	t.Helper()
	s, err := open(t.Context(), path, opt)
	if err != nil {
		t.Fatalf("open(%q): %v", path, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func newStore(t *testing.T) *Store {
	t.Helper()
	return openAt(t, dbPath(t), options{})
}

// rawDB opens a second, independent handle on the same file, as another
// process would.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=100")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

func TestOpenMigratesOnce(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "nested", "dir", "nanobot.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if err := s.SetMemory(ctx, GlobalScope, "likes tea"); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendHistory(ctx, GlobalScope, time.Time{}, "first entry"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	for i := range 3 {
		s := openAt(t, path, options{})
		v, err := userVersion(ctx, s.db)
		if err != nil {
			t.Fatal(err)
		}
		ms, err := loadMigrations(migrationData{})
		if err != nil {
			t.Fatal(err)
		}
		if v != len(ms) {
			t.Errorf("open #%d: user_version = %d, want %d", i, v, len(ms))
		}
		if doc, err := s.Memory(ctx, GlobalScope); err != nil || doc != "likes tea" {
			t.Errorf("open #%d: Memory = %q, %v; want %q", i, doc, err, "likes tea")
		}
		if got, err := s.SearchHistory(ctx, GlobalScope, "entry", 0); err != nil || len(got) != 1 {
			t.Errorf("open #%d: SearchHistory = %v, %v; want one entry", i, got, err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestOpenTwoStoresOnOneFile(t *testing.T) {
	path := dbPath(t)
	a := openAt(t, path, options{})
	b := openAt(t, path, options{})
	if err := a.Append(t.Context(), "s", agent.Message{Role: agent.RoleUser, Content: "hi"}); err != nil {
		t.Fatal(err)
	}
	got, err := b.Recent(t.Context(), "s", 10)
	if err != nil || len(got) != 1 {
		t.Fatalf("Recent through the second store = %v, %v; want the message", got, err)
	}
}

func TestOpenRejectsNewerSchema(t *testing.T) {
	path := dbPath(t)
	openAt(t, path, options{})
	if _, err := rawDB(t, path).Exec(`PRAGMA user_version = 999`); err != nil {
		t.Fatal(err)
	}
	if s2, err := Open(t.Context(), path); err == nil {
		s2.Close()
		t.Fatal("Open of a database from a newer program succeeded")
	} else if !strings.Contains(err.Error(), "newer") {
		t.Errorf("Open error = %v, want it to say the schema is newer", err)
	}
}

func TestOpenCreatesPrivateFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "odd ?#% name", "nanobot.db")
	openAt(t, path, options{})
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("database not created at the path as given: %v", err)
	}
	if mode := fi.Mode().Perm(); mode != 0o600 {
		t.Errorf("database mode = %v, want 0600", mode)
	}
	var journal string
	s := openAt(t, path, options{})
	if err := s.db.QueryRow(`PRAGMA journal_mode`).Scan(&journal); err != nil || journal != "wal" {
		t.Errorf("journal_mode = %q, %v; want wal", journal, err)
	}
	var fk int
	if err := s.db.QueryRow(`PRAGMA foreign_keys`).Scan(&fk); err != nil || fk != 1 {
		t.Errorf("foreign_keys = %d, %v; want 1", fk, err)
	}
}

func TestOpenReadOnly(t *testing.T) {
	ctx := t.Context()
	path := dbPath(t)
	rw := openAt(t, path, options{})
	if err := rw.SetMemory(ctx, GlobalScope, "doc"); err != nil {
		t.Fatal(err)
	}
	ro, err := OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatalf("OpenReadOnly: %v", err)
	}
	defer ro.Close()
	if doc, err := ro.Memory(ctx, GlobalScope); err != nil || doc != "doc" {
		t.Errorf("Memory = %q, %v; want %q", doc, err, "doc")
	}
	if err := ro.SetMemory(ctx, GlobalScope, "changed"); err == nil {
		t.Error("SetMemory through a read-only store succeeded")
	}
	if err := ro.Ping(ctx); err == nil {
		t.Error("Ping of a read-only store succeeded")
	}
	if _, err := OpenReadOnly(ctx, filepath.Join(t.TempDir(), "missing.db")); err == nil {
		t.Error("OpenReadOnly of a missing file succeeded")
	}
}

func TestPing(t *testing.T) {
	ctx := t.Context()
	path := dbPath(t)
	s := openAt(t, path, options{})
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("Ping of a fresh store: %v", err)
	}

	// Another process holds the write lock.
	conn, err := rawDB(t, path).Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `BEGIN EXCLUSIVE`); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := s.Ping(ctx); err == nil {
		t.Error("Ping succeeded while another connection holds an exclusive lock")
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("Ping took %v to fail, want about %v", d, pingTimeout)
	}
	// Reads still work meanwhile (WAL).
	if _, err := s.Memory(ctx, GlobalScope); err != nil {
		t.Errorf("Memory while locked: %v", err)
	}

	if _, err := conn.ExecContext(ctx, `COMMIT`); err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(ctx); err != nil {
		t.Errorf("Ping after the lock was released: %v", err)
	}
}

func TestPingFailsWhenFileRemoved(t *testing.T) {
	path := dbPath(t)
	s := openAt(t, path, options{})
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(t.Context()); err == nil {
		t.Error("Ping succeeded after the database file was removed")
	}
	if _, err := os.Stat(path); err == nil {
		t.Error("Ping created a new database file")
	}
}

func TestConcurrentAppends(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	const writers, perWriter = 8, 40
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			session := fmt.Sprintf("chat:%d", w%2) // two sessions, four writers each
			for i := range perWriter {
				m := agent.Message{Role: agent.RoleUser, Content: fmt.Sprintf("w%d-%03d", w, i)}
				if err := s.Append(ctx, session, m); err != nil {
					errs <- err
					return
				}
				if _, err := s.Recent(ctx, session, 5); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent use: %v", err)
	}

	for _, session := range []string{"chat:0", "chat:1"} {
		msgs, err := s.LiveMessages(ctx, session, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) != writers/2*perWriter {
			t.Fatalf("%s: %d messages, want %d", session, len(msgs), writers/2*perWriter)
		}
		// Each writer's messages keep their order.
		last := map[string]string{}
		for _, m := range msgs {
			w, _, _ := strings.Cut(m.Content, "-")
			if m.Content <= last[w] {
				t.Errorf("%s: %q stored after %q", session, m.Content, last[w])
			}
			last[w] = m.Content
		}
	}
}

// ShrinkMemory closes the idle connections, and the store carries on with
// new ones, with the connection settings of the pool (WAL, foreign keys).
func TestShrinkMemoryClosesIdleConnections(t *testing.T) {
	ctx := t.Context()
	s := openAt(t, dbPath(t), options{})
	if err := s.SetMemory(ctx, GlobalScope, "likes tea"); err != nil {
		t.Fatal(err)
	}
	if s.db.Stats().Idle == 0 {
		t.Fatal("no idle connection after a write: the test would prove nothing")
	}
	s.ShrinkMemory(ctx)
	if idle := s.db.Stats().Idle; idle != 0 {
		t.Errorf("after ShrinkMemory: %d idle connections, want 0", idle)
	}
	if doc, err := s.Memory(ctx, GlobalScope); err != nil || doc != "likes tea" {
		t.Errorf("Memory = %q, %v; want %q", doc, err, "likes tea")
	}
	var mode string
	var fk int
	if err := s.db.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode on a new connection = %q, %v; want wal", mode, err)
	}
	if err := s.db.QueryRowContext(ctx, `PRAGMA foreign_keys`).Scan(&fk); err != nil || fk != 1 {
		t.Errorf("foreign_keys on a new connection = %d, %v; want 1", fk, err)
	}
	if err := s.SetMemory(ctx, GlobalScope, "likes green tea"); err != nil {
		t.Errorf("write after ShrinkMemory: %v", err)
	}
}
