package config

import (
	"cmp"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/nanobot-go/nanobot/internal/lazyre"
)

// SetKeys returns src with the values of existing dotted keys replaced, leaving every other byte
// (comments, order, layout) as it was. Values are given as text and written as the key's type needs:
// "provider.model" → "gpt-4.1", "channels.telegram.enabled" → "true", "channels.telegram.allow_from" →
// "[123, @alice]" (or "123, @alice"), "tools.exec.categories" → "{package_install: allow}". A value
// holding ${VAR} is written as a string, to be expanded when the file is loaded.
//
// A key must already be in src with its value on one line (as in the example config.yaml); SetKeys does
// not add keys or rewrite block lists.
func SetKeys(src []byte, values map[string]string) ([]byte, error) {
	root, perr := parseYAML("config", src)
	if perr != nil {
		return nil, fmt.Errorf("parse config: %w", perr)
	}
	lines := strings.SplitAfter(string(src), "\n")
	type edit struct {
		key              string
		line, start, end int // 0-based line, byte offsets in it
		text             string
		want             []string // what the key must hold once edited
	}
	var edits []edit
	for _, key := range slices.Sorted(maps.Keys(values)) {
		t, err := keyType(key)
		if err != nil {
			return nil, err
		}
		kn, vn, err := findKey(root, key)
		if err != nil {
			return nil, err
		}
		text, want, err := render(t, values[key], inFlow(root, key))
		if err != nil {
			return nil, fmt.Errorf("set %s: %w", key, err)
		}
		line, start, end, err := valueSpan(lines, kn, vn)
		if err != nil {
			return nil, fmt.Errorf("set %s: line %d: %w", key, vn.Line, err)
		}
		if start == end { // an empty value: `key:` followed by nothing
			text = " " + text
		}
		edits = append(edits, edit{key, line, start, end, text, want})
	}
	// Right to left, bottom to top, so that offsets of the edits still to do stay valid.
	slices.SortFunc(edits, func(a, b edit) int {
		return cmp.Or(cmp.Compare(b.line, a.line), cmp.Compare(b.start, a.start))
	})
	for _, e := range edits {
		l := lines[e.line]
		rest := l[e.end:]
		if trimmed := strings.TrimLeft(rest, " "); strings.HasPrefix(trimmed, "#") {
			// Keep the comment in its column when there is room, as the example aligns them.
			gap := len(rest) - len(trimmed) + utf8.RuneCountInString(l[e.start:e.end]) - utf8.RuneCountInString(e.text)
			rest = strings.Repeat(" ", max(gap, 1)) + trimmed
		}
		lines[e.line] = l[:e.start] + e.text + rest
	}
	out := strings.Join(lines, "")

	root, perr = parseYAML("config", []byte(out))
	if perr != nil {
		return nil, fmt.Errorf("edited config does not parse: %w", perr)
	}
	for _, e := range edits {
		_, vn, err := findKey(root, e.key)
		if err != nil || !slices.Equal(nodeValues(vn), e.want) {
			return nil, fmt.Errorf("set %s: the edited file does not hold the new value", e.key)
		}
	}
	return []byte(out), nil
}

// keyType returns the Go type of the value at a dotted key of Config.
func keyType(key string) (reflect.Type, error) {
	t := reflect.TypeFor[Config]()
	parts := strings.Split(key, ".")
	for i, p := range parts {
		if t.Kind() != reflect.Struct || t == durationType {
			return nil, fmt.Errorf("set %s: %s holds a value, not keys", key, strings.Join(parts[:i], "."))
		}
		f, ok := fieldByName(t, p)
		if !ok {
			return nil, fmt.Errorf("set %s: unknown key%s", key, suggest(p, fieldNames(t)))
		}
		t = f.Type
	}
	if t.Kind() == reflect.Pointer { // an optional value
		t = t.Elem()
	}
	if t.Kind() == reflect.Struct && t != durationType {
		return nil, fmt.Errorf("set %s: is a section, not a value", key)
	}
	return t, nil
}

