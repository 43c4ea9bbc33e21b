package markup_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nanobot-go/nanobot/channels/telegram/markup"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestToHTMLGolden renders every testdata/*.md and compares the result with
// the .html file next to it.
func TestToHTMLGolden(t *testing.T) {
	inputs, err := filepath.Glob(filepath.Join("testdata", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(inputs) == 0 {
		t.Fatal("no golden inputs in testdata")
	}
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".md")
		t.Run(name, func(t *testing.T) {
			md, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			got := markup.ToHTML(string(md))
			if err := validateHTML(got, renderedTags); err != nil {
				t.Errorf("ToHTML output is not valid Telegram HTML: %v\n%s", err, got)
			}
			golden := strings.TrimSuffix(in, ".md") + ".html"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("ToHTML(%s) mismatch (-want +got):\n%s", in, diff)
			}
		})
	}
}

func TestToHTML(t *testing.T) {
	tests := []struct {
		name, md, want string
	}{
		{"empty", "", ""},
		{"plain", "hello", "hello"},
		{"bold", "**a**", "<b>a</b>"},
		{"underscore bold", "__a__", "<b>a</b>"},
		{"italic", "*a*", "<i>a</i>"},
		{"underscore italic", "_a_", "<i>a</i>"},
		{"strike", "~~a~~", "<s>a</s>"},
		{"code", "`a<b`", "<code>a&lt;b</code>"},
		{"snake_case", "snake_case_name", "snake_case_name"},
		{"multiplication", "2*3*4", "2*3*4"},
		{"spaced stars", "a * b * c", "a * b * c"},
		{"bold italic", "***a***", "<i><b>a</b></i>"},
		{"same tag nested once", "**a **b** c**", "<b>a b c</b>"},
		{"heading suppresses inner bold", "# **a** b", "<b>a b</b>"},
		{"fence with language", "```go\nx := 1\n```", `<pre><code class="language-go">x := 1</code></pre>`},
		{"fence language cleaned", "```c\"><b>\nx\n```", `<pre><code class="language-cb">x</code></pre>`},
		{"fence without language", "```\nx\n```", "<pre>x</pre>"},
		{"empty fence", "```\n```", ""},
		{"link", "[a](https://e.com/?x=1&y=2)", `<a href="https://e.com/?x=1&amp;y=2">a</a>`},
		{"link quote", `[a](https://e.com/"x)`, `<a href="https://e.com/&quot;x">a</a>`},
		{"unsafe link", "[a](javascript:alert(1))", "a"},
		{"link in bold", "**[a](http://e.com)**", `<b><a href="http://e.com">a</a></b>`},
		{"bold in link", "[**a**](http://e.com)", `<a href="http://e.com"><b>a</b></a>`},
		{"emphasis cannot cross a link", "*a [b* c](http://e.com)", `*a <a href="http://e.com">b* c</a>`},
		{"bullet", "- a", "• a"},
		{"star bullet", "* a", "• a"},
		{"numbered", "3. a", "3. a"},
		{"quote", "> a\n> b", "<blockquote>a\nb</blockquote>"},
		{"rule", "---", "———"},
		{"escaping", `<b> & "q"`, `&lt;b&gt; &amp; "q"`},
		{"crlf", "a\r\nb\rc", "a\nb\nc"},
		{"invalid utf-8", "a\xffb", "a\uFFFDb"},
		{"backslash escape", `\*a\*`, "*a*"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := markup.ToHTML(tt.md)
			if got != tt.want {
				t.Errorf("ToHTML(%q) = %q, want %q", tt.md, got, tt.want)
			}
			if err := validateHTML(got, renderedTags); err != nil {
				t.Errorf("ToHTML(%q) = %q: %v", tt.md, got, err)
			}
		})
	}
}

func TestPlainText(t *testing.T) {
	tests := []struct{ html, want string }{
		{"", ""},
		{"<b>a</b> &amp; <i>b</i>", "a & b"},
		{`<a href="https://e.com/?a=1&amp;b=2">link</a>`, "link"},
		{"&lt;tag&gt; &quot;q&quot; &#128512; &#x41;", `<tag> "q" 😀 A`},
		{`<pre><code class="language-go">x &lt; y</code></pre>`, "x < y"},
		{"a < b & c", "a < b & c"}, // stray characters are kept as text
		{"&copy; &#0; &#xD800;", "&copy; &#0; &#xD800;"},
	}
	for _, tt := range tests {
		if got := markup.PlainText(tt.html); got != tt.want {
			t.Errorf("PlainText(%q) = %q, want %q", tt.html, got, tt.want)
		}
	}
}

func FuzzToHTML(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, md string) {
		got := markup.ToHTML(md)
		if err := validateHTML(got, renderedTags); err != nil {
			t.Fatalf("ToHTML(%q) = %q: %v", md, got, err)
		}
	})
}

// addSeeds adds the golden inputs and a few tricky snippets to a fuzz corpus.
func addSeeds(f *testing.F) {
	f.Helper()
	inputs, _ := filepath.Glob(filepath.Join("testdata", "*.md"))
	for _, in := range inputs {
		md, err := os.ReadFile(in)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(md))
	}
	for _, s := range []string{
		"", "*", "**", "***a***", "*a **b* c**", "_a_b_", "[a](b)", "[a](https://x)", "```\n", "> ```", "# *a*",
		"`a", "~~a~~b~~", "<https://a>", "![](http://x)", "&amp;", "\\", "a\r\nb", "\xff", "- [ ] x", "1) y",
	} {
		f.Add(s)
	}
}
