package markup_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// renderedTags are the only tags ToHTML may produce.
var renderedTags = map[string]bool{"b": true, "i": true, "s": true, "code": true, "pre": true, "a": true, "blockquote": true}

// telegramTags are all the tags Telegram's HTML parse mode knows.
var telegramTags = map[string]bool{
	"b": true, "strong": true, "i": true, "em": true, "u": true, "ins": true, "s": true, "strike": true, "del": true,
	"span": true, "tg-spoiler": true, "a": true, "code": true, "pre": true, "blockquote": true,
}

var (
	entityRE = regexp.MustCompile(`^&(amp|lt|gt|quot|#[0-9]{1,7}|#x[0-9a-fA-F]{1,6});`)
	attrRE   = regexp.MustCompile(`^\s+([a-z-]+)(="([^"<>&]*(?:&(?:amp|lt|gt|quot);[^"<>&]*)*)")?`)
	langRE   = regexp.MustCompile(`^language-[A-Za-z0-9+#._-]+$`)
)

// canonical maps Telegram's tag synonyms to one name, for the rule that an
// entity does not nest inside the same entity.
func canonical(name string) string {
	switch name {
	case "strong":
		return "b"
	case "em":
		return "i"
	case "ins":
		return "u"
	case "strike", "del":
		return "s"
	case "span":
		return "tg-spoiler"
	}
	return name
}

// validateHTML checks s against Telegram's HTML rules, strictly: only tags
// from allowed, balanced and properly nested; every '<', '>' and '&' outside
// a tag part of a tag or a character reference; attribute values quoted and
// escaped; hrefs with a safe scheme; nothing inside code or pre except code
// directly in pre; pre and blockquote only at the top level; no entity inside
// the same entity; valid UTF-8.
func validateHTML(s string, allowed map[string]bool) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("invalid UTF-8")
	}
	var stack []string
	has := func(name string) bool {
		for _, n := range stack {
			if canonical(n) == canonical(name) {
				return true
			}
		}
		return false
	}
	for i := 0; i < len(s); {
		switch s[i] {
		case '>':
			return fmt.Errorf("unescaped '>' at %d", i)
		case '&':
			m := entityRE.FindString(s[i:])
			if m == "" {
				return fmt.Errorf("unescaped '&' at %d", i)
			}
			i += len(m)
			continue
		case '<':
			end := strings.IndexByte(s[i:], '>')
			if end < 0 {
				return fmt.Errorf("unescaped '<' at %d", i)
			}
			tag := s[i+1 : i+end]
			if strings.HasPrefix(tag, "/") {
				if len(stack) == 0 || stack[len(stack)-1] != tag[1:] {
					return fmt.Errorf("unexpected end tag %q at %d (open: %v)", tag, i, stack)
				}
				stack = stack[:len(stack)-1]
			} else {
				name, err := checkStartTag(tag, allowed, stack)
				if err != nil {
					return fmt.Errorf("at %d: %w", i, err)
				}
				if has(name) {
					return fmt.Errorf("<%s> nested in itself at %d", name, i)
				}
				stack = append(stack, name)
			}
			i += end + 1
			continue
		}
		i++
	}
	if len(stack) > 0 {
		return fmt.Errorf("unclosed tags %v", stack)
	}
	return nil
}

func checkStartTag(tag string, allowed map[string]bool, stack []string) (string, error) {
	name := tag
	if k := strings.IndexAny(tag, " \t\n"); k >= 0 {
		name = tag[:k]
	}
	if !allowed[name] {
		return "", fmt.Errorf("tag %q not allowed", name)
	}
	attrs := map[string]string{}
	for rest := tag[len(name):]; rest != ""; {
		m := attrRE.FindStringSubmatch(rest)
		if m == nil {
			if strings.TrimSpace(rest) == "" {
				break
			}
			return "", fmt.Errorf("bad attributes %q in <%s>", rest, name)
		}
		attrs[m[1]] = strings.NewReplacer("&amp;", "&", "&lt;", "<", "&gt;", ">", "&quot;", `"`).Replace(m[3])
		rest = rest[len(m[0]):]
	}
	parent := ""
	if len(stack) > 0 {
		parent = stack[len(stack)-1]
	}
	switch {
	case parent == "code" || (parent == "pre" && name != "code"):
		return "", fmt.Errorf("<%s> inside <%s>", name, parent)
	case (name == "pre" || name == "blockquote") && len(stack) > 0:
		return "", fmt.Errorf("<%s> not at top level (in %v)", name, stack)
	}
	for k, v := range attrs {
		ok := false
		switch {
		case name == "a" && k == "href":
			ok = safeHref(v)
		case name == "code" && k == "class":
			ok = parent == "pre" && langRE.MatchString(v)
		case name == "span" && k == "class":
			ok = v == "tg-spoiler"
		case name == "blockquote" && k == "expandable":
			ok = true
		}
		if !ok {
			return "", fmt.Errorf("attribute %s=%q not allowed on <%s>", k, v, name)
		}
	}
	switch {
	case name == "a" && attrs["href"] == "":
		return "", fmt.Errorf("<a> without href")
	case name == "span" && attrs["class"] == "":
		return "", fmt.Errorf("<span> without class")
	}
	return name, nil
}

func safeHref(u string) bool {
	l := strings.ToLower(u)
	for _, p := range []string{"http://", "https://", "tg://", "mailto:"} {
		if strings.HasPrefix(l, p) {
			return !strings.ContainsAny(u, " \t\n")
		}
	}
	return false
}

func TestValidateHTML(t *testing.T) {
	valid := []string{
		"", "plain", "<b>x</b>", "<b><i>x</i></b>", `<a href="https://e.com/?a=1&amp;b=&quot;">x</a>`,
		`<pre><code class="language-go">x &lt; y</code></pre>`, "<pre>x</pre>", "<blockquote>q <b>b</b></blockquote>",
		"&#128512; &#x1F600; &amp;", `<span class="tg-spoiler">s</span>`,
	}
	for _, s := range valid {
		if err := validateHTML(s, telegramTags); err != nil {
			t.Errorf("validateHTML(%q) = %v, want nil", s, err)
		}
	}
	invalid := []string{
		"<b>x", "x</b>", "<b><i>x</b></i>", "<x>y</x>", "a < b", "a > b", "AT&T", "&copy;",
		`<a href="javascript:x">x</a>`, `<a>x</a>`, `<a href=x>x</a>`, "<pre><b>x</b></pre>", "<code><i>x</i></code>",
		"<b><pre>x</pre></b>", "<b><b>x</b></b>", "<b><strong>x</strong></b>", "<blockquote><blockquote>x</blockquote></blockquote>",
		`<code class="language-go">x</code>`, `<a href="https://e.com"><a href="https://e.com">x</a></a>`, "\xff",
	}
	for _, s := range invalid {
		if err := validateHTML(s, telegramTags); err == nil {
			t.Errorf("validateHTML(%q) = nil, want an error", s)
		}
	}
}
