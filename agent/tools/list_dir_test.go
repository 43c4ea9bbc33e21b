package tools

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

func TestListDir(t *testing.T) {
	ws := t.TempDir()
	writeFile(t, filepath.Join(ws, "b.txt"), "hello")
	writeFile(t, filepath.Join(ws, "A.md"), strings.Repeat("x", 2048))
	mkdir(t, filepath.Join(ws, "src"), filepath.Join(ws, "empty"))
	writeFile(t, filepath.Join(ws, "src", "main.go"), "package main\n")
	symlink(t, "b.txt", filepath.Join(ws, "link"))
	symlink(t, "src", filepath.Join(ws, "srclink"))

	tests := []struct {
		name, path, want, wantErr string
	}{
		{name: "workspace", path: ".", want: "A.md  (2.0 KB)\nb.txt  (5 bytes)\nempty/\nlink -> b.txt (symlink)\nsrc/\nsrclink/ -> src (symlink)"},
		{name: "empty path is the workspace", path: "", want: "A.md  (2.0 KB)\nb.txt  (5 bytes)\nempty/\nlink -> b.txt (symlink)\nsrc/\nsrclink/ -> src (symlink)"},
		{name: "subdirectory", path: "src", want: "main.go  (13 bytes)"},
		{name: "empty directory", path: "empty", want: "empty is empty"},
		{name: "file", path: "b.txt", wantErr: "b.txt is a file (5 bytes), not a directory; use read_file to read it"},
		{name: "missing", path: "nope", wantErr: "nope does not exist"},
	}
	tool := ListDir{Files{Workspace: ws, Restrict: true}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := call(t, tool, map[string]string{"path": tt.path})
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("list_dir(%q) = %q, %v; want error %q", tt.path, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("list_dir(%q) = %q, %v\nwant %q", tt.path, got, err, tt.want)
			}
		})
	}
}

func TestListDirCapsEntries(t *testing.T) {
	ws := t.TempDir()
	for i := range maxListEntries + 5 {
		writeFile(t, filepath.Join(ws, fmt.Sprintf("f%04d", i)), "")
	}
	got, err := call(t, ListDir{Files{Workspace: ws}}, map[string]string{"path": "."})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(got, "\n")
	if len(lines) != maxListEntries+1 || lines[len(lines)-1] != "… [5 more entries not shown]" {
		t.Errorf("got %d lines ending %q, want %d ending with the count of the rest", len(lines), lines[len(lines)-1], maxListEntries+1)
	}
}

func TestHumanSize(t *testing.T) {
	tests := []struct {
		in   int64
		want string
	}{
		{0, "0 bytes"}, {1023, "1023 bytes"}, {1024, "1.0 KB"}, {1536, "1.5 KB"},
		{5 << 20, "5.0 MB"}, {3 << 30, "3.0 GB"}, {1 << 50, "1.0 PB"}, {1 << 62, "4096.0 PB"},
	}
	for _, tt := range tests {
		if got := humanSize(tt.in); got != tt.want {
			t.Errorf("humanSize(%d) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
