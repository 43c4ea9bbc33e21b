package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/nanobot-go/nanobot/agent"
)

// WriteFile is the write_file tool: create or replace a file.
type WriteFile struct{ Files }

var _ agent.Tool = WriteFile{}

type writeFileParams struct {
	Path    string  `json:"path"`
	Content *string `json:"content"`
}

// Spec describes write_file.
func (WriteFile) Spec() agent.ToolSpec {
	return agent.ToolSpec{
		Name:        "write_file",
		Description: "Create a file or replace its whole content. Missing parent directories are created. To change part of a file, use edit_file.",
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "Path of the file, relative to the workspace or absolute."},
    "content": {"type": "string", "description": "The complete new content of the file."}
  },
  "required": ["path", "content"],
  "additionalProperties": false
}`),
	}
}

// Run writes the file.
func (t WriteFile) Run(_ context.Context, args json.RawMessage) (string, error) {
	var p writeFileParams
	if err := decodeArgs(args, &p); err != nil {
		return "", err
	}
	if p.Content == nil {
		return "", errors.New(`"content" is required (use "" for an empty file)`)
	}
	abs, err := t.resolve(p.Path)
	if err != nil {
		return "", err
	}
	created, err := writeAtomic(abs, p.Path, []byte(*p.Content))
	if err != nil {
		return "", err
	}
	verb := "wrote"
	if created {
		verb = "created"
	}
	return fmt.Sprintf("%s %s (%d bytes)", verb, p.Path, len(*p.Content)), nil
}

// writeAtomic replaces the file at abs with data through a temporary file
// and a rename, so that a reader never sees half a file, keeping the mode of
// the file it replaces. It reports whether the file is new.
func writeAtomic(abs, name string, data []byte) (created bool, err error) {
	mode := fs.FileMode(0o644)
	switch fi, err := os.Stat(abs); {
	case err == nil && fi.IsDir():
		return false, fmt.Errorf("%s is a directory", name)
	case err == nil && !fi.Mode().IsRegular():
		return false, fmt.Errorf("%s is not a regular file (%s)", name, fi.Mode().Type())
	case err == nil:
		mode = fi.Mode().Perm()
	case errors.Is(err, fs.ErrNotExist):
		created = true
	default:
		return false, fileError(name, err)
	}
	dir := filepath.Dir(abs)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, fmt.Errorf("create the directories of %s: %w", name, fileError(filepath.Dir(name), err))
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(abs)+".tmp-*")
	if err != nil {
		return false, fileError(name, err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return false, fileError(name, err)
	}
	if err := tmp.Chmod(mode); err != nil {
		_ = tmp.Close()
		return false, fileError(name, err)
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return false, fileError(name, err)
	}
	if err := tmp.Close(); err != nil {
		return false, fileError(name, err)
	}
	if err := os.Rename(tmp.Name(), abs); err != nil {
		return false, fileError(name, err)
	}
	return created, nil
}
