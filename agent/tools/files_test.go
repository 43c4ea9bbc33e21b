package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fileLayout is a workspace with an outside directory next to it, symlinks
// pointing out and nanobot's own files inside.
type fileLayout struct {
	root, ws, outside, config, db string
}

func newFileLayout(t *testing.T) fileLayout {
	t.Helper()
	root := t.TempDir()
	s := fileLayout{
		root:    root,
		ws:      filepath.Join(root, "ws"),
		outside: filepath.Join(root, "outside"),
		config:  filepath.Join(root, "ws", "config.yaml"),
		db:      filepath.Join(root, "ws", "data", "nanobot.db"),
	}
	mkdir(t, s.ws, s.outside, filepath.Dir(s.db), filepath.Join(s.ws, "sub"))
	writeFile(t, filepath.Join(s.outside, "secret.txt"), "outside secret")
	writeFile(t, s.config, "api_key: sk-live")
	writeFile(t, s.db, "SQLite format 3")
	writeFile(t, s.db+"-wal", "wal")
	writeFile(t, filepath.Join(s.ws, "notes.txt"), "inside notes")
	symlink(t, s.outside, filepath.Join(s.ws, "out"))
	symlink(t, filepath.Join(s.outside, "secret.txt"), filepath.Join(s.ws, "outfile"))
	symlink(t, "../../outside/secret.txt", filepath.Join(s.ws, "sub", "relout"))
	symlink(t, filepath.Join(s.outside, "new.txt"), filepath.Join(s.ws, "dangling"))
	symlink(t, s.config, filepath.Join(s.ws, "cfglink"))
	symlink(t, "notes.txt", filepath.Join(s.ws, "notelink"))
	if err := os.Link(s.config, filepath.Join(s.ws, "cfghard")); err != nil {
		t.Fatal(err)
	}
	return s
}

func (s fileLayout) files(restrict bool) Files {
	return Files{Workspace: s.ws, Restrict: restrict, Protected: []string{s.config, s.db}}
}

// untouched fails the test if anything outside the workspace or protected
// changed.
func (s fileLayout) untouched(t *testing.T) {
	t.Helper()
	for path, want := range map[string]string{
		filepath.Join(s.outside, "secret.txt"): "outside secret",
		s.config:                               "api_key: sk-live",
		s.db:                                   "SQLite format 3",
		s.db + "-wal":                          "wal",
	} {
		if got := readString(t, path); got != want {
			t.Errorf("%s = %q, want %q", path, got, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(s.outside, "new.txt")); err == nil {
		t.Errorf("a file was created outside the workspace through the dangling symlink")
	}
}

func TestConfinement(t *testing.T) {
	s := newFileLayout(t)
	tests := []struct {
		name        string
		path        string
		restricted  bool // refused with restrict_to_workspace
		alwaysRefus bool // refused even without it
	}{
		{"inside", "notes.txt", false, false},
		{"inside absolute", filepath.Join(s.ws, "notes.txt"), false, false},
		{"symlink inside", "notelink", false, false},
		{"dot dot", "../outside/secret.txt", true, false},
		{"dot dot in the middle", "sub/../../outside/secret.txt", true, false},
		{"absolute outside", filepath.Join(s.outside, "secret.txt"), true, false},
		{"symlinked dir out", "out/secret.txt", true, false},
		{"symlinked file out", "outfile", true, false},
		{"relative symlink out", "sub/relout", true, false},
		{"config", "config.yaml", true, true},
		{"database", "data/nanobot.db", true, true},
		{"database journal", "data/nanobot.db-wal", true, true},
		{"symlink to config", "cfglink", true, true},
		{"hard link to config", "cfghard", true, true},
		{"config absolute", s.config, true, true},
	}
	for _, restrict := range []bool{true, false} {
		tools := s.files(restrict)
		for _, tt := range tests {
			name := tt.name
			if !restrict {
				name += " unrestricted"
			}
			refused := tt.alwaysRefus || (restrict && tt.restricted)
			t.Run(name, func(t *testing.T) {
				got, err := call(t, ReadFile{tools}, map[string]string{"path": tt.path})
				if refused {
					if err == nil {
						t.Fatalf("read_file(%s) = %q, want a refusal", tt.path, got)
					}
					if strings.Contains(err.Error(), "sk-live") || strings.Contains(err.Error(), "outside secret") {
						t.Errorf("the refusal leaks the content: %v", err)
					}
				} else if err != nil {
					t.Fatalf("read_file(%s): %v", tt.path, err)
				}
				if !refused {
					return
				}
				for _, tool := range []struct {
					name string
					run  func() (string, error)
				}{
					{"write_file", func() (string, error) {
						return call(t, WriteFile{tools}, map[string]string{"path": tt.path, "content": "overwritten"})
					}},
					{"edit_file", func() (string, error) {
						return call(t, EditFile{tools}, map[string]string{"path": tt.path, "old_text": "e", "new_text": "X"})
					}},
				} {
					if got, err := tool.run(); err == nil {
						t.Errorf("%s(%s) = %q, want a refusal", tool.name, tt.path, got)
					}
				}
				s.untouched(t)
			})
		}
	}
}

func TestConfinementMessages(t *testing.T) {
	s := newFileLayout(t)
	tests := []struct {
		name     string
		restrict bool
		path     string
		want     []string
	}{
		{"outside", true, "../outside/secret.txt", []string{"../outside/secret.txt", "restricted to the workspace " + s.ws}},
		{"protected", false, "config.yaml", []string{"config.yaml: this file belongs to nanobot itself"}},
	}
	for _, tt := range tests {
		_, err := call(t, ReadFile{s.files(tt.restrict)}, map[string]string{"path": tt.path})
		for _, w := range tt.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: read_file(%s) error %v, want it to contain %q", tt.name, tt.path, err, w)
			}
		}
	}
}

