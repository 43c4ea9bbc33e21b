package memory

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/agent"
)

// fill writes sessions messages, a MEMORY document and a HISTORY entry.
func fill(t *testing.T, s *Store, sessions, perSession int) {
	t.Helper()
	ctx := t.Context()
	for i := range sessions {
		var msgs []agent.Message
		for j := range perSession {
			msgs = append(msgs, user(fmt.Sprintf("s%d m%d", i, j)))
		}
		if err := s.Append(ctx, fmt.Sprintf("telegram:%d", i), msgs...); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetMemory(ctx, GlobalScope, "- likes tea"); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendHistory(ctx, GlobalScope, time.Time{}, "talked about tea"); err != nil {
		t.Fatal(err)
	}
}

// integrity runs PRAGMA integrity_check on path through a handle of its own.
func integrity(t *testing.T, path string) string {
	t.Helper()
	var res string
	if err := rawDB(t, path).QueryRow(`PRAGMA integrity_check`).Scan(&res); err != nil {
		t.Fatalf("integrity_check %s: %v", path, err)
	}
	return res
}

func TestBackupCopiesAndCounts(t *testing.T) {
	s := newStore(t)
	fill(t, s, 3, 4)
	dest := filepath.Join(t.TempDir(), "copies", "nanobot-1.db")
	info, err := s.Backup(t.Context(), dest)
	if err != nil {
		t.Fatalf("Backup: %v", err)
	}
	want := Counts{Sessions: 3, Messages: 12, Memory: 1, History: 1, HasJobs: true}
	if info.Counts != want || info.Path != dest || info.SchemaVersion != SchemaVersion() || info.Bytes == 0 {
		t.Errorf("Backup = %+v, want counts %+v, path %s, schema %d", info, want, dest, SchemaVersion())
	}
	if got := integrity(t, dest); got != "ok" {
		t.Errorf("integrity_check of the copy = %q", got)
	}
	fi, err := os.Stat(dest)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 || fi.Size() != info.Bytes {
		t.Errorf("copy mode %v size %d, want 0600 and %d", fi.Mode().Perm(), fi.Size(), info.Bytes)
	}
	if leftovers, _ := filepath.Glob(dest + ".tmp-*"); len(leftovers) != 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
	// The copy opens as a store of the same schema and content.
	c := openAt(t, dest, options{readOnly: true})
	msgs, err := c.Recent(t.Context(), "telegram:2", 10)
	if err != nil || len(msgs) != 4 || msgs[3].Content != "s2 m3" {
		t.Errorf("Recent in the copy = %v, %v", msgs, err)
	}

	if _, err := s.Backup(t.Context(), dest); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("Backup over an existing file = %v, want a refusal", err)
	}
	if _, err := Backup(t.Context(), s.path, s.path); err == nil {
		t.Error("Backup onto the database itself succeeded")
	}
}

// A backup taken while another goroutine keeps writing holds every message
// committed before it started and passes the integrity check.
func TestBackupWhileWriting(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	fill(t, s, 1, 10)

	var mu sync.Mutex
	committed := 0
	stop, warm := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	var warmOnce sync.Once
	go func() {
		defer wg.Done()
		defer warmOnce.Do(func() { close(warm) })
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := s.Append(context.WithoutCancel(ctx), "telegram:busy", user(fmt.Sprintf("busy %d", i)), assistant("ok")); err != nil {
				t.Errorf("Append: %v", err)
				return
			}
			mu.Lock()
			committed = i + 1
			mu.Unlock()
			if i == 49 {
				warmOnce.Do(func() { close(warm) })
			}
		}
	}()
	<-warm // some writes land first
	mu.Lock()
	before := committed
	mu.Unlock()
	dest := filepath.Join(t.TempDir(), "live.db")
	info, err := Backup(ctx, s.path, dest)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("Backup: %v", err)
	}
	if got := integrity(t, dest); got != "ok" {
		t.Errorf("integrity_check = %q", got)
	}
	c := openAt(t, dest, options{readOnly: true})
	var users int
	if err := c.db.QueryRow(`SELECT count(*) FROM messages WHERE session = 'telegram:busy' AND role = 'user'`).Scan(&users); err != nil {
		t.Fatal(err)
	}
	if users < before {
		t.Errorf("the copy holds %d busy messages, %d were committed before it started", users, before)
	}
	for i := range before {
		var n int
		if err := c.db.QueryRow(`SELECT count(*) FROM messages WHERE content = ?`, fmt.Sprintf("busy %d", i)).Scan(&n); err != nil || n != 1 {
			t.Fatalf("message busy %d: %d copies, %v", i, n, err)
		}
	}
	if info.Counts.Messages < int64(10+2*before) {
		t.Errorf("counted %d messages, want at least %d", info.Counts.Messages, 10+2*before)
	}
}

