package prompt

import (
	"bytes"
	"fmt"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Skill is one SKILL.md: a folder of instructions the model reads when a
// task calls for it.
type Skill struct {
	Name        string
	Description string
	// Path is what the model passes to read_file: skills/<dir>/SKILL.md,
	// relative to the workspace, or builtin:skills/<name>/SKILL.md.
	Path string
	// File is where the skill was read from, for reports.
	File     string
	Builtin  bool
	Always   bool
	Requires Requires
	Body     string // the instructions after the front matter

	// Problem is set when the SKILL.md cannot be used as written.
	Problem *Problem
	// Missing lists the requirements this machine lacks ("bin gh").
	Missing []string
	// Overridden is set on a built-in skill that a workspace skill of the
	// same name replaces.
	Overridden bool
}

// Requires is what a skill needs from the machine.
type Requires struct {
	Bins    []string // every one on PATH
	AnyBins []string // at least one on PATH
	Env     []string // set and not empty
	OS      []string // runtime.GOOS values (OpenClaw writes win32 for windows)
}

// Problem is what is wrong with a SKILL.md, at a line of it (0 when the
// whole file is concerned).
type Problem struct {
	File string
	Line int
	Msg  string
}

func (p *Problem) Error() string {
	if p.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Msg)
	}
	return p.File + ": " + p.Msg
}

// Skill states, as `nanobot skills list` shows them.
const (
	StateAvailable   = "available"
	StateAlways      = "always"
	StateUnavailable = "unavailable"
	StateInvalid     = "invalid"
	StateOverridden  = "overridden"
)

// State says whether the skill reaches the prompt, and how.
func (s Skill) State() string {
	switch {
	case s.Problem != nil:
		return StateInvalid
	case s.Overridden:
		return StateOverridden
	case len(s.Missing) > 0:
		return StateUnavailable
	case s.Always:
		return StateAlways
	default:
		return StateAvailable
	}
}

// Usable reports whether the skill goes into the prompt.
func (s Skill) Usable() bool {
	st := s.State()
	return st == StateAvailable || st == StateAlways
}

// frontMatter holds the keys nanobot reads; others (version, license,
// allowed-tools, ...) are ignored, as published skills carry many.
type frontMatter struct {
	Name        string    `yaml:"name"`
	Description string    `yaml:"description"`
	Always      bool      `yaml:"always"`
	Requires    requires  `yaml:"requires"`
	OS          []string  `yaml:"os"`
	Metadata    yaml.Node `yaml:"metadata"`
}

type requires struct {
	Bins    []string `yaml:"bins"`
	AnyBins []string `yaml:"anyBins"`
	Env     []string `yaml:"env"`
}

// runtimeMeta is metadata.nanobot or metadata.openclaw (also spelled
// clawdbot and clawdis by older OpenClaw skills).
type runtimeMeta struct {
	Always   *bool    `yaml:"always"`
	Requires requires `yaml:"requires"`
	OS       []string `yaml:"os"`
}

var metaKeys = []string{"nanobot", "openclaw", "clawdbot", "clawdis"}

// maxNameLen bounds a skill's name: it is one line of the prompt.
const maxNameLen = 64

// parseSkill reads a SKILL.md. dir is the name of its folder, the name of
// a skill whose front matter has none; file names it in problems.
func parseSkill(data []byte, dir, file string) Skill {
	sk := Skill{Name: dir, File: file}
	fail := func(line int, format string, args ...any) Skill {
		sk.Problem = &Problem{File: file, Line: line, Msg: fmt.Sprintf(format, args...)}
		return sk
	}
	if !utf8.Valid(data) {
		return fail(0, "not UTF-8 text")
	}
	head, body, first, ok := splitFrontMatter(data)
	if !ok {
		return fail(1, "no front matter: start the file with a line ---, then name: and description:, then ---")
	}
	sk.Body = strings.TrimSpace(string(body))

	var doc yaml.Node
	if err := yaml.Unmarshal(head, &doc); err != nil {
		lenient, ok := plainFrontMatter(head)
		if !ok {
			line, msg := yamlProblem(err)
			return fail(first+line-1, "front matter: %s", msg)
		}
		doc = lenient
	}
	var fm frontMatter
	if len(doc.Content) > 0 {
		if doc.Content[0].Kind != yaml.MappingNode {
			return fail(first, "front matter must be keys and values (name: ..., description: ...)")
		}
		if err := doc.Content[0].Decode(&fm); err != nil {
			line, msg := yamlProblem(err)
			return fail(first+line-1, "front matter: %s", msg)
		}
	}
	if fm.Name = strings.TrimSpace(fm.Name); fm.Name != "" {
		sk.Name = fm.Name
	}
	if strings.ContainsAny(sk.Name, "\r\n") || utf8.RuneCountInString(sk.Name) > maxNameLen {
		return fail(first+keyLine(doc, "name")-1, "name must be one line of at most %d characters", maxNameLen)
	}
	sk.Description = strings.Join(strings.Fields(fm.Description), " ")
	if sk.Description == "" {
		return fail(first, "description is missing: it tells the model when to use the skill")
	}
	sk.Always = fm.Always
	sk.Requires = Requires{Bins: fm.Requires.Bins, AnyBins: fm.Requires.AnyBins, Env: fm.Requires.Env, OS: fm.OS}
	if fm.Metadata.Kind != 0 {
		meta, line, err := decodeMeta(&fm.Metadata)
		if err != nil {
			return fail(first+line-1, "metadata: %s", err)
		}
		if meta.Always != nil {
			sk.Always = sk.Always || *meta.Always
		}
		sk.Requires.Bins = append(sk.Requires.Bins, meta.Requires.Bins...)
		sk.Requires.AnyBins = append(sk.Requires.AnyBins, meta.Requires.AnyBins...)
		sk.Requires.Env = append(sk.Requires.Env, meta.Requires.Env...)
		sk.Requires.OS = append(sk.Requires.OS, meta.OS...)
	}
	return sk
}

// splitFrontMatter cuts "---\n<yaml>\n---\n<body>". first is the line of
// the file where the YAML starts.
func splitFrontMatter(data []byte) (head, body []byte, first int, ok bool) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	data = bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n"))
	rest, found := bytes.CutPrefix(data, []byte("---\n"))
	if !found {
		return nil, nil, 0, false
	}
	for off := 0; off <= len(rest); {
		end := bytes.IndexByte(rest[off:], '\n')
		line := rest[off:]
		if end >= 0 {
			line = rest[off : off+end]
		}
		if l := string(bytes.TrimRight(line, " \t")); l == "---" || l == "..." {
			next := len(rest)
			if end >= 0 {
				next = off + end + 1
			}
			return rest[:off], rest[next:], 2, true
		}
		if end < 0 {
			break
		}
		off += end + 1
	}
	return nil, nil, 0, false
}

