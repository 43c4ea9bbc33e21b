package safety

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// unknownMark stands for the part of a word whose value is only known when
// the shell runs (a variable, a command substitution). Check refuses input
// containing NUL, so the mark cannot come from the command itself.
const unknownMark = "\x00"

// arg is the statically known value of one shell word.
type arg struct {
	val    string // value, with unknownMark for run-time parts
	glob   bool   // an unquoted *, ? or [ is present
	subst  bool   // contains a command or process substitution
	fetch  bool   // a substitution inside runs a downloader
	decode bool   // a substitution inside runs a decoder
	secret bool   // a substitution inside searches for files holding credentials
	self   bool   // a substitution inside prints nanobot's process ids
	// inherited: an unknown part is a plain variable the line never sets,
	// so its value comes from the environment the bot runs in.
	inherited bool
	proc      *syntax.ProcSubst
}

func (a arg) known() bool { return !strings.Contains(a.val, unknownMark) }

// text is the value with unknown parts shown as "$?" for messages and rules.
func (a arg) text() string { return strings.ReplaceAll(a.val, unknownMark, "$?") }

func litArg(s string) arg { return arg{val: s} }

// words evaluates the words of a simple command, applying brace expansion.
func (j *judge) words(ws []*syntax.Word, sc *scope) []arg {
	var out []arg
	for _, w := range ws {
		bws := braceWords(w)
		for _, bw := range bws {
			if len(bws) > 1 && isEmptyWord(bw) {
				continue // bash drops unquoted empty words: {bash,} is "bash"
			}
			out = append(out, j.word(bw, sc))
		}
	}
	return out
}

// isEmptyWord reports whether a word has no parts but empty literals.
func isEmptyWord(w *syntax.Word) bool {
	for _, p := range w.Parts {
		if l, ok := p.(*syntax.Lit); !ok || l.Value != "" {
			return false
		}
	}
	return true
}

// braceWords performs bash brace expansion on a copy of w, keeping the
// original when there is none or it would be too large.
func braceWords(w *syntax.Word) []*syntax.Word {
	hasBrace := false
	for _, p := range w.Parts {
		if l, ok := p.(*syntax.Lit); ok && strings.Contains(l.Value, "{") {
			hasBrace = true
		}
	}
	if !hasBrace {
		return []*syntax.Word{w}
	}
	cp := &syntax.Word{Parts: append([]syntax.WordPart(nil), w.Parts...)}
	if !syntax.SplitBraces(cp) {
		return []*syntax.Word{w}
	}
	var out []*syntax.Word
	for bw, err := range expand.BracesSeq(nil, cp) {
		if err != nil || len(out) >= 64 {
			return []*syntax.Word{w}
		}
		out = append(out, bw)
	}
	if len(out) == 0 {
		return []*syntax.Word{w}
	}
	return out
}

// word evaluates one word without running anything.
func (j *judge) word(w *syntax.Word, sc *scope) arg {
	var a arg
	var sb strings.Builder
	for i, part := range w.Parts {
		j.wordPart(&a, &sb, part, sc, i == 0, false)
	}
	a.val = sb.String()
	if len(w.Parts) == 1 {
		if ps, ok := w.Parts[0].(*syntax.ProcSubst); ok {
			a.proc = ps
		}
	}
	return a
}

func (j *judge) wordPart(a *arg, sb *strings.Builder, part syntax.WordPart, sc *scope, first, dq bool) {
	switch p := part.(type) {
	case *syntax.Lit:
		v := p.Value
		if first && !dq && strings.HasPrefix(v, "~") {
			v = j.tilde(v)
		}
		if dq {
			sb.WriteString(unescapeDouble(v))
		} else {
			s, g := unescapeBare(v)
			sb.WriteString(s)
			a.glob = a.glob || g
		}
	case *syntax.SglQuoted:
		if p.Dollar {
			sb.WriteString(decodeANSIC(p.Value))
		} else {
			sb.WriteString(p.Value)
		}
	case *syntax.DblQuoted:
		for i, pp := range p.Parts {
			j.wordPart(a, sb, pp, sc, first && i == 0, true)
		}
	case *syntax.ParamExp:
		v := sc.param(p)
		sb.WriteString(v)
		if v == unknownMark && p.Param != nil && sc.vars[p.Param.Value] == nil && p.Exp == nil && p.Repl == nil && !p.Excl && p.Slice == nil && p.Index == nil {
			a.inherited = true
		}
		if p.Param != nil {
			if v := sc.vars[p.Param.Value]; v != nil && v.secret {
				a.secret = true
			}
		}
	case *syntax.CmdSubst:
		if isPwd(p.Stmts) && sc.cwd != "" {
			sb.WriteString(sc.cwd)
			return
		}
		if isMktemp(p.Stmts) {
			// mktemp prints the name of a file it just created under /tmp:
			// nothing that existed before can be behind it.
			a.subst = true
			sb.WriteString("/tmp/tmp.mktemp_")
			return
		}
		if isTokenSubst(p.Stmts) {
			// $(date +%F) and the like print one word without a slash:
			// as part of a path it names a file, never another directory.
			a.subst = true
			sb.WriteString("_")
			return
		}
		a.subst = true
		j.inspectSubst(a, p.Stmts)
		sb.WriteString(unknownMark)
	case *syntax.ProcSubst:
		a.subst = true
		j.inspectSubst(a, p.Stmts)
		sb.WriteString("/dev/fd/63")
	case *syntax.ArithmExp:
		if n, ok := evalArith(p.X); ok {
			sb.WriteString(strconv.FormatInt(n, 10))
		} else {
			sb.WriteString(unknownMark)
		}
	case *syntax.ExtGlob:
		a.glob = true
		sb.WriteString(p.Op.String() + p.Pattern.Value + ")")
	case *syntax.BraceExp:
		sb.WriteString(unknownMark)
	default:
		sb.WriteString(unknownMark)
	}
}

