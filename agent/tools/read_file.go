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
	"strings"
	"unicode/utf8"

	"github.com/nanobot-go/nanobot/agent"
)

// maxReadBytes is how much of a file read_file returns.
const maxReadBytes = 256 << 10

// ReadFile is the read_file tool: the text of one file.
type ReadFile struct{ Files }

var _ agent.Tool = ReadFile{}

type readFileParams struct {
	Path string `json:"path"`
}

// Spec describes read_file.
func (ReadFile) Spec() agent.ToolSpec {
	return agent.ToolSpec{
		Name:        "read_file",
		Description: "Read a text file. Relative paths are relative to the workspace. Large files are cut after 256 KB.",
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "Path of the file, relative to the workspace or absolute."}
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
	abs, err := t.resolve(p.Path)
	if err != nil {
		return "", err
	}
	data, size, err := readText(abs, p.Path, maxReadBytes)
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

// readText reads at most limit bytes of the text file at abs (named as the
// model named it), cut at a character boundary, and returns its full size.
func readText(abs, name string, limit int64) ([]byte, int64, error) {
	fh, err := os.Open(abs)
	if err != nil {
		return nil, 0, fileError(name, err)
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, 0, fileError(name, err)
	}
	if fi.IsDir() {
		return nil, 0, fmt.Errorf("%s is a directory; use list_dir to see what it holds", name)
	}
	if !fi.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("%s is not a regular file (%s)", name, fi.Mode().Type())
	}
	data, err := io.ReadAll(io.LimitReader(fh, limit))
	if err != nil {
		return nil, 0, fileError(name, err)
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return nil, 0, fmt.Errorf("%s looks like a binary file (%d bytes); only text files can be read", name, fi.Size())
	}
	size := max(fi.Size(), int64(len(data)))
	if size > int64(len(data)) {
		data = trimPartialRune(data)
	}
	return data, size, nil
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