func TestDanglingSymlink(t *testing.T) {
	s := newFileLayout(t)
	got, err := call(t, WriteFile{s.files(true)}, map[string]string{"path": "dangling", "content": "escaped"})
	if err == nil {
		t.Errorf("write_file(dangling) = %q, want a refusal", got)
	}
	s.untouched(t)
	if _, err := call(t, ReadFile{s.files(true)}, map[string]string{"path": "dangling"}); err == nil {
		t.Error("read_file(dangling) succeeded, want a refusal")
	}
}

func TestListDirConfinement(t *testing.T) {
	s := newFileLayout(t)
	for _, path := range []string{"..", "out", s.outside, "/"} {
		if got, err := call(t, ListDir{s.files(true)}, map[string]string{"path": path}); err == nil {
			t.Errorf("list_dir(%s) = %q, want a refusal", path, got)
		}
	}
	if _, err := call(t, ListDir{s.files(false)}, map[string]string{"path": "out"}); err != nil {
		t.Errorf("list_dir(out) unrestricted: %v", err)
	}
}

func TestEmptyPath(t *testing.T) {
	s := newFileLayout(t)
	for _, tool := range []struct {
		name string
		run  func() (string, error)
	}{
		{"read_file", func() (string, error) { return call(t, ReadFile{s.files(true)}, map[string]string{"path": " "}) }},
		{"write_file", func() (string, error) {
			return call(t, WriteFile{s.files(true)}, map[string]string{"content": "x"})
		}},
	} {
		if _, err := tool.run(); err == nil || !strings.Contains(err.Error(), `"path" is required`) {
			t.Errorf("%s without a path: error %v, want one saying path is required", tool.name, err)
		}
	}
}

func TestRealPath(t *testing.T) {
	s := newFileLayout(t)
	real := func(p string) string {
		r, err := filepath.EvalSymlinks(p)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	tests := []struct{ in, want string }{
		{filepath.Join(s.ws, "notes.txt"), real(filepath.Join(s.ws, "notes.txt"))},
		{filepath.Join(s.ws, "out", "secret.txt"), real(filepath.Join(s.outside, "secret.txt"))},
		{filepath.Join(s.ws, "sub", "relout"), real(filepath.Join(s.outside, "secret.txt"))},
		{filepath.Join(s.ws, "dangling"), filepath.Join(real(s.outside), "new.txt")},
		{filepath.Join(s.ws, "new", "deeper", "file"), filepath.Join(real(s.ws), "new", "deeper", "file")},
	}
	for _, tt := range tests {
		if got := realPath(tt.in); got != tt.want {
			t.Errorf("realPath(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	loop := filepath.Join(s.ws, "loop")
	symlink(t, loop, loop)
	_ = realPath(filepath.Join(loop, "x")) // must return
}

func mkdir(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readString(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// TestProtectedFolder: nothing in a protected folder (the database
// backups) is read, listed or written, whichever path leads there.
func TestProtectedFolder(t *testing.T) {
	root := t.TempDir()
	ws, backups := filepath.Join(root, "ws"), filepath.Join(root, "backups")
	mkdir(t, ws, filepath.Join(backups, "old"))
	writeFile(t, filepath.Join(backups, "nanobot.db.1"), "SQLite backup")
	symlink(t, backups, filepath.Join(ws, "bk"))
	f := Files{Workspace: ws, Protected: []string{backups}}
	for _, path := range []string{filepath.Join(backups, "nanobot.db.1"), "bk/nanobot.db.1", "bk/old/../nanobot.db.1"} {
		if got, err := call(t, ReadFile{f}, map[string]string{"path": path}); err == nil {
			t.Errorf("read_file(%s) = %q, want a refusal", path, got)
		}
	}
	for _, path := range []string{backups, "bk", "bk/old"} {
		if got, err := call(t, ListDir{f}, map[string]string{"path": path}); err == nil {
			t.Errorf("list_dir(%s) = %q, want a refusal", path, got)
		}
	}
	for _, path := range []string{"bk/new.txt", "bk/old/new.txt", "bk/nanobot.db.1", filepath.Join(backups, "more", "new.txt")} {
		if got, err := call(t, WriteFile{f}, map[string]string{"path": path, "content": "x"}); err == nil {
			t.Errorf("write_file(%s) = %q, want a refusal", path, got)
		}
	}
	entries, err := os.ReadDir(backups)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 || readString(t, filepath.Join(backups, "nanobot.db.1")) != "SQLite backup" {
		t.Errorf("the protected folder changed: %v", entries)
	}
}

func TestMissingWorkspace(t *testing.T) {
	ws := filepath.Join(t.TempDir(), "gone")
	_, err := call(t, WriteFile{Files{Workspace: ws, Restrict: true}}, map[string]string{"path": "a.txt", "content": "x"})
	if want := "the workspace " + ws + ": it does not exist"; err == nil || err.Error() != want {
		t.Errorf("write_file in a missing workspace: %v, want %q", err, want)
	}
}