// plainKey is a top-level "key: value" line of front matter.
var plainKey = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_-]*):[ \t]*(.*)$`)

// plainFrontMatter reads front matter that is not valid YAML the way many
// published skills are written and other runtimes read them: one
// "key: value" per line, the value taken as it stands (so "description:
// Use when: ..." works), indented lines continuing it. ok is false for
// anything else.
func plainFrontMatter(head []byte) (doc yaml.Node, ok bool) {
	m := &yaml.Node{Kind: yaml.MappingNode, Line: 1}
	var last *yaml.Node
	for i, line := range strings.Split(strings.TrimRight(string(head), "\n"), "\n") {
		switch kv := plainKey.FindStringSubmatch(line); {
		case strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "#"):
		case kv != nil:
			v := strings.TrimSpace(kv[2])
			if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
				v = v[1 : len(v)-1]
			}
			last = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v, Line: i + 1}
			if v == "true" || v == "false" {
				last.Tag = "!!bool"
			}
			m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: kv[1], Line: i + 1}, last)
		case last != nil && (line[0] == ' ' || line[0] == '\t'):
			last.Value = strings.TrimSpace(last.Value + " " + strings.TrimSpace(line))
		default:
			return yaml.Node{}, false
		}
	}
	return yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{m}}, true
}

// decodeMeta finds the nanobot or OpenClaw block of metadata, written as
// YAML or as a JSON string.
func decodeMeta(n *yaml.Node) (runtimeMeta, int, error) {
	var m runtimeMeta
	node := n
	if n.Kind == yaml.ScalarNode && n.Tag != "!!null" {
		var inner yaml.Node
		if err := yaml.Unmarshal([]byte(n.Value), &inner); err != nil {
			_, msg := yamlProblem(err)
			return m, n.Line, fmt.Errorf("not valid JSON or YAML: %s", msg)
		}
		if len(inner.Content) == 0 {
			return m, 0, nil
		}
		node = inner.Content[0]
		// Lines inside the string count from the string; point at the key.
		for _, c := range allNodes(node) {
			c.Line = n.Line
		}
	}
	if node.Kind != yaml.MappingNode {
		if node.Kind == yaml.ScalarNode {
			return m, 0, nil // a plain string of metadata is someone else's
		}
		return m, node.Line, fmt.Errorf("must be a mapping")
	}
	for i := 0; i+1 < len(node.Content); i += 2 {
		if !slices.Contains(metaKeys, node.Content[i].Value) {
			continue
		}
		v := node.Content[i+1]
		if err := v.Decode(&m); err != nil {
			line, msg := yamlProblem(err)
			if line == 0 {
				line = v.Line
			}
			return m, line, fmt.Errorf("%s: %s", node.Content[i].Value, msg)
		}
		return m, 0, nil
	}
	return m, 0, nil
}

func allNodes(n *yaml.Node) []*yaml.Node {
	out := []*yaml.Node{n}
	for _, c := range n.Content {
		out = append(out, allNodes(c)...)
	}
	return out
}

var yamlLine = regexp.MustCompile(`line (\d+): (.*)`)

// yamlProblem turns a yaml.v3 error into the line it names (1-based within
// the parsed text; 0 when none) and its message.
func yamlProblem(err error) (int, string) {
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n, strings.TrimSpace(m[2])
	}
	return 0, strings.TrimPrefix(msg, "yaml: ")
}

// keyLine is the line of a top-level key of the front matter, or 1.
func keyLine(doc yaml.Node, key string) int {
	if len(doc.Content) == 0 {
		return 1
	}
	m := doc.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i].Line
		}
	}
	return 1
}

// check fills in what the machine lacks of the skill's requirements.
func (s *Skill) check(lookPath func(string) (string, error), getenv func(string) string) {
	s.Missing = nil
	for _, b := range s.Requires.Bins {
		if _, err := lookPath(b); err != nil {
			s.Missing = append(s.Missing, "bin "+b)
		}
	}
	if len(s.Requires.AnyBins) > 0 && !slices.ContainsFunc(s.Requires.AnyBins, func(b string) bool {
		_, err := lookPath(b)
		return err == nil
	}) {
		s.Missing = append(s.Missing, "one of bins "+strings.Join(s.Requires.AnyBins, ", "))
	}
	for _, e := range s.Requires.Env {
		if getenv(e) == "" {
			s.Missing = append(s.Missing, "env "+e)
		}
	}
	if len(s.Requires.OS) > 0 && !slices.ContainsFunc(s.Requires.OS, func(o string) bool {
		return o == runtime.GOOS || o == "win32" && runtime.GOOS == "windows"
	}) {
		s.Missing = append(s.Missing, "os "+strings.Join(s.Requires.OS, " or ")+" (this is "+runtime.GOOS+")")
	}
}
