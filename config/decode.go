package config

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/nanobot-go/nanobot/internal/typo"
)

// decoder walks yaml.Node trees into Config by reflection over the yaml tags, so that every problem has a
// line and a full dotted key, and nothing unknown is skipped.
type decoder struct {
	src  *source
	raw  map[*yaml.Node]string // scalars changed by ${VAR} expansion → their text as written
	bad  map[*yaml.Node]bool   // scalars whose expansion failed
	errs []*Error
}

func (d *decoder) fail(line int, key, format string, args ...any) {
	d.errs = append(d.errs, &Error{File: d.src.file, Line: line, Key: key, Problem: fmt.Sprintf(format, args...)})
}

// expand replaces ${VAR} and ${VAR:-default} in every scalar value (never in keys or comments) in place,
// so the line numbers of the tree stay those of the file.
func (d *decoder) expand(n *yaml.Node, key string, env func(string) (string, bool)) {
	switch n.Kind {
	case yaml.ScalarNode:
		if !strings.Contains(n.Value, "$") {
			return
		}
		v, vars, err := expandString(n.Value, env)
		if err != nil {
			d.fail(n.Line, key, "%v", err)
			d.bad[n] = true // reported once; decoding it would only add a confusing second error
			return
		}
		if len(vars) > 0 {
			d.src.refs[key] = append(d.src.refs[key], vars...)
		}
		if v != n.Value {
			d.raw[n] = n.Value
			n.Value = v
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			d.expand(n.Content[i+1], join(key, n.Content[i].Value), env)
		}
	case yaml.SequenceNode:
		for i, item := range n.Content {
			d.expand(item, fmt.Sprintf("%s[%d]", key, i), env)
		}
	}
}

// expandString expands ${VAR} and ${VAR:-default} (the default applies when VAR is unset or empty).
// "$${" stands for a literal "${"; any other "$" is left alone.
func expandString(s string, env func(string) (string, bool)) (out string, vars []string, err error) {
	var b strings.Builder
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "$${"):
			b.WriteString("${")
			i += 3
		case strings.HasPrefix(s[i:], "${"):
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				return "", nil, fmt.Errorf("unterminated ${ (write $${ for a literal ${)")
			}
			expr := s[i+2 : i+2+end]
			name, def, hasDef := strings.Cut(expr, ":-")
			if !validVarName(name) {
				return "", nil, fmt.Errorf("invalid variable reference ${%s}: use ${NAME} or ${NAME:-default}", expr)
			}
			vars = append(vars, name)
			v, _ := env(name)
			if v == "" && hasDef {
				v = def
			}
			b.WriteString(v)
			i += 2 + end + 1
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String(), vars, nil
}

func validVarName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

var (
	durationType = reflect.TypeFor[time.Duration]()
	secretType   = reflect.TypeFor[Secret]()
)

// decode stores node n, found at key, into v (a pointer or addressable value), reporting what does not fit.
func (d *decoder) decode(key string, n *yaml.Node, into any) {
	d.value(key, n, reflect.ValueOf(into).Elem())
}

func (d *decoder) value(key string, n *yaml.Node, v reflect.Value) {
	n = resolveAlias(n)
	if n == nil || d.bad[n] {
		return
	}
	switch {
	case v.Type() == durationType:
		d.duration(key, n, v)
	case v.Kind() == reflect.Struct:
		d.mapping(key, n, v)
	case v.Kind() == reflect.String:
		if s, ok := d.scalar(key, n, "a string"); ok {
			v.SetString(s)
		}
	case v.Kind() == reflect.Bool:
		d.bool(key, n, v)
	case v.Kind() == reflect.Int, v.Kind() == reflect.Int64:
		d.int(key, n, v)
	case v.Kind() == reflect.Float64:
		d.float(key, n, v)
	case v.Kind() == reflect.Pointer: // an optional value: null or empty leaves it unset
		if isNull(n) {
			v.SetZero()
			return
		}
		p := reflect.New(v.Type().Elem())
		before := len(d.errs)
		d.value(key, n, p.Elem())
		if len(d.errs) == before {
			v.Set(p)
		}
	case v.Kind() == reflect.Slice:
		d.list(key, n, v)
	case v.Kind() == reflect.Map:
		d.dict(key, n, v)
	default:
		panic("config: no decoder for " + v.Type().String())
	}
}

