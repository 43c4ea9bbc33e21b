package markup

import (
	"strings"
	"unicode"
)

// MinLimit is the smallest limit Split honours; smaller limits are raised to
// it so that any single character, escaped, fits in a part.
const MinLimit = 16

// cut classes, best first.
const (
	cutParagraph = iota // before a run of two or more newlines
	cutLine             // before a single newline
	cutWord             // before a run of spaces
	cutHard             // between any two characters
	numCuts
)

// Split cuts Telegram HTML into parts of at most limit UTF-16 code units each,
// counting the whole part, tags included, which is stricter than Telegram's
// count of the visible text. It cuts at a paragraph break if one leaves the
// part at least a quarter full, else at a line break, then between words, and
// only then anywhere; never inside a tag, a character reference or a
// surrogate pair. The whitespace at a break is dropped. Tags open at a cut are
// closed at the end of the part and reopened, attributes and all, at the start
// of the next, so each part is valid on its own when html is.
//
// Parts whose visible text would be only whitespace are left out, so Split
// returns no parts for html with nothing to show.
func Split(html string, limit int) []string {
	limit = max(limit, MinLimit)
	toks := tokenize(html)
	if stringUnits(html) <= limit {
		if !visible(toks) {
			return nil
		}
		return []string{html}
	}
	s := splitter{toks: toks, limit: limit}
	var parts []string
	for s.pos < len(toks) {
		if p, shown := s.next(); shown {
			parts = append(parts, p)
		}
	}
	return parts
}

// splitter walks the tokens once, carrying the tags open at the current
// position from one part to the next.
type splitter struct {
	toks  []token
	limit int
	pos   int
	stack []token // open tags at pos
}

// candidate is a place to end a part: the part is toks[start:end], the next
// one starts at resume.
type candidate struct {
	end, resume int
	stack       []token
	ok          bool
}

// next returns the part starting at s.pos, and whether it shows anything
// but whitespace, and advances past it.
func (s *splitter) next() (string, bool) {
	if c, ok := s.scan(); ok {
		var b strings.Builder
		for _, t := range s.stack {
			b.WriteString(t.raw)
		}
		for _, t := range s.toks[s.pos:c.end] {
			b.WriteString(t.raw)
		}
		writeClosers(&b, c.stack)
		shown := visible(s.toks[s.pos:c.end])
		s.pos, s.stack = c.resume, c.stack
		return b.String(), shown
	}
	out := s.degraded()
	return out, strings.TrimFunc(out, unicode.IsSpace) != ""
}

// scan finds where the part starting at s.pos should end. cost is what the
// part would take if cut at the current position: the reopened tags, the
// tokens so far and the closing tags. It never decreases, so the scan stops
// at the first position over the limit.
func (s *splitter) scan() (candidate, bool) {
	stack := append([]token(nil), s.stack...)
	cost := 0
	for _, t := range stack {
		cost += t.units() + closerUnits(t)
	}
	var best [numCuts]candidate
	seen := false // a visible character is in the part
	i := s.pos
	for ; cost <= s.limit; i++ {
		if i == len(s.toks) {
			return candidate{end: i, resume: i, stack: stack, ok: true}, true
		}
		if seen && i > s.pos {
			s.consider(&best, i, stack)
		}
		t := s.toks[i]
		cost += t.units()
		switch t.kind {
		case tokOpen:
			cost += closerUnits(t)
			stack = append(stack, t)
		case tokClose:
			if len(stack) > 0 && stack[len(stack)-1].name == t.name {
				cost -= closerUnits(stack[len(stack)-1])
				stack = stack[: len(stack)-1 : len(stack)-1]
			}
		default:
			seen = seen || !unicode.IsSpace(t.r)
		}
	}
	quarter := s.limit / 4
	for k := cutParagraph; k < cutHard; k++ {
		if c := best[k]; c.ok && s.units(s.pos, c.end) >= quarter {
			return c, true
		}
	}
	last := candidate{}
	for _, c := range best {
		if c.ok && c.end > last.end {
			last = c
		}
	}
	return last, last.ok
}

