package human

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Visible renders s so that every character of it shows: what the owner is
// asked to approve must read exactly as what runs. Newlines are shown as ⏎
// (and still break the line), tabs and carriage returns as \t and \r, other
// control bytes and invalid UTF-8 as \xNN, and characters that show nothing
// or move others (bidi overrides and isolates, zero-width and other format
// characters, spaces other than the plain one, private-use and unassigned
// code points, fillers that render blank) as \uNNNN. A run of more than
// three newlines or more than eight spaces is shown as ⏎×N or ␠×N, so no
// padding can push the rest of a command out of sight. The marks
// themselves, when the text has them, are escaped too.
func Visible(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n' || r == ' ':
			n := runOf(s[i:], byte(r))
			size = n
			switch {
			case r == '\n' && n > 3:
				fmt.Fprintf(&b, "⏎×%d\n", n)
			case r == '\n':
				b.WriteString(strings.Repeat("⏎\n", n))
			case n > 8:
				fmt.Fprintf(&b, "␠×%d", n)
			default:
				b.WriteString(strings.Repeat(" ", n))
			}
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case hidden(r):
			if r > 0xffff {
				fmt.Fprintf(&b, `\U%08x`, r)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// runOf counts the bytes c that s starts with.
func runOf(s string, c byte) int {
	n := 0
	for n < len(s) && s[n] == c {
		n++
	}
	return n
}

// blank are graphic characters that render as nothing or as a space, and
// the marks visible uses.
var blank = map[rune]bool{
	0x034f: true,                                           // combining grapheme joiner
	0x115f: true, 0x1160: true, 0x3164: true, 0xffa0: true, // Hangul fillers
	0x17b4: true, 0x17b5: true, // Khmer inherent vowels
	0x2800: true, // braille blank
	'⏎':    true, '␠': true,
}

// hidden reports whether r must be escaped to be seen.
func hidden(r rune) bool {
	switch {
	case blank[r]:
		return true
	case r == ' ':
		return false
	case unicode.IsSpace(r), unicode.Is(unicode.Zs, r): // NBSP, U+2028, ...
		return true
	case unicode.Is(unicode.Variation_Selector, r):
		return true
	}
	// Format characters (Cf: bidi controls, zero-width, tags), controls,
	// private use and unassigned code points are not graphic.
	return !unicode.IsGraphic(r)
}
