package tools

import (
	"strings"
	"testing"
)

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
