package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nanobot-go/nanobot/agent"
)

// maxListEntries is how many entries list_dir shows.
const maxListEntries = 1000

// ListDir is the list_dir tool: the entries of one directory.
type ListDir struct{ Files }

var _ agent.Tool = ListDir{}

type listDirParams struct {
	Path string `json:"path"`
}

// Spec describes list_dir.
func (ListDir) Spec() agent.ToolSpec {
	return agent.ToolSpec{
		Name:        "list_dir",
		Description: "List a directory, sorted by name: directories end with /, files show their size, symlinks their target.",
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "Path of the directory, relative to the workspace or absolute; \".\" is the workspace."}
  },
  "required": ["path"],
  "additionalProperties": false
}`),
	}
}

// Run lists the directory.
func (t ListDir) Run(_ context.Context, args json.RawMessage) (string, error) {
	var p listDirParams
	if err := decodeArgs(args, &p); err != nil {
		return "", err
	}
	if strings.TrimSpace(p.Path) == "" {
		p.Path = "."
	}
	abs, err := t.resolve(p.Path)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", fileError(p.Path, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%s is a file (%d bytes), not a directory; use read_file to read it", p.Path, fi.Size())
	}
	entries, err := os.ReadDir(abs)
	if err != nil {
		return "", fileError(p.Path, err)
	}
	if len(entries) == 0 {
		return fmt.Sprintf("%s is empty", p.Path), nil
	}
	// os.ReadDir sorts by file name already; sort again in case that changes.
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	var sb strings.Builder
	for i, e := range entries {
		if i == maxListEntries {
			fmt.Fprintf(&sb, "… [%d more entries not shown]\n", len(entries)-i)
			break
		}
		sb.WriteString(describeEntry(abs, e))
		sb.WriteByte('\n')
	}
	return strings.TrimSuffix(sb.String(), "\n"), nil
}

// describeEntry renders one line of a listing.
func describeEntry(dir string, e fs.DirEntry) string {
	name := e.Name()
	switch t := e.Type(); {
	case t.IsDir():
		return name + "/"
	case t&fs.ModeSymlink != 0:
		target, err := os.Readlink(filepath.Join(dir, name))
		if err != nil {
			return name + " -> ? (symlink)"
		}
		if fi, err := os.Stat(filepath.Join(dir, name)); err == nil && fi.IsDir() {
			return fmt.Sprintf("%s/ -> %s (symlink)", name, target)
		}
		return fmt.Sprintf("%s -> %s (symlink)", name, target)
	case t.IsRegular():
		fi, err := e.Info()
		if err != nil {
			return name
		}
		return fmt.Sprintf("%s  (%s)", name, humanSize(fi.Size()))
	default:
		return fmt.Sprintf("%s  (%s)", name, t.String())
	}
}

// humanSize renders a byte count the way a person reads it.
func humanSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d bytes", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %cB", float64(n)/float64(div), "KMGTP"[exp])
}
