package memory

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// damageRoot overwrites the page header of table's root page in the
// closed database at path.
func damageRoot(t *testing.T, path, table string) {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	var pageSize, root int64
	err = db.QueryRow(`SELECT (SELECT page_size FROM pragma_page_size()), rootpage FROM sqlite_schema WHERE name = ?`, table).Scan(&pageSize, &root)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(bytes.Repeat([]byte{0xff}, 12), (root-1)*pageSize); err != nil {
		t.Fatal(err)
	}
}

func TestQuickCheck(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "nanobot.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	for range 50 {
		if err := s.AppendHistory(ctx, GlobalScope, time.Time{}, strings.Repeat("an entry of the log. ", 30)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.QuickCheck(ctx); err != nil {
		t.Fatalf("QuickCheck of a sound database = %v", err)
	}
	s.Close()

	// Damage the store's own connections have not read yet: the check,
	// on a connection of its own, finds it.
	s, err = Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	damageRoot(t, path, "history")
	err = s.QuickCheck(ctx)
	var damaged *DamagedError
	if !errors.As(err, &damaged) || damaged.Path != path || !strings.Contains(err.Error(), path+" is damaged") {
		t.Errorf("QuickCheck of a damaged page = %v, want a *DamagedError naming %s", err, path)
	}
}

func TestOpenNamesWhatIsWrong(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	notDB := filepath.Join(dir, "nanobot.db")
	if err := os.WriteFile(notDB, bytes.Repeat([]byte("not a database at all\n"), 300), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, open := range map[string]func(context.Context, string) (*Store, error){"Open": Open, "OpenReadOnly": OpenReadOnly} {
		_, err := open(ctx, notDB)
		var damaged *DamagedError
		if !errors.As(err, &damaged) || damaged.Path != notDB || !strings.Contains(err.Error(), "file is not a database") {
			t.Errorf("%s(a text file) = %v, want a *DamagedError naming it", name, err)
		}
	}
}

func TestFreshAndLitestreamDir(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "nanobot.db")
	if !Fresh(db) || LitestreamDir(db) != "" {
		t.Fatalf("no file: Fresh %v, LitestreamDir %q", Fresh(db), LitestreamDir(db))
	}
	os.WriteFile(db, nil, 0o600)
	if !Fresh(db) {
		t.Error("an empty file is not fresh")
	}
	s, err := Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if Fresh(db) {
		t.Error("an opened database is still fresh")
	}
	state := filepath.Join(dir, ".nanobot.db-litestream")
	os.Mkdir(state, 0o700)
	if got := LitestreamDir(db); got != state {
		t.Errorf("LitestreamDir = %q, want %q", got, state)
	}
}
