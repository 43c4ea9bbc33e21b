package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEditFile(t *testing.T) {
	const src = "package main\n\nfunc a() {\n\treturn\n}\n\nfunc b() {\n\treturn\n}\n"
	tests := []struct {
		name     string
		content  string
		old, new string
		want     string // file afterwards
		result   string
		wantErr  string
	}{
		{
			name: "one match", content: src, old: "func a() {\n\treturn\n}", new: "func a() {\n\tprintln(1)\n}",
			want:   strings.Replace(src, "func a() {\n\treturn", "func a() {\n\tprintln(1)", 1),
			result: "edited f.go: replaced 3 line(s) at line 3 with 3 line(s)",
		},
		{
			name: "delete", content: src, old: "\nfunc b() {\n\treturn\n}\n", new: "",
			want: "package main\n\nfunc a() {\n\treturn\n}\n", result: "edited f.go: replaced 5 line(s) at line 6 with 1 line(s)",
		},
		{
			name: "no match", content: src, old: "func c()", new: "x",
			wantErr: "old_text was not found in f.go; read the file again and copy the exact text",
		},
		{
			name: "match only without surrounding whitespace", content: src, old: "  func a() {", new: "x",
			wantErr: "the text without its leading/trailing whitespace does occur",
		},
		{
			name: "two matches", content: src, old: "\treturn\n", new: "\treturn nil\n",
			wantErr: "old_text occurs 2 times in f.go (at lines 4, 8); include more surrounding lines so that it matches exactly once",
		},
		{
			name: "windows line endings", content: "a\r\nb\r\nc\r\n", old: "a\nb\n", new: "x\ny\n",
			want: "x\r\ny\r\nc\r\n", result: "edited f.go: replaced 3 line(s) at line 1 with 3 line(s)",
		},
		{name: "empty old_text", content: src, old: "", new: "x", wantErr: `"old_text" is required and must not be empty`},
		{name: "same text", content: src, old: "main", new: "main", wantErr: "old_text and new_text are the same"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := t.TempDir()
			path := filepath.Join(ws, "f.go")
			writeFile(t, path, tt.content)
			got, err := call(t, EditFile{Files{Workspace: ws, Restrict: true}}, map[string]string{"path": "f.go", "old_text": tt.old, "new_text": tt.new})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("edit_file = %q, %v; want error containing %q", got, err, tt.wantErr)
				}
				if after := readString(t, path); after != tt.content {
					t.Errorf("a failed edit changed the file to %q", after)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.result {
				t.Errorf("result = %q, want %q", got, tt.result)
			}
			if after := readString(t, path); after != tt.want {
				t.Errorf("file = %q, want %q", after, tt.want)
			}
		})
	}
}

func TestEditFileMissingNewText(t *testing.T) {
	ws := t.TempDir()
	writeFile(t, filepath.Join(ws, "f.txt"), "abc")
	_, err := call(t, EditFile{Files{Workspace: ws}}, map[string]string{"path": "f.txt", "old_text": "b"})
	if err == nil || !strings.Contains(err.Error(), `"new_text" is required`) {
		t.Errorf("error = %v, want one saying new_text is required", err)
	}
}

func TestEditFileKeepsMode(t *testing.T) {
	ws := t.TempDir()
	path := filepath.Join(ws, "run.sh")
	writeFile(t, path, "echo a\n")
	if err := os.Chmod(path, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := call(t, EditFile{Files{Workspace: ws}}, map[string]string{"path": "run.sh", "old_text": "a", "new_text": "b"}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("mode = %v, want 0700", fi.Mode().Perm())
	}
}
