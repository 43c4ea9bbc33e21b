package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/nanobot-go/nanobot/agent"
)

// maxReadBytes is how much of a file read_file returns.
const maxReadBytes = 256 << 10

// ReadFile is the read_file tool: the text of one file.
type ReadFile struct{ Files }

var _ agent.ReadOnlyTool = ReadFile{}

type readFileParams struct {
	Path string `json:"path"`
}

// ReadOnly reports that ReadFile changes nothing: its calls of a
// reply run in parallel.
func (ReadFile) ReadOnly() bool { return true }

// Spec describes read_file.
func (ReadFile) Spec() agent.ToolSpec {
	return agent.ToolSpec{
		Name:        "read_file",
		Description: "Read a text file (cut after 256 KB).",
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string"}
  },
  "required": ["path"],
  "additionalProperties": false
}`),
	}
}

// Run returns the file's text.
func (t ReadFile) Run(_ context.Context, args json.RawMessage) (string, error) {
	var p readFileParams
	if err := decodeArgs(args, &p); err != nil {
		return "", err
	}
	if name, ok := strings.CutPrefix(p.Path, BuiltinPrefix); ok && t.Builtin != nil {
		data, err := fs.ReadFile(t.Builtin, path.Clean(name))
		if err != nil {
			return "", fileError(p.Path, err)
		}
		return string(data), nil
	}
	sp, err := t.locate(p.Path)
	if err != nil {
		return "", err
	}
	defer sp.Close()
	data, size, err := readText(sp, maxReadBytes)
	if err != nil {
		return "", err
	}
	if size > int64(len(data)) {
		return fmt.Sprintf("%s\n… [file is %d bytes; only the first %d are shown]", data, size, len(data)), nil
	}
	if len(data) == 0 {
		return "(empty file)", nil
	}
	return string(data), nil
}

// readText reads at most limit bytes of the text file at sp, cut at a
// character boundary, and returns its full size.
func readText(sp spot, limit int64) ([]byte, int64, error) {
	fh, fi, err := openRegular(sp)
	if err != nil {
		return nil, 0, err
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, limit))
	if err != nil {
		return nil, 0, fileError(sp.name, err)
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return nil, 0, fmt.Errorf("%s looks like a binary file (%d bytes); only text files can be read", sp.name, fi.Size())
	}
	size := max(fi.Size(), int64(len(data)))
	if size > int64(len(data)) {
		data = trimPartialRune(data)
	}
	return data, size, nil
}

// openRegular opens the regular file at sp for reading. It refuses
// anything else (a directory, a FIFO, a device, a socket) and the
// protected files, judged on the descriptors it opened: the file's, and
// its folder's, held open while the file is opened in it. A FIFO is opened
// without waiting for a writer, so that it is refused instead of hanging.
func openRegular(sp spot) (*os.File, fs.FileInfo, error) {
	// A look first, so that a device is not even opened in the usual case.
	if fi, err := sp.root.Stat(sp.rel); err == nil {
		if err := regular(sp.name, fi); err != nil {
			return nil, nil, err
		}
	}
	dirName, base := filepath.Split(sp.rel)
	dir, err := sp.root.OpenRoot(filepath.Clean(dirName))
	if err != nil {
		return nil, nil, fileError(sp.name, err)
	}
	defer dir.Close()
	fh, err := dir.OpenFile(base, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, fileError(sp.name, err)
	}
	fi, err := fh.Stat()
	if err != nil {
		err = fileError(sp.name, err)
	} else {
		err = regular(sp.name, fi)
	}
	if err == nil && sp.guard.Holds(fi) {
		err = fmt.Errorf("%s: %w", sp.name, errProtected)
	}
	if err == nil {
		err = sp.uncovered(dir)
	}
	if err != nil {
		_ = fh.Close()
		return nil, nil, err
	}
	return fh, fi, nil
}

// regular refuses what read_file cannot read.
func regular(name string, fi fs.FileInfo) error {
	switch {
	case fi.IsDir():
		return fmt.Errorf("%s is a directory; use list_dir to see what it holds", name)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file (%s)", name, fi.Mode().Type())
	}
	return nil
}

// trimPartialRune drops an incomplete UTF-8 sequence at the end of b.
func trimPartialRune(b []byte) []byte {
	for i := 1; i <= utf8.UTFMax && i <= len(b); i++ {
		if utf8.RuneStart(b[len(b)-i]) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			break
		}
	}
	return b
}

// fileError words a file system error for the model without the absolute
// paths the operating system puts in it.
func fileError(name string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s does not exist", name)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%s: permission denied", name)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %s: %w", name, pe.Op, pe.Err)
	}
	return fmt.Errorf("%s: %w", name, err)
}