// render turns text into YAML for a value of type t, and returns what the parsed node will hold. flow
// tells that the value sits inside {...} or [...], where commas and colons end a plain scalar.
func render(t reflect.Type, val string, flow bool) (text string, want []string, err error) {
	if !utf8.ValidString(val) {
		return "", nil, fmt.Errorf("value is not valid UTF-8")
	}
	v := strings.TrimSpace(val)
	isCollection := t.Kind() == reflect.Slice || t.Kind() == reflect.Map
	switch {
	case flow && !isCollection && (t.Kind() == reflect.String || strings.Contains(val, "${")):
		return flowScalar(val), []string{val}, nil
	case strings.Contains(val, "${") && !isCollection:
		return yamlString(val), []string{val}, nil
	case t == durationType:
		if _, err := time.ParseDuration(v); err != nil {
			return "", nil, fmt.Errorf("invalid duration %q: use a number with a unit, like 30s, 5m or 1h", val)
		}
		return v, []string{v}, nil
	case t.Kind() == reflect.String:
		return yamlString(val), []string{val}, nil
	case t.Kind() == reflect.Bool:
		s := strings.ToLower(v)
		if s != "true" && s != "false" {
			return "", nil, fmt.Errorf("must be true or false, not %q", val)
		}
		return s, []string{s}, nil
	case t.Kind() == reflect.Int, t.Kind() == reflect.Int64:
		i, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return "", nil, fmt.Errorf("must be a whole number, not %q", val)
		}
		s := strconv.FormatInt(i, 10)
		return s, []string{s}, nil
	case t.Kind() == reflect.Float64:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f != f || f > 1e300 || f < -1e300 {
			return "", nil, fmt.Errorf("must be a number, not %q", val)
		}
		s := strconv.FormatFloat(f, 'g', -1, 64)
		return s, []string{s}, nil
	case t.Kind() == reflect.Slice:
		items, err := parseFlow(v, yaml.SequenceNode, "[", ",")
		if err != nil {
			return "", nil, err
		}
		parts := make([]string, len(items))
		for i, it := range items {
			parts[i] = strconv.Quote(it)
			if numeric.MatchString(it) {
				parts[i] = it
			}
		}
		return "[" + strings.Join(parts, ", ") + "]", items, nil
	case t.Kind() == reflect.Map:
		kv, err := parseFlow(v, yaml.MappingNode, "{", "")
		if err != nil {
			return "", nil, err
		}
		parts := make([]string, 0, len(kv)/2)
		for i := 0; i+1 < len(kv); i += 2 {
			parts = append(parts, flowScalar(kv[i])+": "+flowScalar(kv[i+1]))
		}
		return "{" + strings.Join(parts, ", ") + "}", kv, nil
	}
	return "", nil, fmt.Errorf("cannot set a %s", t)
}

var (
	numeric = lazyre.New(`^-?[0-9]+$`)
	word    = lazyre.New(`^[A-Za-z_][A-Za-z0-9_.-]*$`)
)

// yamlString writes s as a one-line YAML string: plain when YAML reads it back as that string, quoted
// otherwise.
func yamlString(s string) string {
	out, err := yaml.Marshal(s)
	text := strings.TrimSuffix(string(out), "\n")
	if err != nil || strings.Contains(text, "\n") || strings.HasPrefix(text, "|") || strings.HasPrefix(text, ">") {
		return strconv.Quote(s) // Go's escapes are a subset of YAML's double-quoted ones
	}
	return text
}

// flowScalar writes s for use inside [...] or {...}, where commas and brackets end a plain scalar.
func flowScalar(s string) string {
	if word.MatchString(s) && (&yaml.Node{Kind: yaml.ScalarNode, Value: s}).ShortTag() == "!!str" {
		return s
	}
	return strconv.Quote(s)
}

// parseFlow reads a list ("[a, b]" or "a, b") or a mapping ("{a: b}") of scalars; a mapping comes back
// as key, value, key, value.
func parseFlow(v string, kind yaml.Kind, open, sep string) ([]string, error) {
	what := map[yaml.Kind]string{yaml.SequenceNode: "a list like [a, b]", yaml.MappingNode: "a mapping like {a: b}"}[kind]
	switch {
	case v == "":
		return []string{}, nil
	case !strings.HasPrefix(v, open) && sep != "":
		var items []string
		for it := range strings.SplitSeq(v, sep) {
			if it = strings.TrimSpace(it); it != "" {
				items = append(items, it)
			}
		}
		return items, nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(v), &doc); err != nil || len(doc.Content) != 1 || doc.Content[0].Kind != kind {
		return nil, fmt.Errorf("must be %s, not %q", what, v)
	}
	items := []string{}
	for _, n := range doc.Content[0].Content {
		if n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" {
			return nil, fmt.Errorf("must be %s of plain values, not %q", what, v)
		}
		items = append(items, n.Value)
	}
	return items, nil
}

// findKey returns the key and value nodes of a dotted key.
func findKey(root *yaml.Node, key string) (kn, vn *yaml.Node, err error) {
	vn = root
	for p := range strings.SplitSeq(key, ".") {
		if vn == nil || vn.Kind != yaml.MappingNode {
			return nil, nil, fmt.Errorf("set %s: the key is not in the file", key)
		}
		var found bool
		for i := 0; i+1 < len(vn.Content); i += 2 {
			if vn.Content[i].Kind == yaml.ScalarNode && vn.Content[i].Value == p {
				kn, vn, found = vn.Content[i], vn.Content[i+1], true
				break
			}
		}
		if !found {
			return nil, nil, fmt.Errorf("set %s: the key is not in the file", key)
		}
	}
	return kn, vn, nil
}

