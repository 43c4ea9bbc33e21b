package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/nanobot-go/nanobot/agent"
)

// maxEditBytes is the largest file edit_file changes.
const maxEditBytes = 8 << 20

// EditFile is the edit_file tool: replace one exact piece of a file.
type EditFile struct{ Files }

var _ agent.Tool = EditFile{}

type editFileParams struct {
	Path    string  `json:"path"`
	OldText string  `json:"old_text"`
	NewText *string `json:"new_text"`
}

// Spec describes edit_file.
func (EditFile) Spec() agent.ToolSpec {
	return agent.ToolSpec{
		Name:        "edit_file",
		Description: "Replace text in a file. old_text must occur exactly once, whitespace included; add surrounding lines to make it unique.",
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string"},
    "old_text": {"type": "string"},
    "new_text": {"type": "string", "description": "Empty deletes old_text."}
  },
  "required": ["path", "old_text", "new_text"],
  "additionalProperties": false
}`),
	}
}

// Run edits the file.
func (t EditFile) Run(_ context.Context, args json.RawMessage) (string, error) {
	var p editFileParams
	if err := decodeArgs(args, &p); err != nil {
		return "", err
	}
	switch {
	case p.OldText == "":
		return "", errors.New(`"old_text" is required and must not be empty; to replace the whole file use write_file`)
	case p.NewText == nil:
		return "", errors.New(`"new_text" is required (use "" to delete old_text)`)
	case p.OldText == *p.NewText:
		return "", errors.New("old_text and new_text are the same; nothing to change")
	}
	sp, err := t.locate(p.Path)
	if err != nil {
		return "", err
	}
	defer sp.Close()
	data, size, err := readText(sp, maxEditBytes+1)
	if err != nil {
		return "", err
	}
	if size > maxEditBytes {
		return "", fmt.Errorf("%s is %d bytes, too large to edit (limit %d)", p.Path, size, maxEditBytes)
	}
	content := string(data)
	oldText, newText := p.OldText, *p.NewText
	n := strings.Count(content, oldText)
	if n == 0 && strings.Contains(content, "\r\n") && !strings.Contains(oldText, "\r\n") {
		// The model writes "\n" for a file with Windows line endings.
		crlf := strings.ReplaceAll(oldText, "\n", "\r\n")
		if c := strings.Count(content, crlf); c > 0 {
			oldText, newText, n = crlf, strings.ReplaceAll(newText, "\n", "\r\n"), c
		}
	}
	switch {
	case n == 0:
		return "", notFound(p.Path, content, oldText)
	case n > 1:
		return "", fmt.Errorf("old_text occurs %d times in %s (at lines %s); include more surrounding lines so that it matches exactly once",
			n, p.Path, matchLines(content, oldText, 10))
	}
	if _, err := writeAtomic(sp, []byte(strings.Replace(content, oldText, newText, 1))); err != nil {
		return "", err
	}
	line := strings.Count(content[:strings.Index(content, oldText)], "\n") + 1
	return fmt.Sprintf("edited %s: replaced %d line(s) at line %d with %d line(s)",
		p.Path, strings.Count(oldText, "\n")+1, line, strings.Count(newText, "\n")+1), nil
}

// notFound explains a missing old_text, with a hint when it only differs in
// surrounding whitespace.
func notFound(name, content, oldText string) error {
	hint := "read the file again and copy the exact text, including whitespace and indentation"
	if trimmed := strings.TrimSpace(oldText); trimmed != "" && trimmed != oldText && strings.Contains(content, trimmed) {
		hint = "the text without its leading/trailing whitespace does occur; copy the surrounding whitespace exactly"
	}
	return fmt.Errorf("old_text was not found in %s; %s", name, hint)
}

// matchLines lists the line numbers of the first max occurrences of sub.
func matchLines(content, sub string, max int) string {
	var lines []string
	line, off := 1, 0
	for len(lines) < max {
		i := strings.Index(content[off:], sub)
		if i < 0 {
			break
		}
		line += strings.Count(content[off:off+i], "\n")
		lines = append(lines, fmt.Sprint(line))
		line += strings.Count(sub, "\n")
		off += i + len(sub)
	}
	return strings.Join(lines, ", ")
}