// evalArith folds an arithmetic expansion made of number literals only, so
// that dd count=$((1024*1024)) is judged by its value.
func evalArith(x syntax.ArithmExpr) (int64, bool) {
	const limit = 1 << 62
	switch x := x.(type) {
	case *syntax.Word:
		n, err := strconv.ParseInt(x.Lit(), 0, 64)
		return n, err == nil
	case *syntax.ParenArithm:
		return evalArith(x.X)
	case *syntax.UnaryArithm:
		n, ok := evalArith(x.X)
		switch {
		case !ok:
			return 0, false
		case x.Op == syntax.Minus:
			return -n, true
		case x.Op == syntax.Plus:
			return n, true
		}
	case *syntax.BinaryArithm:
		a, ok1 := evalArith(x.X)
		b, ok2 := evalArith(x.Y)
		if !ok1 || !ok2 || a < -limit || a > limit || b < -limit || b > limit {
			return 0, false
		}
		clamp := func(f float64) (int64, bool) {
			if f > limit || f < -limit {
				return limit, true
			}
			return int64(f), true
		}
		switch x.Op {
		case syntax.Add:
			return a + b, true
		case syntax.Sub:
			return a - b, true
		case syntax.Mul:
			return clamp(float64(a) * float64(b))
		case syntax.Quo:
			if b != 0 {
				return a / b, true
			}
		case syntax.Pow:
			if b >= 0 {
				return clamp(math.Pow(float64(a), float64(b)))
			}
		case syntax.Shl:
			if b >= 0 && b < 63 {
				return clamp(float64(a) * math.Pow(2, float64(b)))
			}
		}
	}
	return 0, false
}

// isTokenSubst reports whether a substitution runs a command that prints a
// single word without a slash: a date, a user or host name, a commit id.
func isTokenSubst(stmts []*syntax.Stmt) bool {
	if len(stmts) != 1 {
		return false
	}
	ce, ok := stmts[0].Cmd.(*syntax.CallExpr)
	if !ok || len(ce.Args) == 0 || len(ce.Assigns) > 0 || stmts[0].Background {
		return false
	}
	var words []string
	for _, w := range ce.Args {
		t := wordText(w)
		if t == "" && len(w.Parts) > 0 || strings.Contains(t, "/") {
			return false // an expansion, or a format that may print a slash
		}
		words = append(words, t)
	}
	switch words[0] {
	case "date":
		for _, w := range words[1:] {
			if w == "-f" || w == "--file" || w == "-r" || w == "--reference" {
				return false
			}
		}
		return true
	case "whoami", "hostname", "id", "uname", "nproc", "uuidgen", "basename", "arch":
		return true
	case "git":
		if len(words) < 2 || words[1] != "rev-parse" {
			return false
		}
		for _, w := range words[2:] {
			if strings.HasPrefix(w, "--show") || strings.Contains(w, "dir") || w == "--abbrev-ref" || w == "--symbolic-full-name" || w == "--symbolic" {
				return false // paths and branch names can hold a slash
			}
		}
		return true
	}
	return false
}

// isMktemp reports whether a substitution is mktemp creating a file or
// directory in the default temporary directory.
func isMktemp(stmts []*syntax.Stmt) bool {
	if len(stmts) != 1 || len(stmts[0].Redirs) > 0 || stmts[0].Background {
		return false
	}
	ce, ok := stmts[0].Cmd.(*syntax.CallExpr)
	if !ok || len(ce.Args) == 0 || len(ce.Assigns) > 0 || ce.Args[0].Lit() != "mktemp" {
		return false
	}
	for _, w := range ce.Args[1:] {
		t := wordText(w)
		switch {
		case t == "" && len(w.Parts) > 0, strings.Contains(t, "/"):
			return false // a template in another directory
		case t == "-d" || t == "-q" || t == "-t" || t == "--directory" || t == "--quiet" || strings.HasPrefix(t, "--suffix="):
		case strings.HasPrefix(t, "-"):
			return false // -p, --tmpdir and -u choose or only name a place
		}
	}
	return true
}

