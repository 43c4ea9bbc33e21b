package markup_test

import (
	"fmt"
	"strings"
	"testing"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/nanobot-go/nanobot/channels/telegram/markup"
)

// units counts s in UTF-16 code units, as Telegram does.
func units(s string) int { return len(utf16.Encode([]rune(s))) }

// longAnswer is a Markdown answer of about n characters with the constructs a
// model uses: headings, paragraphs with emphasis and links, lists and code.
func longAnswer(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "## Section %d\n\n", i)
		fmt.Fprintf(&b, "Paragraph %d has **bold text**, *italic words*, `inline < code` and a [link](https://example.com/%d?a=1&b=2). ", i, i)
		b.WriteString(strings.Repeat("Lorem ipsum dolor sit amet, consectetur adipiscing elit & more. ", 4))
		b.WriteString("\n\n- first point\n- second point with ~~struck~~ text\n1. numbered\n\n")
		if i%3 == 0 {
			b.WriteString("```go\nfunc f() {\n\tif a < b {\n\t\treturn\n\t}\n}\n```\n\n")
		}
		b.WriteString("> a quoted line with **emphasis**\n\n")
	}
	return b.String()
}

// matchModuloCuts reports whether want == w0 + p1 + w1 + ... + pk + wk with
// every wi made of whitespace: the parts, in order, lose nothing but
// whitespace where they were cut (and whitespace-only stretches Split leaves
// out). The decomposition is unique, so the check is exact.
func matchModuloCuts(want string, parts []string) error {
	rest := want
	for k, p := range parts {
		ws := len(rest) - len(strings.TrimLeftFunc(rest, unicode.IsSpace))
		pw := len(p) - len(strings.TrimLeftFunc(p, unicode.IsSpace))
		if pw > ws {
			return fmt.Errorf("part %d starts with whitespace the input does not have here", k)
		}
		rest = rest[ws-pw:]
		if !strings.HasPrefix(rest, p) {
			n := min(len(rest), len(p), 80)
			return fmt.Errorf("part %d differs from the input: part %q..., input %q...", k, p[:min(len(p), 80)], rest[:n])
		}
		rest = rest[len(p):]
	}
	if strings.TrimSpace(rest) != "" {
		return fmt.Errorf("input continues after the last part: %q", rest[:min(len(rest), 80)])
	}
	return nil
}

// checkSplit asserts every property Split promises for html and its parts.
func checkSplit(t *testing.T, html string, limit int, parts []string) {
	t.Helper()
	limit = max(limit, markup.MinLimit)
	inputValid := validateHTML(html, telegramTags) == nil
	plains := make([]string, len(parts))
	for i, p := range parts {
		if n := units(p); n > limit {
			t.Fatalf("Split(%q, %d): part %d has %d units, over the limit", html, limit, i, n)
		}
		plains[i] = markup.PlainText(p)
		if strings.TrimSpace(plains[i]) == "" {
			t.Fatalf("Split(%q, %d): part %d shows nothing: %q", html, limit, i, p)
		}
		if !utf8.ValidString(p) && utf8.ValidString(html) {
			t.Fatalf("Split(%q, %d): part %d is not valid UTF-8: %q", html, limit, i, p)
		}
		if inputValid {
			if err := validateHTML(p, telegramTags); err != nil {
				t.Fatalf("Split(%q, %d): part %d %q is invalid: %v", html, limit, i, p, err)
			}
		}
	}
	if err := matchModuloCuts(markup.PlainText(html), plains); err != nil {
		t.Fatalf("Split(%q, %d) = %q: %v", html, limit, parts, err)
	}
	if inputValid {
		if got, want := markup.PlainText(strings.Join(parts, "")), strings.Join(plains, ""); got != want {
			t.Fatalf("Split(%q, %d): PlainText of the joined parts %q, want %q", html, limit, got, want)
		}
	}
}

func TestSplitLongAnswer(t *testing.T) {
	md := longAnswer(10000)
	html := markup.ToHTML(md)
	parts := markup.Split(html, 4096)
	if len(parts) < 3 {
		t.Fatalf("Split of a %d-unit answer gave %d parts, want at least 3", units(html), len(parts))
	}
	checkSplit(t, html, 4096, parts)
	for i, p := range parts[:len(parts)-1] {
		if units(p) < 4096/4 {
			t.Errorf("part %d has only %d units", i, units(p))
		}
	}
}

func TestSplitManyLimits(t *testing.T) {
	html := markup.ToHTML(longAnswer(3000))
	for _, limit := range []int{16, 17, 25, 40, 64, 100, 257, 600, 1000} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			checkSplit(t, html, limit, markup.Split(html, limit))
		})
	}
}

