package tools

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

func FuzzReadable(f *testing.F) {
	for _, seed := range []string{page, "<p>a</p>", "<script>", "<!--", "<a href='>'>", "&amp;", "İ<SCRİPT>",
		"<html><body><article><h1>t</h1><p>" + strings.Repeat("word ", 200) + "</p></article></body></html>",
		"<table><tr><td><ul><li><pre><code>x</code></pre></li></ul></td></tr></table>"} {
		f.Add(seed)
	}
	u, _ := url.Parse("https://example.com/a/b")
	f.Fuzz(func(t *testing.T, in string) {
		for _, mode := range []string{webMarkdown, webText} {
			got := readable([]byte(in), "text/html; charset=utf-8", u, mode)
			if utf8.ValidString(in) && !utf8.ValidString(got) {
				t.Fatalf("readable(%q, %s) = %q: invalid UTF-8 from valid input", in, mode, got)
			}
			if len(got) > 4*len(in)+1024 {
				t.Fatalf("readable(%q, %s): %d bytes out of %d in", in, mode, len(got), len(in))
			}
		}
	})
}

// articleOf returns a page of about size bytes: the test article with its
// body repeated, navigation, scripts and ads included.
func articleOf(b *testing.B, size int) []byte {
	b.Helper()
	doc, err := os.ReadFile(filepath.Join("testdata", "article.html"))
	if err != nil {
		b.Fatal(err)
	}
	s := string(doc)
	start, end := strings.Index(s, "<h2>Choosing"), strings.Index(s, "</article>")
	section := s[start:end]
	var body strings.Builder
	for body.Len() < size-len(s) {
		body.WriteString(section)
		body.WriteString(`<div class="ad">Sponsored link</div><script>var x = 1;</script>`)
	}
	return []byte(s[:end] + body.String() + s[end:])
}

// BenchmarkReadable500KB is web_fetch's extraction of a 500 KB article page.
func BenchmarkReadable500KB(b *testing.B) {
	for _, mode := range []string{webMarkdown, webText} {
		b.Run(mode, func(b *testing.B) {
			doc := articleOf(b, 500<<10)
			u, _ := url.Parse("https://garden.example/2025/tomatoes")
			b.ReportAllocs()
			b.SetBytes(int64(len(doc)))
			for b.Loop() {
				_ = readable(doc, "text/html; charset=utf-8", u, mode)
			}
		})
	}
}
