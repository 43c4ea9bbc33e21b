package agent

import (
	"fmt"
	"unicode/utf8"
)

// Truncate keeps at most max characters of s: its head and its tail, with
// a marker saying how much was cut from the middle. Bytes are kept as they
// are, invalid UTF-8 included. A max of zero or less means no limit.
func Truncate(s string, max int) string {
	if max <= 0 || len(s) <= max {
		return s
	}
	n := utf8.RuneCountInString(s)
	if n <= max {
		return s
	}
	head := max / 2
	tail := max - head
	return fmt.Sprintf("%s\n… [%d characters cut] …\n%s", s[:runeOffset(s, head)], n-head-tail, s[runeOffset(s, n-tail):])
}

// runeOffset is the byte offset of the i-th character of s.
func runeOffset(s string, i int) int {
	for off := range s {
		if i == 0 {
			return off
		}
		i--
	}
	return len(s)
}