// resolveAlias follows *alias references; yaml.v3 lets an alias point into its own anchor, so the walk
// is bounded by the depth of Config, never by the document.
func resolveAlias(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode; i++ {
		if i > 100 {
			return nil
		}
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" }

// tag is the YAML type of a scalar; a value produced by ${VAR} expansion is typed by its expanded text,
// quoted or not, so that `max_tokens: "${MAX_TOKENS:-4096}"` is a number.
func (d *decoder) tag(n *yaml.Node) string {
	if _, ok := d.raw[n]; ok {
		return (&yaml.Node{Kind: yaml.ScalarNode, Value: n.Value}).ShortTag()
	}
	return n.ShortTag()
}

// show quotes a value for an error message. A value that came from the environment is shown as written
// in the file (its ${VAR}), never expanded: it may be a secret put in the wrong place.
func (d *decoder) show(n *yaml.Node) string {
	if raw, ok := d.raw[n]; ok {
		return strconv.Quote(raw)
	}
	v := n.Value
	if len(v) > 60 {
		v = v[:60] + "..."
	}
	return strconv.Quote(v)
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return "a scalar"
}

// scalar returns the text of a scalar node; null is the empty string.
func (d *decoder) scalar(key string, n *yaml.Node, want string) (string, bool) {
	if n.Kind != yaml.ScalarNode {
		d.fail(n.Line, key, "must be %s, not %s", want, kindName(n))
		return "", false
	}
	if isNull(n) {
		return "", true
	}
	return n.Value, true
}

func (d *decoder) bool(key string, n *yaml.Node, v reflect.Value) {
	if n.Kind != yaml.ScalarNode || d.tag(n) != "!!bool" {
		d.fail(n.Line, key, "must be true or false, not %s", d.describe(n))
		return
	}
	b, err := strconv.ParseBool(strings.ToLower(n.Value))
	if err != nil {
		d.fail(n.Line, key, "must be true or false, not %s", d.show(n))
		return
	}
	v.SetBool(b)
}

func (d *decoder) int(key string, n *yaml.Node, v reflect.Value) {
	if n.Kind != yaml.ScalarNode || d.tag(n) != "!!int" {
		d.fail(n.Line, key, "must be a whole number, not %s", d.describe(n))
		return
	}
	i, err := strconv.ParseInt(n.Value, 0, 64)
	if err != nil || v.OverflowInt(i) {
		d.fail(n.Line, key, "number %s is out of range", d.show(n))
		return
	}
	v.SetInt(i)
}

func (d *decoder) float(key string, n *yaml.Node, v reflect.Value) {
	t := d.tag(n)
	if n.Kind != yaml.ScalarNode || t != "!!float" && t != "!!int" {
		d.fail(n.Line, key, "must be a number, not %s", d.describe(n))
		return
	}
	var f float64
	var err error
	switch strings.ToLower(strings.TrimLeft(n.Value, "+-")) {
	case ".inf", ".nan":
		err = fmt.Errorf("not finite")
	default:
		f, err = strconv.ParseFloat(n.Value, 64)
	}
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		d.fail(n.Line, key, "must be a finite number, not %s", d.show(n))
		return
	}
	v.SetFloat(f)
}

func (d *decoder) duration(key string, n *yaml.Node, v reflect.Value) {
	if n.Kind != yaml.ScalarNode || isNull(n) {
		d.fail(n.Line, key, "must be a duration like 30s, 5m or 1h, not %s", d.describe(n))
		return
	}
	t, err := time.ParseDuration(n.Value)
	if err != nil {
		d.fail(n.Line, key, "invalid duration %s: use a number with a unit, like 30s, 5m or 1h", d.show(n))
		return
	}
	v.SetInt(int64(t))
}

// describe names what a node holds, for "must be X, not Y".
func (d *decoder) describe(n *yaml.Node) string {
	switch {
	case n.Kind != yaml.ScalarNode:
		return kindName(n)
	case isNull(n):
		return "empty"
	case d.tag(n) == "!!str":
		return "the string " + d.show(n)
	}
	return d.show(n)
}

func (d *decoder) list(key string, n *yaml.Node, v reflect.Value) {
	if isNull(n) {
		v.Set(reflect.MakeSlice(v.Type(), 0, 0))
		return
	}
	if n.Kind != yaml.SequenceNode {
		d.fail(n.Line, key, "must be a list, not %s", d.describe(n))
		return
	}
	out := reflect.MakeSlice(v.Type(), 0, len(n.Content))
	for i, item := range n.Content {
		k := fmt.Sprintf("%s[%d]", key, i)
		d.src.lines[k] = item.Line
		e := reflect.New(v.Type().Elem()).Elem()
		d.value(k, item, e)
		out = reflect.Append(out, e)
	}
	v.Set(out)
}

func (d *decoder) dict(key string, n *yaml.Node, v reflect.Value) {
	if isNull(n) {
		v.Set(reflect.MakeMap(v.Type()))
		return
	}
	if n.Kind != yaml.MappingNode {
		d.fail(n.Line, key, "must be a mapping, not %s", d.describe(n))
		return
	}
	out := reflect.MakeMap(v.Type())
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		k := join(key, kn.Value)
		if !d.key(k, kn, seen) {
			continue
		}
		e := reflect.New(v.Type().Elem()).Elem()
		if def, ok := e.Addr().Interface().(interface{ defaults() }); ok {
			def.defaults() // an entry's keys left out keep their defaults, as a section's do
		}
		d.value(k, vn, e)
		out.SetMapIndex(reflect.ValueOf(kn.Value), e)
	}
	v.Set(out)
}

