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
