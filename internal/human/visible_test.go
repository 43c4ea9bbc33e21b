package human

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestVisible(t *testing.T) {
	tests := []struct{ in, want string }{
		{"ls -la /tmp", "ls -la /tmp"},
		{"a\nb", "a⏎\nb"},
		{"a\n\n\n\nb", "a⏎×4\nb"},
		{"a" + strings.Repeat(" ", 8) + "b", "a" + strings.Repeat(" ", 8) + "b"},
		{"a" + strings.Repeat(" ", 9) + "b", "a␠×9b"},
		{"\u202dx\u2068", `\u202dx\u2068`},
		{"\u3164\u2800\u034f", `\u3164\u2800\u034f`},
		{"\ufe0f\U000e0100", `\ufe0f\U000e0100`},
		{"\u2028\u2029\u3000", `\u2028\u2029\u3000`},
		{"\x7f\u0085\ue000", `\x7f\u0085\ue000`},
		{"grüße 日本 ✓", "grüße 日本 ✓"},
	}
	for _, tt := range tests {
		if got := Visible(tt.in); got != tt.want {
			t.Errorf("Visible(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func FuzzVisible(f *testing.F) {
	for _, s := range []string{"ls\n", "a\u202eb", "\xff\xfe", strings.Repeat(" ", 20), "\t\r\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v := Visible(s)
		if !utf8.ValidString(v) {
			t.Fatalf("Visible(%q) = %q, not valid UTF-8", s, v)
		}
		for _, r := range v {
			if r != '\n' && r != ' ' && (r < 0x20 || hidden(r) && r != '⏎' && r != '␠') {
				t.Fatalf("Visible(%q) = %q keeps %U", s, v, r)
			}
		}
		if strings.Count(v, "\n") > strings.Count(s, "\n") {
			t.Fatalf("Visible(%q) = %q adds line breaks", s, v)
		}
	})
}