func TestSplitCodeBlockAcrossCut(t *testing.T) {
	var md strings.Builder
	md.WriteString("Intro line.\n\n```python\n")
	for i := range 300 {
		fmt.Fprintf(&md, "print(%d < %d and 'x' & 'y')\n", i, i+1)
	}
	md.WriteString("```\n\nOutro.")
	html := markup.ToHTML(md.String())
	parts := markup.Split(html, 1000)
	checkSplit(t, html, 1000, parts)
	if len(parts) < 3 {
		t.Fatalf("got %d parts, want several", len(parts))
	}
	const open, close = `<pre><code class="language-python">`, "</code></pre>"
	for i, p := range parts[1 : len(parts)-1] {
		if !strings.HasPrefix(p, open) || !strings.HasSuffix(p, close) {
			t.Errorf("middle part %d is not a reopened, closed code block: %q...%q", i+1, p[:40], p[len(p)-20:])
		}
		if strings.Contains(p, "\n\n") {
			t.Errorf("part %d: code lines were not cut at a line break", i+1)
		}
	}
	if !strings.HasSuffix(parts[0], close) {
		t.Errorf("first part does not close the code block: ...%q", parts[0][len(parts[0])-30:])
	}
}

func TestSplitCountsUTF16(t *testing.T) {
	html := strings.Repeat("😀", 3000) // 6,000 UTF-16 units, 12,000 bytes
	parts := markup.Split(html, 4096)
	checkSplit(t, html, 4096, parts)
	want := []int{4096, 6000 - 4096}
	if len(parts) != len(want) {
		t.Fatalf("got %d parts, want %d", len(parts), len(want))
	}
	for i, p := range parts {
		if units(p) != want[i] {
			t.Errorf("part %d has %d units, want %d", i, units(p), want[i])
		}
	}
}

func TestSplit(t *testing.T) {
	tests := []struct {
		name  string
		html  string
		limit int
		want  []string
	}{
		{"fits", "<b>short</b>", 100, []string{"<b>short</b>"}},
		{"empty", "", 100, nil},
		{"whitespace only", " \n\n <b> </b>", 100, nil},
		{"paragraph first", "aaaa bbbb\ncccc\n\ndddd eeee", 20, []string{"aaaa bbbb\ncccc", "dddd eeee"}},
		{"line next", "aaaa bbbb\ncccc dddd eeee", 20, []string{"aaaa bbbb", "cccc dddd eeee"}},
		{"word next", "aaaa bbbb cccc dddd eeee", 20, []string{"aaaa bbbb cccc dddd", "eeee"}},
		{"hard last", strings.Repeat("x", 40), 16, []string{strings.Repeat("x", 16), strings.Repeat("x", 16), strings.Repeat("x", 8)}},
		{"entity kept whole", strings.Repeat("&amp;", 5), 16, []string{"&amp;&amp;&amp;", "&amp;&amp;"}},
		{"tags closed and reopened", "<b>aaaa bbbb cccc dddd</b>", 20, []string{"<b>aaaa bbbb</b>", "<b>cccc dddd</b>"}},
		{
			"attributes reopened",
			`<a href="https://e.com">aaaa bbbb cccc</a>`, 40,
			[]string{`<a href="https://e.com">aaaa bbbb</a>`, `<a href="https://e.com">cccc</a>`},
		},
		{"small paragraph skipped for a fuller part", "a\n\nbbbb cccc dddd eeee ffff", 20, []string{"a\n\nbbbb cccc dddd", "eeee ffff"}},
		{"limit raised to the minimum", "aaaa bbbb cccc dddd eeee", 1, []string{"aaaa bbbb cccc", "dddd eeee"}},
		{"huge tag degrades to text", `<a href="https://e.com/` + strings.Repeat("p", 40) + `">x &lt; y</a>`, 20, []string{"x &lt; y"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := markup.Split(tt.html, tt.limit)
			if !equal(got, tt.want) {
				t.Errorf("Split(%q, %d) = %q, want %q", tt.html, tt.limit, got, tt.want)
			}
			checkSplit(t, tt.html, tt.limit, got)
		})
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func FuzzSplit(f *testing.F) {
	for _, s := range []string{"", "a b\nc\n\nd", "<b>a <i>b</i> c</b>", `<a href="https://e.com">x y</a>`, "&amp;&lt;", "😀😀 😀", "<pre>a\nb</pre>"} {
		f.Add(s, 16)
	}
	f.Add(markup.ToHTML(longAnswer(3000)), 500)
	f.Fuzz(func(t *testing.T, s string, limit int) {
		limit = markup.MinLimit + int(uint(limit)%2000)
		checkSplit(t, s, limit, markup.Split(s, limit))
		html := markup.ToHTML(s)
		checkSplit(t, html, limit, markup.Split(html, limit))
	})
}

func BenchmarkToHTMLSplit(b *testing.B) {
	md := longAnswer(10000)
	b.SetBytes(int64(len(md)))
	b.ReportAllocs()
	for b.Loop() {
		parts := markup.Split(markup.ToHTML(md), 4096)
		if len(parts) == 0 {
			b.Fatal("no parts")
		}
	}
}
