package markup

import (
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// tokenKind classifies a piece of Telegram HTML.
type tokenKind uint8

const (
	tokText   tokenKind = iota // one character of text, as written
	tokEntity                  // a character reference such as &amp; or &#128512;
	tokOpen                    // a start tag, e.g. <a href="...">
	tokClose                   // an end tag, e.g. </a>
)

// token is an indivisible piece of HTML: Split never cuts inside one, which
// keeps tags, character references and surrogate pairs whole.
type token struct {
	kind tokenKind
	raw  string // exactly as it appears in the input
	name string // lowercase tag name for tokOpen and tokClose
	r    rune   // the character for tokText and tokEntity
}

// units is the token's length in UTF-16 code units, the measure Telegram uses.
func (t token) units() int {
	if t.kind == tokText {
		return runeUnits(t.r)
	}
	return stringUnits(t.raw)
}

func runeUnits(r rune) int {
	if r >= 0x10000 {
		return 2
	}
	return 1
}

// stringUnits counts s in UTF-16 code units.
func stringUnits(s string) int {
	n := 0
	for i := 0; i < len(s); {
		if s[i] < utf8.RuneSelf {
			n++
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		n += len(utf16.Encode([]rune{r}))
		i += size
	}
	return n
}

// tokenize splits html into tokens. Anything that is not a well-formed tag or
// character reference (a stray '<' or '&') becomes a text token, so every
// input tokenizes and the concatenation of raw fields is the input.
func tokenize(html string) []token {
	toks := make([]token, 0, len(html))
	for i := 0; i < len(html); {
		switch html[i] {
		case '<':
			if t, n := scanTag(html[i:]); n > 0 {
				toks = append(toks, t)
				i += n
				continue
			}
		case '&':
			if r, n := scanEntity(html[i:]); n > 0 {
				toks = append(toks, token{kind: tokEntity, raw: html[i : i+n], r: r})
				i += n
				continue
			}
		}
		r, size := utf8.DecodeRuneInString(html[i:])
		toks = append(toks, token{kind: tokText, raw: html[i : i+size], r: r})
		i += size
	}
	return toks
}

// scanTag reads a start or end tag at the beginning of s. It returns n == 0
// when s does not begin with one.
func scanTag(s string) (token, int) {
	i := 1
	closing := i < len(s) && s[i] == '/'
	if closing {
		i++
	}
	start := i
	for i < len(s) && isNameByte(s[i]) {
		i++
	}
	if i == start || !isLetter(s[start]) {
		return token{}, 0
	}
	name := strings.ToLower(s[start:i])
	if closing {
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		if i < len(s) && s[i] == '>' {
			return token{kind: tokClose, raw: s[:i+1], name: name}, i + 1
		}
		return token{}, 0
	}
	if i < len(s) && s[i] != '>' && !isSpace(s[i]) {
		return token{}, 0
	}
	// Attributes: quoted values may contain '>'.
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
		case c == '<':
			return token{}, 0
		case c == '>':
			return token{kind: tokOpen, raw: s[:i+1], name: name}, i + 1
		}
	}
	return token{}, 0
}

// scanEntity reads a character reference Telegram understands at the start of
// s: the named &lt; &gt; &amp; &quot; or a numeric one. n == 0 when there is none.
func scanEntity(s string) (rune, int) {
	end := strings.IndexByte(s, ';')
	if end < 2 || end > 12 {
		return 0, 0
	}
	body := s[1:end]
	switch body {
	case "lt":
		return '<', end + 1
	case "gt":
		return '>', end + 1
	case "amp":
		return '&', end + 1
	case "quot":
		return '"', end + 1
	}
	if body[0] != '#' || len(body) < 2 {
		return 0, 0
	}
	digits, base := body[1:], 10
	if digits[0] == 'x' || digits[0] == 'X' {
		digits, base = digits[1:], 16
	}
	if digits == "" || digits[0] == '+' || digits[0] == '-' {
		return 0, 0
	}
	v, err := strconv.ParseUint(digits, base, 32)
	if err != nil || v == 0 || v > utf8.MaxRune || (v >= 0xD800 && v <= 0xDFFF) {
		return 0, 0
	}
	return rune(v), end + 1
}

func isLetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

func isNameByte(c byte) bool { return isLetter(c) || c >= '0' && c <= '9' || c == '-' }

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' }

// PlainText strips the tags from Telegram HTML and decodes its character
// references: the text Telegram would show, for resending a message whose
// entities were rejected.
func PlainText(html string) string {
	var b strings.Builder
	b.Grow(len(html))
	for _, t := range tokenize(html) {
		switch t.kind {
		case tokText:
			b.WriteString(t.raw)
		case tokEntity:
			b.WriteRune(t.r)
		}
	}
	return b.String()
}

// escapeText escapes the characters that are markup in Telegram HTML text.
func escapeText(b *strings.Builder, s string) {
	last := 0
	for i := 0; i < len(s); i++ {
		var rep string
		switch s[i] {
		case '&':
			rep = "&amp;"
		case '<':
			rep = "&lt;"
		case '>':
			rep = "&gt;"
		default:
			continue
		}
		b.WriteString(s[last:i])
		b.WriteString(rep)
		last = i + 1
	}
	b.WriteString(s[last:])
}

// escapeAttr escapes s for use inside a double-quoted attribute value.
func escapeAttr(s string) string {
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); i++ {
		if s[i] != '"' {
			continue
		}
		escapeText(&b, s[last:i])
		b.WriteString("&quot;")
		last = i + 1
	}
	escapeText(&b, s[last:])
	return b.String()
}
