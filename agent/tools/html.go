package tools

import (
	"html"
	"strings"
)

// skipped reports elements whose content is not text for a reader.
func skipped(name string) bool {
	switch name {
	case "script", "style", "noscript", "svg", "template", "iframe", "object", "canvas":
		return true
	}
	return false
}

// breaking reports elements that start a new line.
func breaking(name string) bool {
	switch name {
	case "br", "p", "div", "section", "article", "header", "footer", "main", "nav", "aside",
		"h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "dl", "dt", "dd", "tr", "table",
		"pre", "blockquote", "hr", "title", "form", "figure", "figcaption", "address",
		"details", "summary":
		return true
	}
	return false
}

// htmlToText turns HTML into readable text, crudely: it drops comments,
// scripts, styles and tags, breaks lines at block elements, decodes entities
// and squeezes whitespace. It never fails; broken HTML gives rough text.
func htmlToText(s string) string {
	lower := asciiLower(s)
	var sb strings.Builder
	sb.Grow(len(s) / 2)
	i := 0
	for i < len(s) {
		lt := strings.IndexByte(s[i:], '<')
		if lt < 0 {
			sb.WriteString(s[i:])
			break
		}
		sb.WriteString(s[i : i+lt])
		i += lt
		if strings.HasPrefix(s[i:], "<!--") {
			end := strings.Index(s[i+4:], "-->")
			if end < 0 {
				break
			}
			i += 4 + end + 3
			continue
		}
		if !opensTag(lower, i) {
			sb.WriteByte('<') // text such as "a < b"
			i++
			continue
		}
		end := tagEnd(s, i+1)
		name, closing := tagName(lower[i+1 : end])
		i = min(end+1, len(s))
		switch {
		case skipped(name) && !closing:
			stop := strings.Index(lower[i:], "</"+name)
			if stop < 0 {
				i = len(s)
				break
			}
			i = min(tagEnd(s, i+stop+1)+1, len(s))
		case name == "li":
			if !closing {
				sb.WriteString("\n- ")
			}
		case name == "td" || name == "th":
			sb.WriteString(" ")
		case breaking(name):
			sb.WriteString("\n")
		}
	}
	return squeeze(html.UnescapeString(sb.String()))
}

// opensTag reports whether the '<' at i starts a tag, a closing tag, a
// declaration or a processing instruction, as browsers decide.
func opensTag(lower string, i int) bool {
	if i+1 >= len(lower) {
		return false
	}
	c := lower[i+1]
	return c >= 'a' && c <= 'z' || c == '/' || c == '!' || c == '?'
}

// tagEnd returns the index of the '>' closing the tag whose content starts
// at i, skipping quoted attribute values, or len(s).
func tagEnd(s string, i int) int {
	var quote byte
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '>':
			return i
		}
	}
	return len(s)
}

// tagName returns the lower-case name of a tag from its content ("/p",
// "a href=...") and whether it is a closing tag.
func tagName(tag string) (name string, closing bool) {
	if strings.HasPrefix(tag, "/") {
		closing = true
		tag = tag[1:]
	}
	end := 0
	for end < len(tag) {
		c := tag[end]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == ':') {
			break
		}
		end++
	}
	return tag[:end], closing
}

// asciiLower lower-cases ASCII letters only, so that indexes stay valid.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// squeeze collapses runs of spaces within lines and drops blank lines:
// nested blocks would otherwise leave more blank lines than text.
func squeeze(s string) string {
	var sb strings.Builder
	sb.Grow(len(s))
	for line := range strings.SplitSeq(s, "\n") {
		line = strings.Join(strings.Fields(line), " ")
		if line == "" {
			continue
		}
		if sb.Len() > 0 {
			sb.WriteByte('\n')
		}
		sb.WriteString(line)
	}
	return sb.String()
}
