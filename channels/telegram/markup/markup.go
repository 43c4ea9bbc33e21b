// Package markup turns the Markdown a model writes into the HTML subset the
// Telegram Bot API accepts, and cuts long HTML into messages Telegram takes.
//
// The output of ToHTML is always valid for Telegram's parser: only the tags
// b, i, s, code, pre, a and blockquote, properly nested, with every other '<',
// '>' and '&' escaped. Split keeps that property for every part.
package markup

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// ToHTML renders Markdown as Telegram HTML. Bold, italic, strikethrough,
// inline code, fenced code blocks, links, headings (as bold lines), lists and
// blockquotes are converted; everything else is kept as escaped text.
func ToHTML(md string) string {
	md = strings.ToValidUTF8(md, "\uFFFD")
	md = strings.ReplaceAll(md, "\r\n", "\n")
	md = strings.ReplaceAll(md, "\r", "\n")
	var b strings.Builder
	b.Grow(len(md) + len(md)/8)
	renderBlocks(&b, strings.Split(md, "\n"), true)
	return b.String()
}

// renderBlocks writes lines, turning fences and quotes into blocks when top
// is set (Telegram allows neither inside a blockquote).
func renderBlocks(b *strings.Builder, lines []string, top bool) {
	for i := 0; i < len(lines); {
		if i > 0 {
			b.WriteByte('\n')
		}
		if top {
			if f, ok := openingFence(lines[i]); ok {
				j := i + 1
				for j < len(lines) && !f.closedBy(lines[j]) {
					j++
				}
				writeCodeBlock(b, f, lines[i+1:j])
				if j < len(lines) {
					j++ // the closing fence
				}
				i = j
				continue
			}
			if _, ok := quoteBody(lines[i]); ok {
				j := i
				var body []string
				for ; j < len(lines); j++ {
					s, ok := quoteBody(lines[j])
					if !ok {
						break
					}
					body = append(body, s)
				}
				b.WriteString("<blockquote>")
				renderBlocks(b, body, false)
				b.WriteString("</blockquote>")
				i = j
				continue
			}
		}
		renderLine(b, lines[i])
		i++
	}
}

// fence is an opening code fence: ``` or ~~~ with an optional language.
type fence struct {
	char   byte
	n      int
	indent int
	lang   string
}

func openingFence(line string) (fence, bool) {
	rest := strings.TrimLeft(line, " \t")
	if len(rest) < 3 || (rest[0] != '`' && rest[0] != '~') {
		return fence{}, false
	}
	f := fence{char: rest[0], indent: len(line) - len(rest)}
	for f.n < len(rest) && rest[f.n] == f.char {
		f.n++
	}
	if f.n < 3 {
		return fence{}, false
	}
	info := strings.TrimSpace(rest[f.n:])
	if f.char == '`' && strings.IndexByte(info, '`') >= 0 {
		return fence{}, false // ```code``` on one line is inline code
	}
	if fields := strings.Fields(info); len(fields) > 0 {
		f.lang = cleanLang(fields[0])
	}
	return f, true
}

func (f fence) closedBy(line string) bool {
	rest := strings.TrimSpace(line)
	if len(rest) < f.n {
		return false
	}
	for i := 0; i < len(rest); i++ {
		if rest[i] != f.char {
			return false
		}
	}
	return true
}

// cleanLang keeps the characters language names use, so the class attribute
// never needs escaping.
func cleanLang(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < utf8.RuneSelf && (isLetter(byte(r)) || r >= '0' && r <= '9' || strings.ContainsRune("+#._-", r)) {
			b.WriteRune(r)
		}
		if b.Len() == 32 {
			break
		}
	}
	return b.String()
}

func writeCodeBlock(b *strings.Builder, f fence, lines []string) {
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1] // an unclosed fence at the end of the text
	}
	var code strings.Builder
	for i, l := range lines {
		if i > 0 {
			code.WriteByte('\n')
		}
		// Drop the fence's own indentation (fences nested in list items).
		n := 0
		for n < f.indent && n < len(l) && (l[n] == ' ' || l[n] == '\t') {
			n++
		}
		escapeText(&code, l[n:])
	}
	if strings.TrimSpace(code.String()) == "" {
		return // an empty block would be an empty entity
	}
	if f.lang != "" {
		b.WriteString(`<pre><code class="language-` + f.lang + `">`)
		b.WriteString(code.String())
		b.WriteString("</code></pre>")
		return
	}
	b.WriteString("<pre>")
	b.WriteString(code.String())
	b.WriteString("</pre>")
}

// quoteBody reports whether line is part of a blockquote and returns it
// without the marker.
func quoteBody(line string) (string, bool) {
	rest := strings.TrimLeft(line, " ")
	if len(line)-len(rest) > 3 || !strings.HasPrefix(rest, ">") {
		return "", false
	}
	return strings.TrimPrefix(rest[1:], " "), true
}

// renderLine writes one line outside code blocks: a rule, heading, list item
// or paragraph text.
func renderLine(b *strings.Builder, line string) {
	trimmed := strings.TrimSpace(line)
	if isRule(trimmed) {
		b.WriteString("———")
		return
	}
	if text, ok := heading(trimmed); ok {
		if text != "" {
			b.WriteString("<b>")
			renderInline(b, text, tagSet(0).with(tagB), true)
			b.WriteString("</b>")
		}
		return
	}
	rest := strings.TrimLeft(line, " \t")
	if marker, body, ok := listItem(rest); ok {
		b.WriteString(line[:len(line)-len(rest)])
		b.WriteString(marker)
		renderInline(b, body, 0, true)
		return
	}
	renderInline(b, line, 0, true)
}

// isRule matches thematic breaks: three or more of -, * or _ alone.
func isRule(s string) bool {
	if len(s) < 3 || !strings.ContainsRune("-*_", rune(s[0])) {
		return false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case s[0]:
			n++
		case ' ':
		default:
			return false
		}
	}
	return n >= 3
}

// heading returns the text of an ATX heading ("## Title").
func heading(s string) (string, bool) {
	n := 0
	for n < len(s) && s[n] == '#' {
		n++
	}
	if n == 0 || n > 6 || (n < len(s) && s[n] != ' ' && s[n] != '\t') {
		return "", false
	}
	text := strings.TrimSpace(s[n:])
	// Closing hashes: "## Title ##".
	if t := strings.TrimRight(text, "#"); t != text && (t == "" || strings.HasSuffix(t, " ")) {
		text = strings.TrimSpace(t)
	}
	return text, true
}

// listItem recognises "- ", "* ", "+ " and "1. " / "1) " items and returns
// the marker Telegram shows instead.
func listItem(s string) (marker, body string, ok bool) {
	if len(s) >= 2 && (s[0] == '-' || s[0] == '*' || s[0] == '+') && (s[1] == ' ' || s[1] == '\t') {
		body = strings.TrimLeft(s[2:], " \t")
		switch {
		case strings.HasPrefix(body, "[ ] "):
			return "☐ ", body[4:], true
		case strings.HasPrefix(body, "[x] "), strings.HasPrefix(body, "[X] "):
			return "☑ ", body[4:], true
		}
		return "• ", body, true
	}
	n := 0
	for n < len(s) && n < 9 && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	if n > 0 && n+1 < len(s) && (s[n] == '.' || s[n] == ')') && (s[n+1] == ' ' || s[n+1] == '\t') {
		return s[:n] + ". ", strings.TrimLeft(s[n+2:], " \t"), true
	}
	return "", "", false
}

// isAlnum reports whether r is a letter or digit: emphasis markers touching
// one on the outside (snake_case, 2*3*4) are literal.
func isAlnum(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }
