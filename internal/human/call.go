package human

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// argKeys are the arguments that best say what a tool call does, in the
// order they are looked for.
var argKeys = []string{"command", "url", "path", "query", "pattern", "name", "task", "message", "content"}

// Args words a tool call's JSON arguments in at most limit characters for
// a progress line: the value that says most (the command, the URL without
// its scheme, the path), else the first text value, else the JSON itself.
// Whitespace is collapsed; a cut is marked with "…".
func Args(args string, limit int) string {
	values := stringArgs(args)
	v, found := "", false
	for _, k := range argKeys {
		if v, found = values[k]; found {
			break
		}
	}
	if !found && len(values) > 0 {
		v, found = values[firstKey(args, values)], true
	}
	if !found {
		var compact bytes.Buffer
		if json.Compact(&compact, []byte(args)) == nil {
			v = compact.String()
		} else {
			v = args
		}
		if v == "{}" || v == "null" {
			v = ""
		}
	}
	v = strings.TrimPrefix(strings.TrimPrefix(v, "https://"), "http://")
	return Cut(strings.Join(strings.Fields(v), " "), limit)
}

// stringArgs returns the text values of a JSON object's top-level keys.
func stringArgs(args string) map[string]string {
	var raw map[string]json.RawMessage
	if json.Unmarshal([]byte(args), &raw) != nil {
		return nil
	}
	out := map[string]string{}
	for k, r := range raw {
		var s string
		if json.Unmarshal(r, &s) == nil && strings.TrimSpace(s) != "" {
			out[k] = s
		}
	}
	return out
}

// firstKey is the key of values that comes first in the object args.
func firstKey(args string, values map[string]string) string {
	dec := json.NewDecoder(strings.NewReader(args))
	if _, err := dec.Token(); err != nil { // {
		return ""
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		k, _ := tok.(string)
		if _, ok := values[k]; ok {
			return k
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return ""
		}
	}
	return ""
}

// Cut shortens s to at most limit characters, marking a cut with "…".
func Cut(s string, limit int) string {
	r := []rune(s)
	if limit <= 0 || len(r) <= limit {
		return s
	}
	return strings.TrimRight(string(r[:limit-1]), " ") + "…"
}

// Clock words an elapsed time as a stopwatch: "0:42", "12:05", "1:02:03".
func Clock(d time.Duration) string {
	s := int(d / time.Second)
	if s < 3600 {
		return fmt.Sprintf("%d:%02d", s/60, s%60)
	}
	return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
}

// Duration words a short duration: "0.3s", "12s", "2m05s".
func Duration(d time.Duration) string {
	switch {
	case d < 10*time.Second:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Round(time.Second)/time.Second))
	}
	s := int(d.Round(time.Second) / time.Second)
	return fmt.Sprintf("%dm%02ds", s/60, s%60)
}