// key checks a mapping key: a plain string, written once.
func (d *decoder) key(k string, kn *yaml.Node, seen map[string]int) bool {
	if kn.Kind != yaml.ScalarNode {
		d.fail(kn.Line, k, "keys must be plain names, not %s", kindName(kn))
		return false
	}
	if first, ok := seen[kn.Value]; ok {
		d.fail(kn.Line, k, "duplicate key (first set on line %d)", first)
		return false
	}
	seen[kn.Value] = kn.Line
	d.src.lines[k] = kn.Line
	return true
}

func (d *decoder) mapping(key string, n *yaml.Node, v reflect.Value) {
	if isNull(n) {
		return // a section with every key commented out keeps its defaults
	}
	if n.Kind != yaml.MappingNode {
		what := "section"
		if key == "" {
			what = "file"
		}
		d.fail(n.Line, key, "this %s must be a mapping of keys (%s), not %s", what, strings.Join(fieldNames(v.Type()), ", "), d.describe(n))
		return
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		k := join(key, kn.Value)
		if !d.key(k, kn, seen) {
			continue
		}
		f, ok := fieldByName(v.Type(), kn.Value)
		if !ok {
			d.fail(kn.Line, k, "unknown key%s", suggest(kn.Value, fieldNames(v.Type())))
			continue
		}
		d.value(k, vn, v.FieldByIndex(f.Index))
	}
}

// fieldName is the yaml name of a struct field, "" for fields not in the file.
func fieldName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if name == "-" {
		return ""
	}
	return name
}

func fieldNames(t reflect.Type) []string {
	var names []string
	for f := range fieldsOf(t) {
		names = append(names, fieldName(f))
	}
	return names
}

func fieldByName(t reflect.Type, name string) (reflect.StructField, bool) {
	for f := range fieldsOf(t) {
		if fieldName(f) == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// fieldsOf yields the fields of t that the file can set, in declaration order.
func fieldsOf(t reflect.Type) func(func(reflect.StructField) bool) {
	return func(yield func(reflect.StructField) bool) {
		for i := range t.NumField() {
			if f := t.Field(i); fieldName(f) != "" && !yield(f) {
				return
			}
		}
	}
}

// suggest returns ` (did you mean "x"?)` for the closest valid name, or the list of valid names.
func suggest(name string, valid []string) string {
	best, bestDist := "", math.MaxInt
	norm := strings.ToLower(strings.ReplaceAll(name, "-", "_"))
	for _, v := range valid {
		if len(norm) >= 3 && (strings.HasPrefix(v, norm) || strings.HasPrefix(norm, v)) {
			return fmt.Sprintf(" (did you mean %q?)", v) // "secret" for "secret_token"
		}
	}
	for _, v := range valid {
		if dist := typo.Distance(norm, v); dist < bestDist {
			best, bestDist = v, dist
		}
	}
	if best != "" && (bestDist <= 2 || bestDist <= len(best)/3) {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return " (valid keys: " + strings.Join(valid, ", ") + ")"
}
