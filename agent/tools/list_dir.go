package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"

	"github.com/nanobot-go/nanobot/agent"
	"golang.org/x/sys/unix"
)

// maxListEntries is how many entries list_dir shows.
const maxListEntries = 1000

// ListDir is the list_dir tool: the entries of one directory.
type ListDir struct{ Files }

var _ agent.ReadOnlyTool = ListDir{}

type listDirParams struct {
	Path string `json:"path"`
}

// ReadOnly reports that ListDir changes nothing: its calls of a
// reply run in parallel.
func (ListDir) ReadOnly() bool { return true }

// Spec describes list_dir.
func (ListDir) Spec() agent.ToolSpec {
	return agent.ToolSpec{
		Name:        "list_dir",
		Description: "List a directory by name: directories end with /, files show their size, symlinks their target.",
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "\".\" is the workspace."}
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
	sp, err := t.locate(p.Path)
	if err != nil {
		return "", err
	}
	defer sp.Close()
	dir, entries, err := readDir(sp)
	if err != nil {
		return "", err
	}
	defer dir.Close()
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
		sb.WriteString(describeEntry(dir, e))
		sb.WriteByte('\n')
	}
	return strings.TrimSuffix(sb.String(), "\n"), nil
}

// readDir opens the directory at sp and reads its entries; the entries'
// details are then read from the directory held open.
func readDir(sp spot) (*os.File, []fs.DirEntry, error) {
	fi, err := sp.root.Stat(sp.rel)
	if err != nil {
		return nil, nil, fileError(sp.name, err)
	}
	switch {
	case fi.Mode().IsRegular():
		return nil, nil, fmt.Errorf("%s is a file (%d bytes), not a directory; use read_file to read it", sp.name, fi.Size())
	case !fi.IsDir():
		return nil, nil, fmt.Errorf("%s is not a directory (%s)", sp.name, fi.Mode().Type())
	}
	dir, err := sp.root.OpenFile(sp.rel, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, fileError(sp.name, err)
	}
	if err := sp.uncoveredFile(dir); err != nil {
		_ = dir.Close()
		return nil, nil, err
	}
	entries, err := dir.ReadDir(-1)
	if err != nil {
		_ = dir.Close()
		return nil, nil, fileError(sp.name, err)
	}
	return dir, entries, nil
}

// describeEntry renders one line of a listing of dir.
func describeEntry(dir *os.File, e fs.DirEntry) string {
	name := e.Name()
	switch t := e.Type(); {
	case t.IsDir():
		return name + "/"
	case t&fs.ModeSymlink != 0:
		target, err := readlinkAt(dir, name)
		if err != nil {
			return name + " -> ? (symlink)"
		}
		if isDirAt(dir, name) {
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

// readlinkAt reads the symlink name in the open directory dir.
func readlinkAt(dir *os.File, name string) (string, error) {
	conn, err := dir.SyscallConn()
	if err != nil {
		return "", err
	}
	buf := make([]byte, 4096)
	var n int
	var opErr error
	if err := conn.Control(func(fd uintptr) { n, opErr = unix.Readlinkat(int(fd), name, buf) }); err != nil {
		return "", err
	}
	if opErr != nil {
		return "", opErr
	}
	return string(buf[:n]), nil
}

// isDirAt reports whether name in the open directory dir leads to a
// directory, following a symlink.
func isDirAt(dir *os.File, name string) bool {
	conn, err := dir.SyscallConn()
	if err != nil {
		return false
	}
	var st unix.Stat_t
	var opErr error
	if err := conn.Control(func(fd uintptr) { opErr = unix.Fstatat(int(fd), name, &st, 0) }); err != nil {
		return false
	}
	return opErr == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR
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
