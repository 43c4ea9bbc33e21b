package tools

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteFile(t *testing.T) {
	ws := t.TempDir()
	tool := WriteFile{Files{Workspace: ws, Restrict: true}}

	t.Run("creates parents", func(t *testing.T) {
		got, err := call(t, tool, map[string]string{"path": "a/b/c.txt", "content": "deep"})
		if err != nil {
			t.Fatal(err)
		}
		if want := "created a/b/c.txt (4 bytes)"; got != want {
			t.Errorf("result = %q, want %q", got, want)
		}
		if got := readString(t, filepath.Join(ws, "a", "b", "c.txt")); got != "deep" {
			t.Errorf("content = %q, want %q", got, "deep")
		}
	})

	t.Run("replaces and keeps the mode", func(t *testing.T) {
		path := filepath.Join(ws, "run.sh")
		writeFile(t, path, "old")
		if err := os.Chmod(path, 0o750); err != nil {
			t.Fatal(err)
		}
		got, err := call(t, tool, map[string]string{"path": "run.sh", "content": "#!/bin/sh\necho new\n"})
		if err != nil {
			t.Fatal(err)
		}
		if want := "wrote run.sh (19 bytes)"; got != want {
			t.Errorf("result = %q, want %q", got, want)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o750 {
			t.Errorf("mode = %v, want %v", fi.Mode().Perm(), fs.FileMode(0o750))
		}
		if got := readString(t, path); got != "#!/bin/sh\necho new\n" {
			t.Errorf("content = %q", got)
		}
	})

	t.Run("empty content", func(t *testing.T) {
		if _, err := call(t, tool, map[string]string{"path": "empty.txt", "content": ""}); err != nil {
			t.Fatal(err)
		}
		if got := readString(t, filepath.Join(ws, "empty.txt")); got != "" {
			t.Errorf("content = %q, want empty", got)
		}
	})

	t.Run("missing content", func(t *testing.T) {
		_, err := call(t, tool, map[string]string{"path": "x.txt"})
		if err == nil || !strings.Contains(err.Error(), `"content" is required`) {
			t.Errorf("error = %v, want one saying content is required", err)
		}
	})

	t.Run("directory", func(t *testing.T) {
		mkdir(t, filepath.Join(ws, "adir"))
		_, err := call(t, tool, map[string]string{"path": "adir", "content": "x"})
		if err == nil || err.Error() != "adir is a directory" {
			t.Errorf("error = %v, want %q", err, "adir is a directory")
		}
	})

	t.Run("through a symlink inside the workspace", func(t *testing.T) {
		writeFile(t, filepath.Join(ws, "target.txt"), "old")
		symlink(t, "target.txt", filepath.Join(ws, "link.txt"))
		if _, err := call(t, tool, map[string]string{"path": "link.txt", "content": "new"}); err != nil {
			t.Fatal(err)
		}
		if got := readString(t, filepath.Join(ws, "target.txt")); got != "new" {
			t.Errorf("target = %q, want %q", got, "new")
		}
		if fi, err := os.Lstat(filepath.Join(ws, "link.txt")); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			t.Errorf("link.txt is no longer a symlink: %v %v", fi, err)
		}
	})

	t.Run("no temporary files left", func(t *testing.T) {
		err := filepath.WalkDir(ws, func(path string, d fs.DirEntry, err error) error {
			if err == nil && strings.Contains(d.Name(), ".tmp-") {
				t.Errorf("temporary file left behind: %s", path)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}
