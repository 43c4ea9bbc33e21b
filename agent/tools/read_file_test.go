package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

func TestReadFile(t *testing.T) {
	ws := t.TempDir()
	writeFile(t, filepath.Join(ws, "hello.txt"), "hello\nworld\n")
	writeFile(t, filepath.Join(ws, "empty.txt"), "")
	writeFile(t, filepath.Join(ws, "image.png"), "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	mkdir(t, filepath.Join(ws, "dir"))
	big := strings.Repeat("é", maxReadBytes) // two bytes each: twice the limit
	writeFile(t, filepath.Join(ws, "big.txt"), big)

	tests := []struct {
		name    string
		path    string
		want    string // exact result
		wantErr string
	}{
		{name: "text", path: "hello.txt", want: "hello\nworld\n"},
		{name: "nested absolute", path: filepath.Join(ws, "hello.txt"), want: "hello\nworld\n"},
		{name: "empty", path: "empty.txt", want: "(empty file)"},
		{name: "binary", path: "image.png", wantErr: "image.png looks like a binary file (16 bytes); only text files can be read"},
		{name: "directory", path: "dir", wantErr: "dir is a directory; use list_dir"},
		{name: "missing", path: "nope.txt", wantErr: "nope.txt does not exist"},
	}
	tool := ReadFile{Files{Workspace: ws, Restrict: true}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := call(t, tool, map[string]string{"path": tt.path})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("read_file(%s) = %q, %v; want error %q", tt.path, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("read_file(%s) = %q, %v; want %q", tt.path, got, err, tt.want)
			}
		})
	}

	t.Run("large file is cut", func(t *testing.T) {
		got, err := call(t, tool, map[string]string{"path": "big.txt"})
		if err != nil {
			t.Fatal(err)
		}
		text, note, ok := strings.Cut(got, "\n… [")
		if !ok {
			t.Fatalf("no note of the cut in %d bytes of result", len(got))
		}
		if len(text) != maxReadBytes || strings.Trim(text, "é") != "" {
			t.Errorf("kept %d bytes (valid text: %v), want %d bytes of whole characters", len(text), strings.Trim(text, "é") == "", maxReadBytes)
		}
		if want := "file is 524288 bytes; only the first 262144 are shown]"; note != want {
			t.Errorf("note = %q, want %q", note, want)
		}
	})
}

func TestReadFileCutsAtCharacterBoundary(t *testing.T) {
	ws := t.TempDir()
	// One ASCII byte first, so that the limit falls inside a character.
	writeFile(t, filepath.Join(ws, "odd.txt"), "a"+strings.Repeat("é", maxReadBytes))
	got, err := call(t, ReadFile{Files{Workspace: ws}}, map[string]string{"path": "odd.txt"})
	if err != nil {
		t.Fatal(err)
	}
	text, _, _ := strings.Cut(got, "\n… [")
	if len(text) != maxReadBytes-1 || strings.Trim(text[1:], "é") != "" {
		t.Errorf("kept %d bytes, want %d of whole characters", len(text), maxReadBytes-1)
	}
}

func TestReadFilePermission(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads any file")
	}
	ws := t.TempDir()
	path := filepath.Join(ws, "locked.txt")
	writeFile(t, path, "x")
	if err := os.Chmod(path, 0); err != nil {
		t.Fatal(err)
	}
	_, err := call(t, ReadFile{Files{Workspace: ws}}, map[string]string{"path": "locked.txt"})
	if err == nil || err.Error() != "locked.txt: permission denied" {
		t.Errorf("error = %v, want permission denied", err)
	}
}

func TestReadFileBuiltin(t *testing.T) {
	ws := t.TempDir()
	writeFile(t, filepath.Join(ws, "builtin:x"), "a file with a colon in its name")
	builtin := fstest.MapFS{"skills/a/SKILL.md": {Data: []byte("built-in skill")}}
	tool := ReadFile{Files{Workspace: ws, Restrict: true, Builtin: builtin}}
	tests := []struct{ path, want, wantErr string }{
		{path: "builtin:skills/a/SKILL.md", want: "built-in skill"},
		{path: "builtin:skills/../skills/a/SKILL.md", want: "built-in skill"},
		{path: "builtin:skills/b/SKILL.md", wantErr: "builtin:skills/b/SKILL.md does not exist"},
		{path: "builtin:../../etc/passwd", wantErr: "does not exist"},
	}
	for _, tt := range tests {
		got, err := call(t, tool, map[string]string{"path": tt.path})
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("read_file(%s) = %q, %v; want error %q", tt.path, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("read_file(%s) = %q, %v; want %q", tt.path, got, err, tt.want)
		}
	}
	// Without built-in files the prefix is an ordinary file name.
	got, err := call(t, ReadFile{Files{Workspace: ws, Restrict: true}}, map[string]string{"path": "builtin:x"})
	if err != nil || got != "a file with a colon in its name" {
		t.Errorf("read_file(builtin:x) without Builtin = %q, %v", got, err)
	}
}
