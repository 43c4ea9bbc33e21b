package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"

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
		Description: "Create a file, or replace all of it (use edit_file to change a part). Creates missing directories.",
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string"},
    "content": {"type": "string", "description": "The whole new content."}
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
	sp, err := t.locate(p.Path)
	if err != nil {
		return "", err
	}
	defer sp.Close()
	created, err := writeAtomic(sp, []byte(*p.Content))
	if err != nil {
		return "", err
	}
	verb := "wrote"
	if created {
		verb = "created"
	}
	return fmt.Sprintf("%s %s (%d bytes)", verb, p.Path, len(*p.Content)), nil
}

// writeAtomic replaces the file at sp with data through a temporary file
// and a rename, so that a reader never sees half a file, keeping the mode of
// the file it replaces. It reports whether the file is new.
//
// The parent directory is created and then held open; the checks and the
// rename happen in that directory, so what is checked is what is replaced.
// The file it replaces is never opened, so a FIFO or a device there cannot
// block or be written to.
func writeAtomic(sp spot, data []byte) (created bool, err error) {
	dirName, base := filepath.Split(sp.rel)
	if dirName = filepath.Clean(dirName); dirName != "." {
		if err := mkdirAll(sp, dirName); err != nil {
			return false, err
		}
	}
	dir, err := sp.root.OpenRoot(dirName)
	if err != nil {
		return false, fileError(sp.name, err)
	}
	defer dir.Close()
	if err := checkDir(sp, dir, base); err != nil {
		return false, err
	}
	mode := fs.FileMode(0o644)
	switch fi, err := dir.Lstat(base); {
	case err == nil && fi.IsDir():
		return false, fmt.Errorf("%s is a directory", sp.name)
	case err == nil && !fi.Mode().IsRegular():
		return false, fmt.Errorf("%s is not a regular file (%s)", sp.name, fi.Mode().Type())
	case err == nil && sp.guard.Holds(fi):
		return false, fmt.Errorf("%s: %w", sp.name, errProtected)
	case err == nil:
		mode = fi.Mode().Perm()
	case errors.Is(err, fs.ErrNotExist):
		created = true
	default:
		return false, fileError(sp.name, err)
	}
	tmpName, tmp, err := createTemp(dir, base)
	if err != nil {
		return false, fileError(sp.name, err)
	}
	defer func() {
		if err != nil {
			_ = dir.Remove(tmpName)
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return false, fileError(sp.name, err)
	}
	if err := tmp.Chmod(mode); err != nil {
		_ = tmp.Close()
		return false, fileError(sp.name, err)
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return false, fileError(sp.name, err)
	}
	if err := tmp.Close(); err != nil {
		return false, fileError(sp.name, err)
	}
	if err := dir.Rename(tmpName, base); err != nil {
		return false, fileError(sp.name, err)
	}
	return created, nil
}

// mkdirAll creates the missing directories of dir below sp's root, unless
// the deepest one that exists is in a protected folder.
func mkdirAll(sp spot, dir string) error {
	existing := dir
	for existing != "." {
		if fi, err := sp.root.Stat(existing); err == nil && fi.IsDir() {
			break
		}
		existing = filepath.Dir(existing)
	}
	if existing == dir {
		return nil
	}
	base, err := sp.root.OpenRoot(existing)
	if err != nil {
		return fmt.Errorf("create the directories of %s: %w", sp.name, fileError(filepath.Dir(sp.name), err))
	}
	defer base.Close()
	if err := sp.uncovered(base); err != nil {
		return err
	}
	if err := sp.root.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create the directories of %s: %w", sp.name, fileError(filepath.Dir(sp.name), err))
	}
	return nil
}

// checkDir refuses to create or replace base in dir, held open, when it
// is where a protected file lives or dir is in a protected folder.
func checkDir(sp spot, dir *os.Root, base string) error {
	df, err := dir.Open(".")
	if err != nil {
		return fileError(sp.name, err)
	}
	defer df.Close()
	fi, err := df.Stat()
	if err != nil {
		return fileError(sp.name, err)
	}
	if sp.guard.Names(fi, base) {
		return fmt.Errorf("%s: %w", sp.name, errProtected)
	}
	return sp.uncoveredFile(df)
}

// createTemp creates a new temporary file for base in dir, never following
// a symlink or opening a file that exists.
func createTemp(dir *os.Root, base string) (string, *os.File, error) {
	for range 100 {
		name := "." + base + ".tmp-" + strconv.FormatUint(uint64(rand.Uint32()), 10)
		f, err := dir.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return name, f, err
	}
	return "", nil, errors.New("cannot pick a name for a temporary file")
}
