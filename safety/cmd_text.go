package safety

import (
	"strings"

	"github.com/nanobot-go/nanobot/internal/lazyre"
)

// echo records literal output so that "echo ... | sh" can be judged.
func (c *call) echo() outcome {
	args := c.argv[1:]
	var sb strings.Builder
	if c.name == "printf" {
		if len(args) > 0 && args[0].val == "-v" {
			return judgedArgs
		}
		if len(args) == 0 {
			return judgedArgs
		}
		for _, a := range args {
			if !a.known() {
				return judgedArgs
			}
		}
		format := args[0].val
		rest := args[1:]
		out := rePrintfVerb.ReplaceAllStringFunc(format, func(string) string {
			if len(rest) == 0 {
				return ""
			}
			v := rest[0].val
			rest = rest[1:]
			return decodeANSIC(v)
		})
		sb.WriteString(decodeANSIC(strings.ReplaceAll(out, "%%", "%")))
		for len(rest) > 0 { // printf reuses the format for extra arguments
			sb.WriteString(" " + rest[0].val)
			rest = rest[1:]
		}
	} else {
		escapes := false
		for len(args) > 0 && (args[0].val == "-e" || args[0].val == "-n" || args[0].val == "-E" || args[0].val == "-ne" || args[0].val == "-en") {
			if strings.Contains(args[0].val, "e") {
				escapes = true
			}
			args = args[1:]
		}
		var parts []string
		for _, a := range args {
			if !a.known() {
				return judgedArgs
			}
			parts = append(parts, a.val)
		}
		s := strings.Join(parts, " ")
		if escapes {
			s = decodeANSIC(s)
		}
		sb.WriteString(s)
	}
	sb.WriteString("\n")
	c.ci.literal = true
	c.ci.text = sb.String()
	return judgedArgs
}

var (
	rePrintfVerb = lazyre.New(`%[-+ #0]*\d*(\.\d+)?[sbdqc]`)
	reSedExec    = lazyre.New(`(^|[;\n}])\s*(?:(?:\d+|\$|/(?:[^/\\]|\\.)*/)(?:\s*,\s*(?:\d+|\$|/(?:[^/\\]|\\.)*/))?\s*!?\s*)?e(\s|$|;)|/[gpIiMm0-9]*e[gpIiMm0-9]*\s*($|;)`)
	reSedCmd     = lazyre.New(`(?:^|[;\n}])\s*(?:(?:\d+|\$|/(?:[^/\\]|\\.)*/)(?:\s*,\s*(?:\d+|\$|/(?:[^/\\]|\\.)*/))?\s*!?\s*)?e\s+([^;\n]+)`)
	reAwkSystem  = lazyre.New(`system\s*\(`)
	reAwkGetline = lazyre.New(`("[^"]*")\s*\|\s*getline`)
	reAwkPipe    = lazyre.New(`\|&?\s*("[^"]*"|[A-Za-z_]\w*)`)
	reAwkString  = lazyre.New(`"((?:[^"\\]|\\.)*)"`)
)

func (c *call) decoder() outcome {
	opts, ops := c.split(optSpec{short: "wsic", long: []string{"wrap"}})
	decode := false
	switch c.name {
	case "base64", "base32", "basenc":
		decode = has(opts, "d", "decode", "D")
	case "xxd":
		decode = has(opts, "r", "revert")
	case "gzip", "zstd", "xz", "bzip2":
		decode = has(opts, "d", "decompress") && has(opts, "c", "stdout")
	case "tr":
		ops = nil // arguments are character sets
		decode = true
	default:
		decode = true
	}
	c.ci.decode = decode
	for _, o := range ops {
		c.scanOne(o, accRead)
	}
	if decode && c.stdout != "" {
		c.sc.tainted[c.stdout] = "obfuscation"
	}
	return judgedArgs
}

