package tools

import (
	"strings"
	"testing"
	"unicode/utf8"
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
		if got := Truncate(tt.s, tt.max); got != tt.want {
			t.Errorf("%s: Truncate(%q, %d) = %q, want %q", tt.name, tt.s, tt.max, got, tt.want)
		}
	}
}

func FuzzTruncate(f *testing.F) {
	f.Add("hello world", 5)
	f.Add("日本語のテキスト", 3)
	f.Add("\xff\xfe", 1)
	f.Fuzz(func(t *testing.T, s string, max int) {
		got := Truncate(s, max)
		if max <= 0 || utf8.RuneCountInString(s) <= max {
			if got != s {
				t.Fatalf("Truncate(%q, %d) = %q, want it unchanged", s, max, got)
			}
			return
		}
		head, rest, ok := strings.Cut(got, "\n… [")
		if !ok || !strings.HasPrefix(s, head) {
			t.Fatalf("Truncate(%q, %d) = %q: no head of s before the marker", s, max, got)
		}
		_, tail, _ := strings.Cut(rest, "] …\n")
		if !strings.HasSuffix(s, tail) || utf8.RuneCountInString(head)+utf8.RuneCountInString(tail) > max {
			t.Fatalf("Truncate(%q, %d) = %q: tail %q is not a short suffix", s, max, got, tail)
		}
	})
}

func TestHeadTail(t *testing.T) {
	identity := func(s string) string { return s }
	tests := []struct {
		name   string
		writes []string
		limit  int
		want   string
	}{
		{"fits", []string{"abc", "def"}, 10, "abcdef"},
		{"fits in head and tail", []string{strings.Repeat("a", 8), strings.Repeat("b", 8)}, 4, "aa\n… [12 characters cut] …\nbb"},
		{"middle dropped", []string{"HEAD", strings.Repeat("x", 1000), "TAIL"}, 8, "HEAD\n… [1000 characters cut] …\nTAIL"},
		{"many small writes", append(append([]string{"HE"}, strings.Split(strings.Repeat("y", 500), "")...), "AD", "TL"), 4, "HE\n… [502 characters cut] …\nTL"},
		{"multibyte", []string{strings.Repeat("é", 100)}, 4, "éé\n… [96 characters cut] …\néé"},
		{"invalid bytes", []string{"\xff\xfe ok"}, 100, "\uFFFD ok"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newHeadTail(8, 8)
			for _, w := range tt.writes {
				if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			if got := b.render(tt.limit, identity, nil); got != tt.want {
				t.Errorf("render = %q, want %q", got, tt.want)
			}
			if len(b.tail) > 2*b.tailMax {
				t.Errorf("tail buffer holds %d bytes, more than twice its size %d", len(b.tail), b.tailMax)
			}
		})
	}
}

func TestHeadTailTrimsPartialSecrets(t *testing.T) {
	const secret = "SECRETVALUE"
	redact := func(s string) string { return strings.ReplaceAll(s, secret, "[REDACTED]") }
	b := newHeadTail(10, 10)
	// The head buffer ends inside one copy, the tail buffer starts inside another.
	for _, w := range []string{"aaaaaa" + secret, strings.Repeat("x", 100), secret + "bbb"} {
		_, _ = b.Write([]byte(w))
	}
	got := b.render(100, redact, []string{secret})
	for _, part := range []string{"SECR", "ECRE", "TVAL", "VALU", "ALUE"} {
		if strings.Contains(got, part) {
			t.Errorf("render = %q shows %q of the secret", got, part)
		}
	}
	if !strings.HasPrefix(got, "aaaaaa") || !strings.HasSuffix(got, "bbb") {
		t.Errorf("render = %q, want the text around the secrets kept", got)
	}
}

func BenchmarkTruncate(b *testing.B) {
	s := strings.Repeat("line of output from a command\n", 10000)
	b.ReportAllocs()
	for b.Loop() {
		_ = Truncate(s, 10000)
	}
}

func BenchmarkHeadTailWrite(b *testing.B) {
	line := []byte("a line of build output, as a compiler prints it\n")
	b.ReportAllocs()
	b.SetBytes(int64(len(line)) * 1000)
	for b.Loop() {
		w := newHeadTail(20256, 20256)
		for range 1000 {
			_, _ = w.Write(line)
		}
	}
}