// inFlow reports whether the value of key sits inside a flow collection ({...} or [...]).
func inFlow(root *yaml.Node, key string) bool {
	parts := strings.Split(key, ".")
	for i := range parts {
		_, parent, err := findKey(root, strings.Join(parts[:i], "."))
		if i == 0 {
			parent, err = root, nil
		}
		if err == nil && parent.Style&yaml.FlowStyle != 0 {
			return true
		}
	}
	return false
}

// nodeValues is what a value node holds: its scalar, its items, or its keys and values in turn.
func nodeValues(n *yaml.Node) []string {
	if n.Kind == yaml.ScalarNode {
		return []string{n.Value}
	}
	out := []string{}
	for _, c := range n.Content {
		out = append(out, c.Value)
	}
	return out
}

// valueSpan locates the text of the value vn of key kn: its line and byte offsets in it.
func valueSpan(lines []string, kn, vn *yaml.Node) (line, start, end int, err error) {
	if vn.Kind == yaml.AliasNode || vn.Anchor != "" || vn.Style&yaml.TaggedStyle != 0 {
		return 0, 0, 0, fmt.Errorf("a value with an anchor, alias or tag cannot be set")
	}
	if vn.Kind == yaml.ScalarNode && vn.Value == "" && vn.ShortTag() == "!!null" {
		// `key:` with nothing after it: insert after the colon.
		line = kn.Line - 1
		if line < 0 || line >= len(lines) {
			return 0, 0, 0, fmt.Errorf("cannot locate the key")
		}
		l := lines[line]
		ks := byteOffset(l, kn.Column)
		ke, err := scalarEnd(l, ks, kn)
		if err != nil {
			return 0, 0, 0, err
		}
		colon := ke + strings.IndexByte(l[ke:], ':')
		if colon < ke || strings.TrimSpace(l[ke:colon]) != "" {
			return 0, 0, 0, fmt.Errorf("cannot locate the colon after the key")
		}
		return line, colon + 1, colon + 1, nil
	}
	line = vn.Line - 1
	if line < 0 || line >= len(lines) {
		return 0, 0, 0, fmt.Errorf("cannot locate the value")
	}
	l := lines[line]
	start = byteOffset(l, vn.Column)
	switch {
	case vn.Kind == yaml.ScalarNode:
		end, err = scalarEnd(l, start, vn)
	case vn.Style&yaml.FlowStyle != 0:
		end, err = flowEnd(l, start)
	default:
		err = fmt.Errorf("the value is written as a block over several lines; write it on one line, like [a, b], to set it")
	}
	return line, start, end, err
}

// byteOffset converts yaml's 1-based column, counted in characters, to a byte offset in line.
func byteOffset(line string, col int) int {
	off := 0
	for i := 1; i < col && off < len(line); i++ {
		_, size := utf8.DecodeRuneInString(line[off:])
		off += size
	}
	return off
}

func scalarEnd(l string, start int, n *yaml.Node) (int, error) {
	multi := fmt.Errorf("the value spans several lines")
	switch {
	case n.Style&yaml.DoubleQuotedStyle != 0:
		if start >= len(l) || l[start] != '"' {
			return 0, multi
		}
		for i := start + 1; i < len(l); i++ {
			switch l[i] {
			case '\\':
				i++
			case '"':
				return i + 1, nil
			}
		}
		return 0, multi
	case n.Style&yaml.SingleQuotedStyle != 0:
		if start >= len(l) || l[start] != '\'' {
			return 0, multi
		}
		for i := start + 1; i < len(l); i++ {
			if l[i] == '\'' {
				if i+1 < len(l) && l[i+1] == '\'' {
					i++
					continue
				}
				return i + 1, nil
			}
		}
		return 0, multi
	case n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0:
		return 0, fmt.Errorf("a block scalar (| or >) cannot be set; write the value on one line")
	}
	if !strings.HasPrefix(l[start:], n.Value) {
		return 0, multi
	}
	return start + len(n.Value), nil
}

// flowEnd finds the end of a [...] or {...} that starts at start and closes on the same line.
func flowEnd(l string, start int) (int, error) {
	depth := 0
	var quote byte
	for i := start; i < len(l); i++ {
		c := l[i]
		switch {
		case quote == '"' && c == '\\':
			i++
		case quote != 0:
			if c == quote {
				if quote == '\'' && i+1 < len(l) && l[i+1] == '\'' {
					i++
				} else {
					quote = 0
				}
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '[' || c == '{':
			depth++
		case c == ']' || c == '}':
			depth--
			if depth == 0 {
				return i + 1, nil
			}
		case c == '#' && i > 0 && (l[i-1] == ' ' || l[i-1] == '\t'):
			return 0, fmt.Errorf("the value spans several lines")
		}
	}
	return 0, fmt.Errorf("the value spans several lines")
}
