package markup

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// tagID names the inline tags emphasis and links produce.
type tagID uint8

const (
	tagB tagID = iota
	tagI
	tagS
	tagA
	numTags
)

func (t tagID) name() string {
	switch t {
	case tagB:
		return "b"
	case tagI:
		return "i"
	case tagS:
		return "s"
	default:
		return "a"
	}
}

// tagSet is the set of inline tags already open around some text.
type tagSet uint8

func (s tagSet) with(t tagID) tagSet { return s | 1<<t }

type nodeKind uint8

const (
	nodeText  nodeKind = iota // rendered HTML, written as is
	nodeDelim                 // a run of *, _ or ~ that may open or close emphasis
	nodeLink                  // [label](href), rendered when written out
)

// node is one piece of an inline run before emphasis is resolved.
type node struct {
	kind nodeKind
	text string // nodeText

	// nodeDelim
	ch                byte
	rem               int // characters not used by a match: written literally
	canOpen, canClose bool
	opens, closes     []tagID // in match order: the first match is the innermost

	// nodeLink
	href, label string
	literal     bool // label is not Markdown (autolinks)
}

// renderInline writes the inline Markdown s. Tags in active are already open
// around s and are not opened again; links are only parsed when links is set,
// since Telegram links cannot nest.
func renderInline(b *strings.Builder, s string, active tagSet, links bool) {
	nodes := parseInline(s, links)
	matchEmphasis(nodes)
	e := emitter{b: b}
	for t := tagB; t < numTags; t++ {
		if active&(1<<t) != 0 {
			e.active[t] = 1
		}
	}
	for i := range nodes {
		e.node(&nodes[i])
	}
}

func parseInline(s string, links bool) []node {
	var nodes []node
	var buf strings.Builder
	flush := func() {
		if buf.Len() > 0 {
			nodes = append(nodes, node{kind: nodeText, text: buf.String()})
			buf.Reset()
		}
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch c {
		case '\\':
			if i+1 < len(s) && isASCIIPunct(s[i+1]) {
				escapeText(&buf, s[i+1:i+2])
				i += 2
				continue
			}
		case '`':
			n := runLen(s, i, '`')
			if end := codeSpanEnd(s, i+n, n); end >= 0 {
				flush()
				nodes = append(nodes, node{kind: nodeText, text: codeSpan(s[i+n : end])})
				i = end + n
				continue
			}
			buf.WriteString(s[i : i+n])
			i += n
			continue
		case '[', '!':
			if links {
				if nd, n, ok := parseLink(s[i:]); ok {
					flush()
					nodes = append(nodes, nd)
					i += n
					continue
				}
			}
		case '<':
			if links {
				if end := strings.IndexByte(s[i:], '>'); end > 1 {
					u := s[i+1 : i+end]
					if allowedURL(u) {
						flush()
						nodes = append(nodes, node{kind: nodeLink, href: u, label: u, literal: true})
						i += end + 1
						continue
					}
				}
			}
		case '*', '_', '~':
			n := runLen(s, i, c)
			if d, ok := delimiter(s, i, n); ok {
				flush()
				nodes = append(nodes, d)
			} else {
				buf.WriteString(s[i : i+n])
			}
			i += n
			continue
		}
		// Copy up to the next character that may start markup.
		j := i + 1
		for j < len(s) && !strings.ContainsRune("\\`[!<*_~", rune(s[j])) {
			j++
		}
		escapeText(&buf, s[i:j])
		i = j
	}
	flush()
	return nodes
}

// delimiter classifies the run s[i:i+n]. Unlike CommonMark, '*' behaves like
// '_': a marker touching a letter or digit on its outer side is literal, so
// 2*3*4 and snake_case stay as written.
func delimiter(s string, i, n int) (node, bool) {
	c := s[i]
	prev, _ := utf8.DecodeLastRuneInString(s[:i])
	next, _ := utf8.DecodeRuneInString(s[i+n:])
	if i == 0 {
		prev = 0
	}
	if i+n == len(s) {
		next = 0
	}
	spaceBefore := prev == 0 || unicode.IsSpace(prev)
	spaceAfter := next == 0 || unicode.IsSpace(next)
	d := node{kind: nodeDelim, ch: c, rem: n}
	if c == '~' {
		if n != 2 {
			return node{}, false
		}
		d.canOpen, d.canClose = !spaceAfter, !spaceBefore
	} else {
		d.canOpen = !spaceAfter && !isAlnum(prev)
		d.canClose = !spaceBefore && !isAlnum(next)
	}
	return d, d.canOpen || d.canClose
}

// matchEmphasis pairs closers with the nearest earlier opener of the same
// character, like CommonMark's delimiter stack. Delimiters between a matched
// pair can no longer match, so the resulting tags nest properly.
func matchEmphasis(nodes []node) {
	bottom := [3]int{-1, -1, -1} // per character: no opener at or below
	for ci := range nodes {
		c := &nodes[ci]
		if c.kind != nodeDelim || !c.canClose {
			continue
		}
		k := strings.IndexByte("*_~", c.ch)
		for c.rem > 0 {
			oi := -1
			for j := ci - 1; j > bottom[k]; j-- {
				o := &nodes[j]
				if o.kind == nodeDelim && o.ch == c.ch && o.canOpen && o.rem > 0 {
					oi = j
					break
				}
			}
			if oi < 0 {
				bottom[k] = ci - 1
				break
			}
			o := &nodes[oi]
			use, t := 1, tagI
			switch {
			case c.ch == '~':
				use, t = 2, tagS
			case o.rem >= 2 && c.rem >= 2:
				use, t = 2, tagB
			}
			o.rem -= use
			c.rem -= use
			o.opens = append(o.opens, t)
			c.closes = append(c.closes, t)
			for j := oi + 1; j < ci; j++ {
				nodes[j].canOpen, nodes[j].canClose = false, false
			}
		}
	}
}