// consider records position i as a cut of the classes it qualifies for;
// later positions replace earlier ones.
func (s *splitter) consider(best *[numCuts]candidate, i int, stack []token) {
	t, prev := s.toks[i], s.toks[i-1]
	if t.kind == tokText && (t.r == '\n' || t.r == ' ') && !(prev.kind == tokText && prev.r == t.r) {
		j := i
		for j < len(s.toks) && s.toks[j].kind == tokText && s.toks[j].r == t.r {
			j++
		}
		k := cutWord
		if t.r == '\n' {
			k = cutLine
			if j-i >= 2 {
				k = cutParagraph
			}
		}
		best[k] = candidate{end: i, resume: j, stack: stack, ok: true}
	}
	// A hard cut right after a start tag would leave an empty element, and
	// one inside a grapheme (before a combining mark or around a joiner)
	// would break a character in two on screen.
	if prev.kind == tokOpen || joins(t) || (prev.kind == tokText && prev.r == '\u200d') {
		return
	}
	best[cutHard] = candidate{end: i, resume: i, stack: stack, ok: true}
}

func joins(t token) bool {
	if t.kind != tokText {
		return false
	}
	return t.r == '\u200d' || unicode.Is(unicode.Mn, t.r) || unicode.Is(unicode.Me, t.r) ||
		(t.r >= '\ufe00' && t.r <= '\ufe0f') || (t.r >= 0x1f3fb && t.r <= 0x1f3ff)
}

// degraded is the last resort when not even one character fits between the
// tags to reopen and close (an enormous href): it emits text without tags,
// re-escaped, while still tracking which tags are open.
func (s *splitter) degraded() string {
	var b strings.Builder
	cost := 0
	lastSpace := -1 // byte length of b at the last space, and its token index
	lastSpaceTok := 0
	i := s.pos
	for ; i < len(s.toks); i++ {
		t := s.toks[i]
		switch t.kind {
		case tokOpen:
			s.stack = append(s.stack, t)
			continue
		case tokClose:
			if n := len(s.stack); n > 0 && s.stack[n-1].name == t.name {
				s.stack = s.stack[: n-1 : n-1]
			}
			continue
		}
		var esc strings.Builder
		escapeText(&esc, string(t.r))
		if cost+stringUnits(esc.String()) > s.limit {
			break
		}
		if t.r == ' ' || t.r == '\n' {
			lastSpace, lastSpaceTok = b.Len(), i
		}
		b.WriteString(esc.String())
		cost += stringUnits(esc.String())
	}
	out := b.String()
	if i < len(s.toks) && lastSpace > 0 {
		// Prefer ending between words; the tags seen after the break are
		// seen again when the next part starts there.
		out = out[:lastSpace]
		i = lastSpaceTok + 1
		s.stack = s.stackAt(i)
	}
	s.pos = i
	return out
}

// stackAt recomputes the open tags before token i.
func (s *splitter) stackAt(i int) []token {
	var stack []token
	for _, t := range s.toks[:i] {
		switch t.kind {
		case tokOpen:
			stack = append(stack, t)
		case tokClose:
			if n := len(stack); n > 0 && stack[n-1].name == t.name {
				stack = stack[:n-1]
			}
		}
	}
	return stack
}

func (s *splitter) units(from, to int) int {
	n := 0
	for _, t := range s.toks[from:to] {
		n += t.units()
	}
	return n
}

func closerUnits(open token) int { return len(open.name) + 3 }

func writeClosers(b *strings.Builder, stack []token) {
	for i := len(stack) - 1; i >= 0; i-- {
		b.WriteString("</" + stack[i].name + ">")
	}
}

// visible reports whether the tokens show anything but whitespace.
func visible(toks []token) bool {
	for _, t := range toks {
		if (t.kind == tokText || t.kind == tokEntity) && !unicode.IsSpace(t.r) {
			return true
		}
	}
	return false
}