func (c *call) grep() outcome {
	short := "efmABCdD"
	if c.name == "rg" || c.name == "ag" {
		short = "efgtTmABCjMrE"
	}
	opts, ops := c.split(optSpec{short: short, long: []string{"regexp", "file", "max-count", "after-context",
		"before-context", "context", "devices", "directories", "glob", "type", "type-not", "replace", "include", "exclude", "exclude-dir"}})
	pattern := ""
	if e, ok := hasOpt(opts, "e", "regexp"); ok {
		pattern = e.val
	} else if !has(opts, "f", "file") && len(ops) > 0 && !has(opts, "files") {
		pattern = ops[0].val
		ops = ops[1:]
	}
	if f, ok := hasOpt(opts, "f", "file"); ok {
		c.scanOne(f, accRead)
	}
	tree := c.name == "rg" || c.name == "ag" || c.name == "ack" || has(opts, "r", "R", "recursive", "dereference-recursive")
	acc := accRead
	if tree {
		acc = accReadTree
	}
	if len(ops) == 0 && tree {
		ops = []arg{litArg(".")}
	}
	for _, o := range ops {
		c.scanOne(o, acc)
	}
	if has(opts, "l", "files-with-matches", "files", "L") && c.sc.cwd != "" && c.j.inWorkspace(c.sc.cwd) {
		c.ci.lister = c.sc.cwd
	}
	for _, inc := range c.optValues("--include", "-g", "--glob") {
		if secretName(inc.val) {
			pattern = "secret" // searches the files that hold credentials, whatever for
		}
	}
	if secretText(pattern) && c.stdinFile == "" && len(c.in) > 0 {
		for _, p := range c.in {
			if p.outside || p.sensitive {
				c.deny("secrets", c.name+" picks credentials out of data read outside the workspace")
			}
		}
	}
	if secretText(pattern) && len(c.in) == 0 && c.stdinFile == "" {
		outside := false
		for _, o := range ops {
			p, ok := c.j.resolve(o, c.sc)
			outside = outside || !ok || (tree || o.glob) && !c.j.inWorkspace(p) && !isTemp(p)
		}
		switch {
		case !outside:
		case has(opts, "l", "files-with-matches", "L", "files-without-match", "c", "count", "q", "quiet"):
			c.ci.secretList = true
		default:
			c.deny("secrets", c.name+" searches files outside the workspace for credentials and prints them")
		}
	}
	return judgedArgs
}

func (c *call) sed() outcome {
	opts, ops := c.split(optSpec{short: "eflE", long: []string{"expression", "file", "line-length"}})
	script := ""
	if e, ok := hasOpt(opts, "e", "expression"); ok {
		script = e.val
	} else if len(ops) > 0 {
		script = ops[0].val
		ops = ops[1:]
	}
	if reSedExec.MatchString(script) {
		c.deny("obfuscation", "sed script executes commands")
		if m := reSedCmd.FindStringSubmatch(script); m != nil {
			c.j.nested(c.owner, arg{val: m[1]}, c.sc, "sed e")
		}
	}
	acc := accRead
	if has(opts, "i", "in-place") {
		acc = accWrite
	}
	for _, o := range ops {
		c.checkArg(o, acc)
	}
	return judgedArgs
}

func (c *call) awk() outcome {
	opts, ops := c.split(optSpec{short: "fvFi", long: []string{"file", "assign", "field-separator", "include"}})
	prog := arg{}
	if f, ok := hasOpt(opts, "f", "file"); ok {
		c.scanOne(f, accRead)
	} else if len(ops) > 0 {
		prog = ops[0]
		ops = ops[1:]
	}
	for _, o := range ops {
		if !strings.Contains(o.val, "=") {
			c.scanOne(o, accRead)
		}
	}
	if prog.val == "" {
		return judgedArgs
	}
	c.awkProgram(prog.val)
	return judgedArgs
}

// awkProgram judges the commands an awk program runs.
func (c *call) awkProgram(code string) {
	c.codeExhaustion("awk", code)
	for _, m := range reAwkSystem.FindAllStringIndex(code, -1) {
		inner := balanced(code[m[1]:])
		c.j.nested(c.owner, arg{val: awkConcat(inner)}, c.sc, "awk system()")
	}
	for _, m := range reAwkGetline.FindAllStringSubmatch(code, -1) {
		c.j.nested(c.owner, arg{val: strings.Trim(m[1], `"`)}, c.sc, "awk getline")
	}
	for _, m := range reAwkPipe.FindAllStringSubmatch(code, -1) {
		target := m[1]
		if strings.HasPrefix(target, `"`) {
			t := strings.Trim(target, `"`)
			if strings.HasPrefix(t, "/inet/") {
				c.deny("reverse_shell", "awk opens a network connection")
				continue
			}
			prog := baseName(strings.Fields(t + " x")[0])
			if isShellName(prog) || isInterpreter(prog) {
				c.deny("obfuscation", "awk pipes generated text into "+prog)
				continue
			}
			c.j.nested(c.owner, arg{val: t}, c.sc, "awk pipe")
		} else if target != "getline" {
			c.deny("obfuscation", "awk pipes into a command held in a variable")
		}
	}
	if strings.Contains(code, "/inet/tcp") || strings.Contains(code, "/inet/udp") {
		c.deny("reverse_shell", "awk opens a network connection")
	}
}

// balanced returns the text up to the parenthesis closing an already
// opened one.
func balanced(s string) string {
	depth := 1
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return s[:i]
			}
		}
	}
	return s
}

// awkConcat turns an awk string expression into shell text: literals are
// kept and everything else is unknown.
func awkConcat(expr string) string {
	var sb strings.Builder
	lits := reAwkString.FindAllStringSubmatchIndex(expr, -1)
	last := 0
	for _, m := range lits {
		if strings.TrimSpace(expr[last:m[0]]) != "" {
			sb.WriteString("${__unknown}")
		}
		sb.WriteString(decodeANSIC(expr[m[2]:m[3]]))
		last = m[1]
	}
	if strings.TrimSpace(expr[last:]) != "" {
		sb.WriteString("${__unknown}")
	}
	return sb.String()
}