// emitter writes resolved nodes, skipping a tag already open around the
// text (Telegram gains nothing from <b> inside <b>).
type emitter struct {
	b      *strings.Builder
	active [numTags]int
	stack  []openTag
}

type openTag struct {
	t       tagID
	written bool
}

func (e *emitter) open(t tagID) {
	w := e.active[t] == 0
	if w {
		e.b.WriteString("<" + t.name() + ">")
	}
	e.active[t]++
	e.stack = append(e.stack, openTag{t, w})
}

func (e *emitter) close() {
	top := e.stack[len(e.stack)-1]
	e.stack = e.stack[:len(e.stack)-1]
	e.active[top.t]--
	if top.written {
		e.b.WriteString("</" + top.t.name() + ">")
	}
}

func (e *emitter) node(nd *node) {
	switch nd.kind {
	case nodeText:
		e.b.WriteString(nd.text)
	case nodeDelim:
		for range nd.closes {
			e.close()
		}
		for range nd.rem {
			e.b.WriteByte(nd.ch)
		}
		for k := len(nd.opens) - 1; k >= 0; k-- {
			e.open(nd.opens[k])
		}
	case nodeLink:
		e.link(nd)
	}
}

func (e *emitter) link(nd *node) {
	label := strings.TrimSpace(nd.label)
	if !allowedURL(nd.href) {
		if label == "" {
			escapeText(e.b, nd.href)
			return
		}
		renderInline(e.b, label, e.set(), false)
		return
	}
	e.b.WriteString(`<a href="` + escapeAttr(nd.href) + `">`)
	switch {
	case nd.literal || label == "":
		if label == "" {
			label = nd.href
		}
		escapeText(e.b, label)
	default:
		renderInline(e.b, label, e.set().with(tagA), false)
	}
	e.b.WriteString("</a>")
}

func (e *emitter) set() tagSet {
	var s tagSet
	for t := tagB; t < numTags; t++ {
		if e.active[t] > 0 {
			s = s.with(t)
		}
	}
	return s
}

// parseLink reads [label](href) or ![alt](href) at the start of s.
func parseLink(s string) (node, int, bool) {
	i := 0
	image := s[0] == '!'
	if image {
		if len(s) < 2 || s[1] != '[' {
			return node{}, 0, false
		}
		i = 1
	}
	end := matchingBracket(s, i, '[', ']')
	if end < 0 || end+1 >= len(s) || s[end+1] != '(' {
		return node{}, 0, false
	}
	close := matchingBracket(s, end+1, '(', ')')
	if close < 0 {
		return node{}, 0, false
	}
	dest := strings.TrimSpace(s[end+2 : close])
	if strings.HasPrefix(dest, "<") {
		if gt := strings.IndexByte(dest, '>'); gt > 0 {
			dest = dest[1:gt]
		}
	} else if f := strings.Fields(dest); len(f) > 0 {
		dest = f[0] // a "title" after the URL is dropped
	}
	label := s[i+1 : end]
	if image && strings.TrimSpace(label) == "" {
		label = "image"
	}
	return node{kind: nodeLink, href: dest, label: label}, close + 1, true
}

// matchingBracket returns the index of the bracket closing the one at s[i],
// honouring nesting and backslash escapes, or -1.
func matchingBracket(s string, i int, open, close byte) int {
	depth := 0
	for ; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case open:
			depth++
		case close:
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// allowedURL accepts the schemes worth a tappable link; anything else
// (javascript:, relative paths) is shown as text.
func allowedURL(u string) bool {
	if u == "" || strings.ContainsFunc(u, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) {
		return false
	}
	l := strings.ToLower(u)
	for _, p := range []string{"http://", "https://", "tg://", "mailto:"} {
		if strings.HasPrefix(l, p) && len(l) > len(p) {
			return true
		}
	}
	return false
}

func runLen(s string, i int, c byte) int {
	n := 0
	for i+n < len(s) && s[i+n] == c {
		n++
	}
	return n
}

// codeSpanEnd finds a run of exactly n backticks at or after i, or -1.
func codeSpanEnd(s string, i, n int) int {
	for i < len(s) {
		j := strings.IndexByte(s[i:], '`')
		if j < 0 {
			return -1
		}
		i += j
		m := runLen(s, i, '`')
		if m == n {
			return i
		}
		i += m
	}
	return -1
}

func codeSpan(content string) string {
	if len(content) >= 2 && content[0] == ' ' && content[len(content)-1] == ' ' && strings.Trim(content, " ") != "" {
		content = content[1 : len(content)-1]
	}
	var b strings.Builder
	b.WriteString("<code>")
	escapeText(&b, content)
	b.WriteString("</code>")
	return b.String()
}

func isASCIIPunct(c byte) bool {
	return c >= '!' && c <= '/' || c >= ':' && c <= '@' || c >= '[' && c <= '`' || c >= '{' && c <= '~'
}