func TestInspectRefuses(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.db")
	if err := os.WriteFile(garbage, []byte(strings.Repeat("not a database ", 400)), 0o600); err != nil {
		t.Fatal(err)
	}

	other := filepath.Join(dir, "other.db")
	if _, err := rawDB(t, other).Exec(`CREATE TABLE notes (x TEXT); PRAGMA user_version = 1`); err != nil {
		t.Fatal(err)
	}

	newer := filepath.Join(dir, "newer.db")
	openAt(t, newer, options{}).Close()
	if _, err := rawDB(t, newer).Exec(fmt.Sprintf(`PRAGMA user_version = %d`, SchemaVersion()+1)); err != nil {
		t.Fatal(err)
	}

	corrupt := filepath.Join(dir, "corrupt.db")
	s := openAt(t, corrupt, options{})
	fill(t, s, 20, 50)
	s.Close()
	data, err := os.ReadFile(corrupt)
	if err != nil {
		t.Fatal(err)
	}
	// Overwrite pages in the middle of the file, keeping the header.
	for i := 8192; i < len(data)-4096 && i < 8192+16384; i++ {
		data[i] = byte(i * 7)
	}
	if err := os.WriteFile(corrupt, data, 0o600); err != nil {
		t.Fatal(err)
	}
	os.Remove(corrupt + "-wal")
	os.Remove(corrupt + "-shm")

	for _, tc := range []struct {
		name, path, want string
	}{
		{"missing", filepath.Join(dir, "missing.db"), "no such file"},
		{"garbage", garbage, "not a database"},
		{"other program", other, "not a nanobot database"},
		{"newer", newer, "newer nanobot"},
		{"corrupt", corrupt, "malformed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Inspect(t.Context(), tc.path)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Inspect(%s) = %v, want an error saying %q", tc.name, err, tc.want)
			}
		})
	}
}

