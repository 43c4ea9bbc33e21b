package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/safety"
)

// Files is what the file tools share: where they work and what they may touch.
type Files struct {
	// Workspace is the directory relative paths resolve against.
	Workspace string
	// Restrict confines every path to the workspace, symlinks included.
	Restrict bool
	// Protected are absolute paths (nanobot's config, database, backup
	// folder) that no file tool may read or write, even inside the
	// workspace or unrestricted; a folder protects what lies beneath it.
	// They are recognised by identity on what an operation opened, so
	// links and swapped folders do not lead around them.
	Protected []string
	// Builtin holds read-only files that read_file serves for paths
	// starting with BuiltinPrefix (the skills built into nanobot).
	Builtin fs.FS
}

// BuiltinPrefix starts the paths read_file serves from Files.Builtin.
const BuiltinPrefix = "builtin:"

// NewFileTools returns read_file, write_file, edit_file and list_dir over f.
func NewFileTools(f Files) []agent.Tool {
	return []agent.Tool{ReadFile{f}, WriteFile{f}, EditFile{f}, ListDir{f}}
}

// errProtected is returned for nanobot's own files.
var errProtected = errors.New("this file belongs to nanobot itself (configuration or database) and is not accessible to tools")

// spot is a path the model named, ready for one operation: the directory
// the tools may reach, held open, and the resolved path beneath it. Every
// open, stat, create and rename goes through root, which walks the path
// from the held directory one component at a time and refuses a step out
// of it, so a folder swapped for a symlink between the check and the use
// cannot take the operation elsewhere.
type spot struct {
	root  *os.Root // the workspace when restricted, / otherwise
	rel   string   // the resolved path below root
	name  string   // the path as the model wrote it, for messages
	guard safety.Guard
}

// Close releases the held directory.
func (s spot) Close() error { return s.root.Close() }

// uncovered refuses the directory dir, held open, when it is or lies in a
// protected folder (the database backups).
func (s spot) uncovered(dir *os.Root) error {
	df, err := dir.Open(".")
	if err != nil {
		return fileError(s.name, err)
	}
	defer df.Close()
	return s.uncoveredFile(df)
}

// uncoveredFile is uncovered for a directory opened as a file.
func (s spot) uncoveredFile(df *os.File) error {
	covered, err := s.guard.Covers(df)
	switch {
	case err != nil:
		return fileError(s.name, err)
	case covered:
		return fmt.Errorf("%s: %w", s.name, errProtected)
	}
	return nil
}

// locate resolves path as resolve does and opens the directory the
// operation stays beneath.
func (f Files) locate(path string) (spot, error) {
	abs, err := f.resolve(path)
	if err != nil {
		return spot{}, err
	}
	base := "/"
	if f.Restrict {
		// resolve answers beneath the workspace with its symlinks resolved.
		base = realPath(f.Workspace)
	}
	rel, err := filepath.Rel(base, abs)
	if err != nil || !within(base, abs) {
		return spot{}, fmt.Errorf("%s is outside the workspace", path)
	}
	root, err := os.OpenRoot(base)
	if err != nil {
		return spot{}, fmt.Errorf("the workspace %s: %w", f.Workspace, fileError("it", err))
	}
	return spot{root: root, rel: rel, name: path, guard: safety.NewGuard(f.Protected)}, nil
}

// resolve turns the path the model gave into the absolute path to operate
// on, with symlinks resolved, refusing what lies outside the workspace (when
// restricted) and nanobot's own files. It only checks names: the operation
// itself runs beneath the directory locate opens and checks what it opened.
func (f Files) resolve(path string) (string, error) {
	if strings.TrimSpace(path) == "" {
		return "", errors.New(`"path" is required`)
	}
	if strings.ContainsRune(path, 0) {
		return "", errors.New("path contains a NUL byte")
	}
	ws, err := filepath.Abs(f.Workspace)
	if err != nil {
		return "", fmt.Errorf("workspace: %w", err)
	}
	abs := path
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(ws, abs)
	}
	abs = filepath.Clean(abs)
	if f.Restrict {
		// Confine resolves relative paths itself, the way the kernel would.
		confined, err := safety.Confine(ws, path, f.Protected)
		if err != nil {
			return "", fmt.Errorf("%w (file tools are restricted to the workspace %s)", err, ws)
		}
		// The policy's answer is checked once more against the resolved
		// workspace, so that a mistake there cannot open the whole disk.
		if !within(realPath(ws), realPath(confined)) {
			return "", fmt.Errorf("%s is outside the workspace %s", path, ws)
		}
		abs = confined
	} else {
		abs = realPath(abs)
	}
	if f.protected(abs) {
		return "", fmt.Errorf("%s: %w", path, errProtected)
	}
	return abs, nil
}

// protected reports whether abs, with symlinks resolved, is one of the
// protected files, a hard link to one, or a database's journal.
func (f Files) protected(abs string) bool {
	real := realPath(abs)
	target, statErr := os.Stat(real)
	for _, p := range f.Protected {
		if p == "" {
			continue
		}
		pr := realPath(p)
		for _, q := range []string{filepath.Clean(p), pr} {
			if real == q || abs == q {
				return true
			}
			for _, suffix := range []string{"-wal", "-shm", "-journal"} {
				if real == q+suffix || abs == q+suffix {
					return true
				}
			}
		}
		if statErr != nil {
			continue
		}
		if pi, err := os.Stat(pr); err == nil && os.SameFile(target, pi) {
			return true
		}
	}
	return false
}

// within reports whether path is dir or lies below it.
func within(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	if err != nil {
		return false
	}
	return rel == "." || (rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel))
}

// realPath resolves the symlinks of a path component by component,
// dangling ones included, keeping the part that does not exist yet as it
// is; when that fails (a link loop, an unreadable directory) it returns the
// cleaned path.
func realPath(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	if real, err := safety.Resolve(path); err == nil {
		return real
	}
	return filepath.Clean(path)
}
