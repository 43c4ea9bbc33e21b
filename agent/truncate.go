package agent

import (
	"fmt"
	"unicode/utf8"
)

// Truncate keeps at most max characters of s: its head and its tail, with
// a marker saying how much was cut from the middle.
func Truncate(s string, max int) string {
	if max <= 0 || utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	head := max * 2 / 3
	tail := max - head
	return fmt.Sprintf("%s\n… [%d characters cut] …\n%s", string(r[:head]), len(r)-head-tail, string(r[len(r)-tail:]))
}
