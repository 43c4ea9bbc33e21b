package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/nanobot-go/nanobot/internal/lazyre"
)

// maxFileSize bounds what Load reads: a config file is a few kilobytes.
const maxFileSize = 1 << 20

// source remembers where the keys of a loaded file were written, for errors found after decoding.
type source struct {
	file  string              // the path as given
	lines map[string]int      // dotted key → line of the key
	refs  map[string][]string // dotted key → environment variables its value referenced
}

// line returns the line of key or, when the file does not set it, of its closest parent.
func (s *source) line(key string) int {
	if s == nil {
		return 0
	}
	for k := key; k != ""; {
		if l, ok := s.lines[k]; ok {
			return l
		}
		i := strings.LastIndexAny(k, ".[")
		if i < 0 {
			break
		}
		k = k[:i]
	}
	return 0
}

// Load reads the config file at path: Default(), then the file with ${VAR} and ${VAR:-default} expanded
// from the process environment, decoded strictly, then Validate. Every problem is an *Error naming the
// file, line and key; several problems come joined with errors.Join, one per line, in line order.
func Load(path string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &Error{File: path, Problem: readProblem(err)}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, &Error{File: path, Problem: readProblem(err)}
	}
	if len(data) > maxFileSize {
		return nil, &Error{File: path, Problem: fmt.Sprintf("file is larger than %d bytes", maxFileSize)}
	}
	return Parse(path, data, os.LookupEnv)
}

func readProblem(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err // the path is already the prefix of the message
	}
	return "cannot read: " + err.Error()
}

// Parse is Load for data already in memory. file names the file in errors and anchors relative paths
// (it need not exist); env looks variables up, as os.LookupEnv does.
func Parse(file string, data []byte, env func(string) (string, bool)) (*Config, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, &Error{File: file, Problem: err.Error()}
	}
	c := Default()
	c.Path = abs
	c.src = &source{file: file, lines: map[string]int{}, refs: map[string][]string{}}

	root, perr := parseYAML(file, data)
	if perr != nil {
		return nil, perr
	}
	d := &decoder{src: c.src, raw: map[*yaml.Node]string{}, bad: map[*yaml.Node]bool{}}
	if root != nil {
		d.expand(root, "", env)
		d.decode("", root, c)
	}
	d.errs = append(d.errs, c.normalize(filepath.Dir(abs), env)...)
	failed := map[string]bool{}
	for _, e := range d.errs {
		failed[e.Key] = true
	}
	for _, e := range c.problems() {
		if !failed[e.Key] {
			d.errs = append(d.errs, e)
		}
	}
	if err := joinErrors(d.errs); err != nil {
		return nil, err
	}
	return c, nil
}

// parseYAML returns the top node of the single document in data, nil for an empty file.
func parseYAML(file string, data []byte) (root *yaml.Node, err *Error) {
	defer func() {
		// The parser has a few internal panics left; a config file must never crash the daemon.
		if r := recover(); r != nil {
			root, err = nil, &Error{File: file, Problem: fmt.Sprintf("invalid YAML: %v", r)}
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if e := dec.Decode(&doc); e != nil {
		if errors.Is(e, io.EOF) {
			return nil, nil
		}
		return nil, yamlError(file, e)
	}
	var next yaml.Node
	switch e := dec.Decode(&next); {
	case errors.Is(e, io.EOF):
	case e != nil:
		return nil, yamlError(file, e)
	default:
		return nil, &Error{File: file, Line: next.Line, Problem: "only one YAML document is allowed (remove the ---)"}
	}
	if doc.Kind == yaml.DocumentNode {
		if len(doc.Content) == 0 {
			return nil, nil
		}
		return doc.Content[0], nil
	}
	return &doc, nil
}

var yamlLine = lazyre.New(`^yaml: line (\d+): (.*)$`)

// yamlError turns the parser's "yaml: line 3: could not find expected ':'" into an *Error.
func yamlError(file string, err error) *Error {
	msg := strings.ReplaceAll(err.Error(), "\n", " ")
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &Error{File: file, Line: line, Problem: "invalid YAML: " + m[2]}
	}
	return &Error{File: file, Problem: "invalid YAML: " + strings.TrimPrefix(msg, "yaml: ")}
}

// joinErrors returns nil, the only error, or all of them joined in line order.
func joinErrors(errs []*Error) error {
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	slices.SortStableFunc(errs, func(a, b *Error) int { return a.Line - b.Line })
	all := make([]error, len(errs))
	for i, e := range errs {
		all[i] = e
	}
	return errors.Join(all...)
}
