package tools

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/nanobot-go/nanobot/agent"
)

// joinCut puts the marker of cut characters between head and tail.
func joinCut(head, tail string, cut int) string {
	return fmt.Sprintf("%s\n… [%d characters cut] …\n%s", head, cut, tail)
}

// headTail is an io.Writer that keeps the first and the last bytes written
// to it and counts the rest, so that a command printing gigabytes costs a
// few kilobytes of memory. It is not safe for concurrent writes; exec gives
// stdout and stderr the same writer, which it then calls from one goroutine.
type headTail struct {
	head, tail       []byte
	headMax, tailMax int
	total            int64 // bytes written
	runes            int64 // characters written, for valid UTF-8
}

func newHeadTail(headMax, tailMax int) *headTail {
	return &headTail{headMax: headMax, tailMax: tailMax}
}

// Write keeps what fits in the head and the tail and never fails.
func (b *headTail) Write(p []byte) (int, error) {
	n := len(p)
	b.total += int64(n)
	for _, c := range p {
		if utf8.RuneStart(c) {
			b.runes++
		}
	}
	if room := b.headMax - len(b.head); room > 0 {
		k := min(room, len(p))
		b.head = append(b.head, p[:k]...)
		p = p[k:]
	}
	if len(p) == 0 {
		return n, nil
	}
	if len(p) >= b.tailMax {
		b.tail = append(b.tail[:0], p[len(p)-b.tailMax:]...)
		return n, nil
	}
	b.tail = append(b.tail, p...)
	// Compact only when the tail has doubled, so that many small writes cost
	// linear time in all.
	if len(b.tail) > 2*b.tailMax {
		b.tail = append(b.tail[:0], b.tail[len(b.tail)-b.tailMax:]...)
	}
	return n, nil
}

// tailBytes returns the last tailMax bytes written after the head.
func (b *headTail) tailBytes() []byte {
	if len(b.tail) > b.tailMax {
		return b.tail[len(b.tail)-b.tailMax:]
	}
	return b.tail
}

// render returns what was written, redacted, cut to limit characters keeping
// head and tail. Part of a secret at the edge of what was dropped is trimmed,
// since the redactor can only recognise whole secrets.
func (b *headTail) render(limit int, redact func(string) string, secrets []string) string {
	tail := b.tailBytes()
	if b.total == int64(len(b.head)+len(tail)) {
		whole := string(b.head) + string(tail)
		return strings.ToValidUTF8(agent.Truncate(redact(whole), limit), "\uFFFD")
	}
	head := trimPartialRune(trimSecretPrefixAtEnd(b.head, secrets))
	tail = trimLeadingContinuation(trimSecretSuffixAtStart(tail, secrets))
	hs := firstRunes(redact(string(head)), limit/2)
	ts := lastRunes(redact(string(tail)), limit-limit/2)
	cut := b.runes - int64(utf8.RuneCountInString(hs)+utf8.RuneCountInString(ts))
	return strings.ToValidUTF8(joinCut(hs, ts, int(max(cut, 0))), "\uFFFD")
}

// trimSecretPrefixAtEnd drops the longest end of b that begins a secret.
func trimSecretPrefixAtEnd(b []byte, secrets []string) []byte {
	cut := 0
	for _, s := range secrets {
		for k := min(len(s)-1, len(b)); k > cut; k-- {
			if bytes.HasSuffix(b, []byte(s[:k])) {
				cut = k
				break
			}
		}
	}
	return b[:len(b)-cut]
}

// trimSecretSuffixAtStart drops the longest start of b that ends a secret.
func trimSecretSuffixAtStart(b []byte, secrets []string) []byte {
	cut := 0
	for _, s := range secrets {
		for k := min(len(s)-1, len(b)); k > cut; k-- {
			if bytes.HasPrefix(b, []byte(s[len(s)-k:])) {
				cut = k
				break
			}
		}
	}
	return b[cut:]
}

// trimLeadingContinuation drops the end of a character cut in half at the
// start of b.
func trimLeadingContinuation(b []byte) []byte {
	for i := 0; i < len(b) && i < utf8.UTFMax; i++ {
		if utf8.RuneStart(b[i]) {
			return b[i:]
		}
	}
	return b
}

// firstRunes returns the first n characters of s.
func firstRunes(s string, n int) string {
	if n <= 0 {
		return ""
	}
	i := 0
	for range n {
		if i >= len(s) {
			return s
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i]
}

// lastRunes returns the last n characters of s.
func lastRunes(s string, n int) string {
	if n <= 0 {
		return ""
	}
	i := len(s)
	for range n {
		if i <= 0 {
			return s
		}
		_, size := utf8.DecodeLastRuneInString(s[:i])
		i -= size
	}
	return s[i:]
}
