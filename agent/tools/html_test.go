package tools

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestHTMLToText(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain", "hello", "hello"},
		{"paragraphs", "<p>one</p><p>two</p>", "one\ntwo"},
		{"inline tags", "a <b>bold</b> and <a href='x'>link</a>", "a bold and link"},
		{"script and style", "<script>alert(1)</script>x<STYLE>p{}</STYLE>y<noscript>z</noscript>", "xy"},
		{"script with tag-like text", `<script>if (a < b && "</p>") {}</script>after`, "after"},
		{"comment", "a<!-- <p>hidden</p> -->b", "ab"},
		{"unterminated comment", "a<!-- forever", "a"},
		{"unterminated script", "a<script>forever", "a"},
		{"entities", "&lt;tag&gt; &amp; &quot;q&quot; &#233; &nbsp;x", "<tag> & \"q\" é x"},
		{"less-than in text", "1 < 2 and 3 > 2", "1 < 2 and 3 > 2"},
		{"quoted angle bracket", `<a title="a>b">text</a>`, "text"},
		{"list", "<ul><li>a</li><li>b</li></ul>", "- a\n- b"},
		{"table", "<table><tr><td>a</td><td>b</td></tr><tr><td>c</td></tr></table>", "a b\nc"},
		{"whitespace", "  a \t\n\n\n\n  b  ", "a\nb"},
		{"nested blocks", "<div><div><p>a</p></div></div><div><p>b</p></div>", "a\nb"},
		{"br", "a<br>b<br/>c", "a\nb\nc"},
		{"doctype", "<!DOCTYPE html><html>x</html>", "x"},
		{"unicode upper case", "<P>İstanbul</P><SCRIPT>x</SCRIPT>ş", "İstanbul\nş"},
		{"trailing lt", "a <", "a <"},
	}
	for _, tt := range tests {
		if got := htmlToText(tt.in); got != tt.want {
			t.Errorf("%s: htmlToText(%q) = %q, want %q", tt.name, tt.in, got, tt.want)
		}
	}
}

func FuzzHTMLToText(f *testing.F) {
	for _, seed := range []string{page, "<p>a</p>", "<script>", "<!--", "<a href='>'>", "&amp;", "İ<SCRİPT>"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got := htmlToText(in)
		if utf8.ValidString(in) && !utf8.ValidString(got) {
			t.Fatalf("htmlToText(%q) = %q: invalid UTF-8 from valid input", in, got)
		}
		if strings.Contains(got, "\n\n") {
			t.Fatalf("htmlToText(%q) = %q: runs of blank lines left", in, got)
		}
	})
}

func BenchmarkHTMLToText(b *testing.B) {
	doc := strings.Repeat(page, 200)
	b.ReportAllocs()
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		_ = htmlToText(doc)
	}
}
