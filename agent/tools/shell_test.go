package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckShell(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "sh")
	if err := os.WriteFile(script, []byte("#!/bin/true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("not a program\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path string
		want       string // in the error; "" for none
	}{
		{"the shell commands run with", Shell(), ""},
		{"an executable file", script, ""},
		{"missing, as in an image without a shell", filepath.Join(dir, "bin", "sh"), "no such file"},
		{"a directory", dir, "not a file"},
		{"not executable", plain, "not executable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckShell(tt.path)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("CheckShell(%q) = %v, want nil", tt.path, err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.path)):
				t.Errorf("CheckShell(%q) = %v, want an error naming the path and %q", tt.path, err, tt.want)
			}
		})
	}
}
