package agent_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/nanobot-go/nanobot/agent"
)

func TestTruncate(t *testing.T) {
	tests := []struct {
		name string
		s    string
		max  int
		want string
	}{
		{"short", "hello", 10, "hello"},
		{"exact", "hello", 5, "hello"},
		{"no limit", "hello", 0, "hello"},
		{"negative limit", "hello", -1, "hello"},
		{"cut", "0123456789", 4, "01\n… [6 characters cut] …\n89"},
		{"odd limit", "0123456789", 5, "01\n… [5 characters cut] …\n789"},
		{"characters, not bytes", "ééééé", 4, "éé\n… [1 characters cut] …\néé"},
		{"multibyte fits", "日本語", 3, "日本語"},
		{"one", "abc", 1, "\n… [2 characters cut] …\nc"},
	}
	for _, tt := range tests {
		if got := agent.Truncate(tt.s, tt.max); got != tt.want {
			t.Errorf("%s: agent.Truncate(%q, %d) = %q, want %q", tt.name, tt.s, tt.max, got, tt.want)
		}
	}
}

func FuzzTruncate(f *testing.F) {
	f.Add("hello world", 5)
	f.Add("日本語のテキスト", 3)
	f.Add("\xff\xfe", 1)
	f.Fuzz(func(t *testing.T, s string, max int) {
		got := agent.Truncate(s, max)
		if max <= 0 || utf8.RuneCountInString(s) <= max {
			if got != s {
				t.Fatalf("agent.Truncate(%q, %d) = %q, want it unchanged", s, max, got)
			}
			return
		}
		head, rest, ok := strings.Cut(got, "\n… [")
		if !ok || !strings.HasPrefix(s, head) {
			t.Fatalf("agent.Truncate(%q, %d) = %q: no head of s before the marker", s, max, got)
		}
		_, tail, _ := strings.Cut(rest, "] …\n")
		if !strings.HasSuffix(s, tail) || utf8.RuneCountInString(head)+utf8.RuneCountInString(tail) > max {
			t.Fatalf("agent.Truncate(%q, %d) = %q: tail %q is not a short suffix", s, max, got, tail)
		}
	})
}