// isPwd reports whether a substitution is just $(pwd).
func isPwd(stmts []*syntax.Stmt) bool {
	if len(stmts) != 1 || len(stmts[0].Redirs) > 0 {
		return false
	}
	ce, ok := stmts[0].Cmd.(*syntax.CallExpr)
	return ok && len(ce.Args) == 1 && len(ce.Assigns) == 0 && ce.Args[0].Lit() == "pwd"
}

// inspectSubst notes whether a substitution runs a downloader or a decoder;
// the commands inside are judged on their own elsewhere.
func (j *judge) inspectSubst(a *arg, stmts []*syntax.Stmt) {
	for _, st := range stmts {
		syntax.Walk(st, func(n syntax.Node) bool {
			ce, ok := n.(*syntax.CallExpr)
			if !ok || len(ce.Args) == 0 {
				return true
			}
			for _, w := range ce.Args {
				name := baseName(w.Lit())
				if name == "" {
					continue
				}
				if isFetcher(name) {
					a.fetch = true
				}
				if isDecoderName(name, ce) {
					a.decode = true
				}
				if searchesSecrets(ce) {
					a.secret = true
				}
				if j.selfPIDs(ce) {
					a.self = true
				}
				break
			}
			return true
		})
	}
}

func (j *judge) tilde(v string) string {
	rest := v[1:]
	user, tail, _ := strings.Cut(rest, "/")
	if tail != "" || strings.Contains(rest, "/") {
		tail = "/" + tail
	}
	switch user {
	case "":
		if j.p.home == "" {
			return unknownMark + tail
		}
		return j.p.home + tail
	case "root":
		return "/root" + tail
	case "+", "-":
		return unknownMark + tail
	}
	return "/home/" + user + tail
}

// unescapeBare removes backslash quoting from an unquoted literal and
// reports whether it contains glob characters.
func unescapeBare(s string) (string, bool) {
	if !strings.ContainsAny(s, "\\*?[") {
		return s, false
	}
	var sb strings.Builder
	glob := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\\':
			if i+1 < len(s) {
				i++
				if s[i] != '\n' {
					sb.WriteByte(s[i])
				}
			} else {
				sb.WriteByte('\\')
			}
			continue
		case '*', '?':
			glob = true
		case '[':
			glob = glob || strings.IndexByte(s[i+1:], ']') >= 0
		}
		sb.WriteByte(c)
	}
	return sb.String(), glob
}

func unescapeDouble(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) {
			switch s[i+1] {
			case '"', '\\', '$', '`':
				i++
				c = s[i]
			case '\n':
				i++
				continue
			}
		}
		sb.WriteByte(c)
	}
	return sb.String()
}

// decodeANSIC decodes the body of a $'...' string, and printf or echo -e
// escapes, which are nearly the same.
func decodeANSIC(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			sb.WriteByte(c)
			continue
		}
		i++
		switch e := s[i]; e {
		case 'a':
			sb.WriteByte('\a')
		case 'b':
			sb.WriteByte('\b')
		case 'e', 'E':
			sb.WriteByte(0x1b)
		case 'f':
			sb.WriteByte('\f')
		case 'n':
			sb.WriteByte('\n')
		case 'r':
			sb.WriteByte('\r')
		case 't':
			sb.WriteByte('\t')
		case 'v':
			sb.WriteByte('\v')
		case '\\', '\'', '"', '?':
			sb.WriteByte(e)
		case 'x', 'u', 'U':
			maxDigits := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			k := i + 1
			for k < len(s) && k-i-1 < maxDigits && isHex(s[k]) {
				k++
			}
			if k == i+1 {
				sb.WriteByte('\\')
				sb.WriteByte(e)
				continue
			}
			n, _ := strconv.ParseUint(s[i+1:k], 16, 32)
			if e == 'x' {
				sb.WriteByte(byte(n))
			} else if utf8.ValidRune(rune(n)) {
				sb.WriteRune(rune(n))
			}
			i = k - 1
		case 'c':
			if i+1 < len(s) {
				i++
				sb.WriteByte(s[i] & 0x1f)
			}
		case '0', '1', '2', '3', '4', '5', '6', '7':
			k := i
			if e == '0' {
				k++ // printf's \0NNN form
			}
			start := k
			for k < len(s) && k-start < 3 && s[k] >= '0' && s[k] <= '7' {
				k++
			}
			n, _ := strconv.ParseUint(s[start:k], 8, 16)
			if k == start {
				n = 0
			}
			sb.WriteByte(byte(n))
			i = k - 1
		default:
			sb.WriteByte('\\')
			sb.WriteByte(e)
		}
	}
	out, _, _ := strings.Cut(sb.String(), "\x00")
	return out
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// baseName returns the last element of a command path, "" for an empty word.
func baseName(s string) string {
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		return s[i+1:]
	}
	return s
}