func TestRestoreRoundTrip(t *testing.T) {
	ctx := t.Context()
	path := dbPath(t)
	s := openAt(t, path, options{})
	fill(t, s, 2, 3)
	backupFile := filepath.Join(t.TempDir(), "backup.db")
	if _, err := s.Backup(ctx, backupFile); err != nil {
		t.Fatal(err)
	}
	// Written after the backup: gone after the restore, kept aside.
	if err := s.Append(ctx, "telegram:late", user("after the backup")); err != nil {
		t.Fatal(err)
	}
	// The database as a crash leaves it: the later rows only in its WAL.
	path = filepath.Join(t.TempDir(), "crashed.db")
	for _, suffix := range []string{"", "-wal"} {
		data, err := os.ReadFile(s.path + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if suffix == "-wal" && len(data) == 0 {
			t.Fatal("the WAL is empty; the test needs the rows there")
		}
		if err := os.WriteFile(path+suffix, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	now := time.Date(2025, 6, 7, 8, 9, 10, 0, time.UTC)
	info, err := Restore(ctx, backupFile, path, now)
	if err != nil {
		t.Fatalf("Restore: %v", err)
	}
	wantKept := path + ".before-restore-20250607T080910Z"
	if info.KeptAs != wantKept || info.FromVersion != SchemaVersion() || info.ToVersion != SchemaVersion() {
		t.Errorf("Restore = %+v, want kept as %s, version %d", info, wantKept, SchemaVersion())
	}
	if info.Backup.Counts.Messages != 6 {
		t.Errorf("restored %d messages, want 6", info.Backup.Counts.Messages)
	}

	r := openAt(t, path, options{})
	if msgs, err := r.Recent(ctx, "telegram:late", 10); err != nil || len(msgs) != 0 {
		t.Errorf("the restored database has the later session: %v, %v", msgs, err)
	}
	if msgs, err := r.Recent(ctx, "telegram:1", 10); err != nil || len(msgs) != 3 {
		t.Errorf("the restored database lacks the backed-up session: %v, %v", msgs, err)
	}
	if got := integrity(t, path); got != "ok" {
		t.Errorf("integrity_check after restore = %q", got)
	}
	old := openAt(t, wantKept, options{readOnly: true})
	if msgs, err := old.Recent(ctx, "telegram:late", 10); err != nil || len(msgs) != 1 {
		t.Errorf("the kept database lost the later message: %v, %v", msgs, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("restored file: %v, %v; want mode 0600", fi, err)
	}

	// A second restore in the same second keeps both earlier files.
	r.Close()
	info2, err := Restore(ctx, backupFile, path, now)
	if err != nil || info2.KeptAs == wantKept || !strings.HasPrefix(info2.KeptAs, wantKept) {
		t.Errorf("second Restore = %+v, %v; want a new kept name", info2, err)
	}
}

func TestRestoreAppliesMigrations(t *testing.T) {
	ctx := t.Context()
	ms, err := loadMigrations(migrationData{FTS5: libraryFTS5(t)})
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) < 2 {
		t.Skip("only one migration")
	}
	// A backup from the first release: only the first migration applied.
	oldFile := filepath.Join(t.TempDir(), "v1.db")
	raw := rawDB(t, oldFile)
	if _, err := raw.Exec(ms[0].sql + fmt.Sprintf(`; PRAGMA user_version = %d;
		INSERT INTO messages (session, role, content, created_at) VALUES ('telegram:1', 'user', 'from long ago', 1);
		INSERT INTO history (scope, at, entry) VALUES ('global', 1, 'an old entry about sailing');`, ms[0].version)); err != nil {
		t.Fatal(err)
	}
	raw.Close()

	path := dbPath(t)
	info, err := Restore(ctx, oldFile, path, time.Now())
	if err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if info.FromVersion != ms[0].version || info.ToVersion != SchemaVersion() || info.KeptAs != "" {
		t.Errorf("Restore = %+v, want versions %d -> %d and nothing kept", info, ms[0].version, SchemaVersion())
	}
	s := openAt(t, path, options{})
	hits, err := s.SearchHistory(ctx, GlobalScope, "sailing", 5)
	if err != nil || len(hits) != 1 {
		t.Errorf("SearchHistory after the migrated restore = %v, %v; want the old entry", hits, err)
	}
}

func TestRestoreRefusalLeavesTheDatabase(t *testing.T) {
	ctx := t.Context()
	path := dbPath(t)
	s := openAt(t, path, options{})
	fill(t, s, 1, 2)
	s.Close()
	bad := filepath.Join(t.TempDir(), "bad.db")
	if err := os.WriteFile(bad, []byte("nope"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Restore(ctx, bad, path, time.Now()); err == nil {
		t.Fatal("Restore of a broken file succeeded")
	}
	kept, _ := filepath.Glob(path + ".before-restore-*")
	incoming, _ := filepath.Glob(path + ".restoring*")
	if len(kept)+len(incoming) != 0 {
		t.Errorf("a refused restore left files: %v %v", kept, incoming)
	}
	r := openAt(t, path, options{readOnly: true})
	if msgs, err := r.Recent(ctx, "telegram:0", 10); err != nil || len(msgs) != 2 {
		t.Errorf("the database changed: %v, %v", msgs, err)
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	path := dbPath(t)
	openAt(t, path, options{}).Close()
	if _, err := rawDB(t, path).Exec(fmt.Sprintf(`PRAGMA user_version = %d`, SchemaVersion()+2)); err != nil {
		t.Fatal(err)
	}
	for name, open := range map[string]func(context.Context, string) (*Store, error){"Open": Open, "OpenReadOnly": OpenReadOnly} {
		s, err := open(t.Context(), path)
		if err == nil {
			s.Close()
			t.Fatalf("%s of a database from a newer version succeeded", name)
		}
		var se *SchemaError
		if !errors.As(err, &se) || !se.Newer() || se.Database != SchemaVersion()+2 || se.Program != SchemaVersion() {
			t.Errorf("%s = %v, want a *SchemaError for a newer database", name, err)
		}
		if !strings.Contains(err.Error(), "newer nanobot") || !strings.Contains(err.Error(), path) {
			t.Errorf("%s error %q does not say what happened and where", name, err)
		}
	}
}

// Each migration runs in its own transaction: one that fails halfway leaves
// neither its first statements nor a new version behind.
func TestFailedMigrationRollsBack(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	ms, err := loadMigrations(migrationData{FTS5: s.fts5})
	if err != nil {
		t.Fatal(err)
	}
	next := ms[len(ms)-1].version + 1
	broken := append(ms, migration{version: next, name: "broken.sql",
		sql: `CREATE TABLE half_done (x INTEGER); INSERT INTO no_such_table VALUES (1);`})
	if err := s.apply(ctx, s.path, broken); err == nil || !strings.Contains(err.Error(), "broken.sql") {
		t.Fatalf("apply = %v, want the broken migration's error", err)
	}
	if v, _ := userVersion(ctx, s.db); v != next-1 {
		t.Errorf("user_version = %d after the failed step, want %d", v, next-1)
	}
	var n int
	if err := s.db.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE name = 'half_done'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("the failed migration's table exists (%d, %v)", n, err)
	}
}

func TestLock(t *testing.T) {
	path := dbPath(t)
	l, err := TryLock(path)
	if err != nil {
		t.Fatalf("TryLock: %v", err)
	}
	_, err = TryLock(path)
	var le *LockedError
	if !errors.Is(err, ErrLocked) || !errors.As(err, &le) || le.PID != os.Getpid() {
		t.Errorf("second TryLock = %v, want ErrLocked naming pid %d", err, os.Getpid())
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	l2, err := TryLock(path)
	if err != nil {
		t.Fatalf("TryLock after Release: %v", err)
	}
	l2.Release()
}
