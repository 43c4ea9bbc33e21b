package safety

import (
	"os"
	"path/filepath"
	"testing"
)

func TestGuard(t *testing.T) {
	dir := t.TempDir()
	cfg, db, other := filepath.Join(dir, "config.yaml"), filepath.Join(dir, "nanobot.db"), filepath.Join(dir, "notes.txt")
	for _, p := range []string{cfg, db, db + "-wal", other} {
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	hard := filepath.Join(dir, "hard")
	if err := os.Link(cfg, hard); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "cfglink")
	if err := os.Symlink(cfg, link); err != nil {
		t.Fatal(err)
	}
	g := NewGuard([]string{link, db, ""})

	for _, tt := range []struct {
		path string
		want bool
	}{
		{cfg, true}, {hard, true}, {db, true}, {db + "-wal", true}, {other, false},
	} {
		fi, err := os.Stat(tt.path)
		if err != nil {
			t.Fatal(err)
		}
		if got := g.Holds(fi); got != tt.want {
			t.Errorf("Holds(%s) = %v, want %v", filepath.Base(tt.path), got, tt.want)
		}
	}
	d, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		want bool
	}{
		{"config.yaml", true}, {"cfglink", true}, {"nanobot.db-journal", true}, {"nanobot.db-shm", true},
		{"notes.txt", false}, {"hard", false},
	} {
		if got := g.Names(d, tt.name); got != tt.want {
			t.Errorf("Names(dir, %s) = %v, want %v", tt.name, got, tt.want)
		}
	}
	if sub, err := os.Stat(t.TempDir()); err != nil || g.Names(sub, "config.yaml") {
		t.Errorf("Names(another dir, config.yaml) = true, want false (%v)", err)
	}
}

func TestGuardCovers(t *testing.T) {
	root := t.TempDir()
	backups, other := filepath.Join(root, "backups"), filepath.Join(root, "other")
	deep := filepath.Join(backups, "2026", "12")
	for _, d := range []string{deep, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	g := NewGuard([]string{backups})
	for _, tt := range []struct {
		dir  string
		want bool
	}{
		{backups, true}, {deep, true}, {other, false}, {root, false}, {"/", false},
	} {
		d, err := os.Open(tt.dir)
		if err != nil {
			t.Fatal(err)
		}
		got, err := g.Covers(d)
		_ = d.Close()
		if err != nil || got != tt.want {
			t.Errorf("Covers(%s) = %v, %v; want %v", tt.dir, got, err, tt.want)
		}
	}
	// A directory moved out from under the path that named it is judged
	// where it is.
	d, err := os.Open(deep)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := os.Rename(deep, filepath.Join(other, "12")); err != nil {
		t.Fatal(err)
	}
	if got, err := g.Covers(d); err != nil || got {
		t.Errorf("Covers(moved out) = %v, %v; want false", got, err)
	}
	if got, err := NewGuard(nil).Covers(d); err != nil || got {
		t.Errorf("Covers without protected folders = %v, %v; want false", got, err)
	}
}
