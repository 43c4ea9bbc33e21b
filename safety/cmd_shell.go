package safety

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/nanobot-go/nanobot/internal/lazyre"
)

// commandHandlers maps command names to the function judging them.
// Commands without a handler are allowed unless their arguments name
// protected or secret paths.
func commandHandlers() map[string]func(*call) {
	h := map[string]func(*call){}
	reg := func(f func(*call), names ...string) {
		for _, n := range names {
			h[n] = f
		}
	}
	reg((*call).shell, "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "csh", "tcsh", "rbash", "yash", "busybox-sh")
	reg((*call).interp, "python", "python2", "python3", "pypy", "pypy3", "perl", "ruby", "node", "nodejs", "php",
		"lua", "luajit", "lua5.1", "lua5.2", "lua5.3", "lua5.4", "pwsh", "powershell", "Rscript", "R", "deno", "bun",
		"irb", "jshell", "tclsh", "wish", "expect", "osascript", "julia", "elixir", "erl", "racket", "guile", "sbcl",
		"clisp", "groovy", "scala", "bb", "clojure", "clj", "crystal", "swift", "qjs", "jjs", "rhino", "tsx", "ts-node",
		"ghc", "ocaml", "nim", "dart")
	reg((*call).eval, "eval")
	reg((*call).source, "source", ".")
	reg((*call).trap, "trap")
	reg((*call).alias, "alias")
	reg((*call).unset, "unset")
	reg((*call).set, "set")
	reg((*call).cd, "cd", "pushd", "popd")
	reg((*call).echo, "echo", "printf")
	reg((*call).decoder, "base64", "base32", "basenc", "xxd", "uudecode", "rev", "tr", "gunzip", "zcat", "bzcat",
		"xzcat", "lzcat", "zstdcat", "unxz", "bunzip2", "gzip", "zstd", "xz", "bzip2")
	reg((*call).find, "find")
	reg((*call).grep, "grep", "egrep", "fgrep", "zgrep", "rg", "ag", "ack", "git-grep")
	reg((*call).sed, "sed", "gsed")
	reg((*call).awk, "awk", "gawk", "mawk", "nawk")
	reg((*call).su, "su", "runuser", "sg")
	reg((*call).watch, "watch")
	reg((*call).script, "script")
	reg((*call).lister, "ls", "tree", "exa", "eza")
	reg((*call).fd, "fd", "fdfind")
	reg((*call).locate, "locate", "plocate", "mlocate", "slocate")
	reg((*call).parallel, "parallel")
	reg((*call).jq, "jq", "yq", "gojq", "jaq")
	reg((*call).history, "history")
	reg((*call).printenv, "printenv")
	reg((*call).psCmd, "ps")
	registerFileHandlers(reg)
	registerSystemHandlers(reg)
	registerNetHandlers(reg)
	registerPackageHandlers(reg)
	registerRemoteHandlers(reg)
	registerRunnerHandlers(reg)
	registerSettingsHandlers(reg)
	registerServerHandlers(reg)
	registerControlHandlers(reg)
	registerSecretHandlers(reg)
	return h
}

// dispatch runs the handler for the command name.
func (c *call) dispatch() {
	full := c.argv[0].val
	if strings.HasPrefix(full, "/etc/init.d/") || strings.HasPrefix(full, "/etc/rc.d/") {
		if len(c.argv) > 1 && c.argv[1].val == "status" {
			return
		}
		c.deny("services", "controls a system service: "+full)
		return
	}
	if f := c.j.p.handlers[c.name]; f != nil {
		f(c)
	}
}

// split separates options (anywhere before "--") from operands.
func (c *call) split(spec optSpec) ([]opt, []arg) {
	var opts []opt
	var ops []arg
	args := c.argv[1:]
	for i := 0; i < len(args); i++ {
		v := args[i].val
		if v == "--" {
			ops = append(ops, args[i+1:]...)
			break
		}
		if len(v) < 2 || v[0] != '-' || !args[i].known() && strings.HasPrefix(v, unknownMark) {
			ops = append(ops, args[i])
			continue
		}
		n, o := parseOpts(args, i, spec)
		if n == i {
			ops = append(ops, args[i])
			continue
		}
		opts = append(opts, o...)
		i = n - 1
		if n > 0 && args[n-1].val == "--" {
			ops = append(ops, args[n:]...)
			break
		}
	}
	return opts, ops
}

func has(opts []opt, names ...string) bool {
	_, ok := hasOpt(opts, names...)
	return ok
}

func noScan(name string) bool {
	switch name {
	case "echo", "printf", "true", "false", ":", "test", "[", "expr", "seq", "sleep", "date", "man", "which",
		"type", "whatis", "apropos", "help", "info", "tldr", "whereis", "basename", "dirname", "realpath",
		"readlink", "git", "curl", "wget", "ssh", "docker", "podman", "kubectl", "notify-send",
		"logger", "wall", "write", "say", "espeak", "figlet", "cowsay", "bc", "dc", "calc", "units", "factor",
		"hash", "command", "compgen", "complete", "getopts", "read", "let", "shift", "return", "exit", "wait":
		return true
	}
	return false
}

func isShellName(n string) bool {
	switch n {
	case "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "csh", "tcsh", "rbash", "yash", "busybox-sh", "shell":
		return true
	}
	return false
}

func isInterpreter(n string) bool {
	return interpLang(n) != ""
}

var pyVersion = lazyre.New(`^python[23](\.\d+)?$|^python$|^pypy3?$`)

func interpLang(n string) string {
	switch {
	case pyVersion.MatchString(n):
		return "python"
	case n == "perl" || strings.HasPrefix(n, "perl5"):
		return "perl"
	case n == "ruby" || n == "irb":
		return "ruby"
	case n == "node" || n == "nodejs" || n == "deno" || n == "bun":
		return "node"
	case n == "php" || strings.HasPrefix(n, "php") && isNumber(strings.ReplaceAll(n[3:], ".", "")):
		return "php"
	case n == "lua" || n == "luajit" || strings.HasPrefix(n, "lua5."):
		return "lua"
	case n == "pwsh" || n == "powershell":
		return "pwsh"
	case n == "Rscript" || n == "R":
		return "r"
	case n == "tclsh" || n == "wish" || n == "expect":
		return "tclsh"
	case n == "tsx" || n == "ts-node" || n == "qjs" || n == "jjs" || n == "rhino":
		return "node"
	case n == "clojure" || n == "clj" || n == "bb":
		return "clojure"
	case n == "sbcl" || n == "clisp" || n == "racket" || n == "guile":
		return "lisp"
	case n == "osascript" || n == "julia" || n == "jshell" || n == "elixir" || n == "erl" || n == "groovy" ||
		n == "scala" || n == "crystal" || n == "swift" || n == "ghc" || n == "ocaml" || n == "nim" || n == "dart":
		return n
	}
	return ""
}

func isFetcher(n string) bool {
	switch n {
	case "curl", "wget", "fetch", "http", "https", "xh", "lynx", "links", "w3m", "aria2c", "httpie", "curlie":
		return true
	}
	return false
}

// isDecoderName recognises decoders inside substitutions, from the syntax
// alone.
func isDecoderName(n string, ce *syntax.CallExpr) bool {
	lits := func() string {
		var sb strings.Builder
		for _, w := range ce.Args[1:] {
			sb.WriteString(" " + w.Lit())
		}
		return sb.String() + " "
	}
	switch n {
	case "base64", "base32", "basenc":
		l := lits()
		return strings.Contains(l, " -d") || strings.Contains(l, "--decode") || strings.Contains(l, " -D")
	case "xxd":
		return strings.Contains(lits(), "r")
	case "openssl":
		l := lits()
		return strings.Contains(l, " -d") || strings.Contains(l, "base64")
	case "rev", "uudecode", "gunzip", "zcat", "bzcat", "xzcat", "lzcat", "zstdcat", "unxz", "bunzip2":
		return true
	case "tr":
		return true
	}
	return false
}

// shell judges sh -c strings, scripts and shells reading from stdin.
func (c *call) shell() {
	c.progName = c.name
	c.noPathScan = true
	i, opts := parseOpts(c.argv, 1, optSpec{short: "oO", long: []string{"rcfile", "init-file"}})
	ops := c.argv[i:]
	if has(opts, "p", "privileged") && c.name != "fish" && c.name != "csh" && c.name != "tcsh" {
		c.deny("privilege", c.name+" -p keeps the privileges of a set-user-ID program")
	}
	if has(opts, "c", "command") {
		if len(ops) > 0 {
			c.j.nested(c.owner, ops[0], c.sc, c.name+" -c")
		}
		return
	}
	if len(ops) == 0 || has(opts, "s") || ops[0].val == "-" || ops[0].val == "/dev/stdin" {
		c.readsProgram = true
		c.ci.shell = true
		return
	}
	if has(opts, "i") {
		c.ci.shell = true
	}
	c.runFile(ops[0])
}

// runFile judges running a script or program file.
func (c *call) runFile(a arg) {
	switch {
	case a.fetch:
		c.deny("download_exec", "runs a script downloaded at run time")
		return
	case a.decode:
		c.deny("obfuscation", "runs a decoded script")
		return
	}
	p, ok := c.j.resolve(a, c.sc)
	if !ok {
		return
	}
	if isNetDevice(p) {
		c.deny("reverse_shell", "runs a program read from a network socket")
		return
	}
	if t, ok := c.sc.taintOf(p); ok {
		c.deny(t, "runs a file produced by a download or decoder: "+p)
		return
	}
	c.checkPath(p, accRead)
}

func (c *call) eval() {
	c.noPathScan = true
	if len(c.argv) < 2 {
		return
	}
	joined := arg{}
	var parts []string
	for _, a := range c.argv[1:] {
		parts = append(parts, a.val)
		joined.fetch = joined.fetch || a.fetch
		joined.decode = joined.decode || a.decode
	}
	joined.val = strings.Join(parts, " ")
	c.j.nested(c.owner, joined, c.sc, "eval")
}

func (c *call) source() {
	c.noPathScan = true
	if len(c.argv) < 2 {
		return
	}
	a := c.argv[1]
	c.progName = "sh"
	if a.val == "/dev/stdin" || a.val == "-" {
		c.readsProgram = true
		return
	}
	if p, ok := c.j.resolve(a, c.sc); ok && strings.HasSuffix(p, "/bin/activate") && c.j.inWorkspace(p) {
		c.sc.venv = true
	}
	c.runFile(a)
}

func (c *call) trap() {
	c.noPathScan = true
	if len(c.argv) < 3 {
		return
	}
	a := c.argv[1]
	if a.val == "-" || a.val == "" || strings.HasPrefix(a.val, "-") {
		return
	}
	c.j.nested(c.owner, a, c.sc, "trap")
}

func (c *call) alias() {
	c.noPathScan = true
	for _, a := range c.argv[1:] {
		if _, v, ok := strings.Cut(a.val, "="); ok {
			c.j.nested(c.owner, arg{val: v, fetch: a.fetch, decode: a.decode}, c.sc, "alias")
		}
	}
}

func (c *call) unset() {
	for _, a := range c.argv[1:] {
		switch a.val {
		case "HISTFILE", "HISTSIZE", "HISTFILESIZE":
			c.deny("anti_forensics", "disables shell history")
		}
	}
}

func (c *call) set() {
	c.noPathScan = true
	if len(c.argv) == 1 {
		c.deny("secrets", "prints all shell variables and the environment")
		return
	}
	for i, a := range c.argv[1:] {
		if a.val == "+o" && i+2 < len(c.argv) && c.argv[i+2].val == "history" {
			c.deny("anti_forensics", "disables shell history")
		}
	}
}

// declClause judges export, declare, local, readonly and typeset.
func (j *judge) declClause(owner int, d *syntax.DeclClause, sc *scope) {
	c := &call{j: j, sc: sc, ci: &callInfo{owner: owner}, owner: owner}
	named := false
	for _, as := range d.Args {
		if as.Name != nil {
			named = true
			j.assignCheck(c, as, true)
			continue
		}
		if as.Value != nil {
			v := j.word(as.Value, sc)
			if !strings.HasPrefix(v.val, "-") {
				named = true
			}
		}
	}
	if !named && d.Variant != nil && d.Variant.Value != "local" {
		c.deny("secrets", "prints all variables and the environment ("+d.Variant.Value+")")
	}
}

func (c *call) cd() {
	switch c.name {
	case "popd":
		c.sc.cwd = ""
		return
	}
	_, ops := c.split(optSpec{})
	if len(ops) == 0 {
		c.sc.cwd = c.j.p.home
		return
	}
	if ops[0].val == "-" {
		c.sc.cwd = ""
		return
	}
	p, ok := c.j.resolve(ops[0], c.sc)
	if !ok {
		c.sc.cwd = ""
		return
	}
	c.sc.cwd = p
}

// echo records literal output so that "echo ... | sh" can be judged.
func (c *call) echo() {
	c.noPathScan = true
	args := c.argv[1:]
	var sb strings.Builder
	if c.name == "printf" {
		if len(args) > 0 && args[0].val == "-v" {
			return
		}
		if len(args) == 0 {
			return
		}
		for _, a := range args {
			if !a.known() {
				return
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
				return
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
}

func (c *call) decoder() {
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
	c.noPathScan = true
	for _, o := range ops {
		c.scanOne(o, accRead)
	}
	if decode && c.stdout != "" {
		c.sc.tainted[c.stdout] = "obfuscation"
	}
}

// find judges -delete, -exec and friends.
func (c *call) find() {
	c.noPathScan = true
	args := c.argv[1:]
	i := 0
	for i < len(args) && (args[i].val == "-H" || args[i].val == "-L" || args[i].val == "-P" || args[i].val == "-D" || args[i].val == "-O" || strings.HasPrefix(args[i].val, "-O")) {
		if args[i].val == "-D" {
			i++
		}
		i++
	}
	var roots []arg
	for i < len(args) {
		v := args[i].val
		if strings.HasPrefix(v, "-") || v == "(" || v == "!" || v == "," || v == "\\(" {
			break
		}
		roots = append(roots, args[i])
		i++
	}
	if len(roots) == 0 {
		roots = []arg{litArg(".")}
	}
	expr := args[i:]
	filtered := false
	hunt := false
	for k, e := range expr {
		if (e.val == "-name" || e.val == "-iname" || e.val == "-path" || e.val == "-ipath" || e.val == "-regex" ||
			e.val == "-iregex" || e.val == "-wholename") && k+1 < len(expr) && secretName(expr[k+1].val) {
			hunt = true
		}
		switch e.val {
		case "-name", "-iname", "-path", "-ipath", "-regex", "-iregex", "-wholename", "-iwholename", "-newer",
			"-mtime", "-mmin", "-atime", "-amin", "-ctime", "-cmin", "-size", "-empty", "-user", "-group",
			"-perm", "-inum", "-samefile", "-links", "-lname", "-ilname", "-used", "-nouser", "-nogroup":
			filtered = true
		}
		if strings.HasPrefix(e.val, "-newer") {
			filtered = true
		}
	}
	outside := false
	for _, r := range roots {
		outside = outside || c.outsideWorkspace(r)
	}
	hunt = hunt && outside
	if hunt {
		c.ci.secretList = true
	}
	var items []arg
	for _, r := range roots {
		c.scanOne(r, accRead)
		if p, ok := c.j.resolve(r, c.sc); ok && c.j.inWorkspace(p) {
			c.ci.lister = p
		}
		if filtered {
			items = append(items, arg{val: strings.TrimSuffix(r.val, "/") + "/__found__"})
		} else {
			items = append(items, r)
		}
	}
	for k := 0; k < len(expr); k++ {
		switch expr[k].val {
		case "-delete":
			for _, it := range items {
				c.checkArg(it, accDelete)
			}
		case "-exec", "-execdir", "-ok", "-okdir":
			end := k + 1
			for end < len(expr) && expr[end].val != ";" && expr[end].val != "+" {
				end++
			}
			inner := expr[k+1 : min(end, len(expr))]
			if len(inner) > 0 && strings.Contains(inner[0].val, "{}") {
				c.runsFound(expr, outside)
			}
			if !hunt && outside && len(inner) > 1 && (baseName(inner[0].val) == "grep" || baseName(inner[0].val) == "egrep") {
				for _, a := range inner[1:] {
					if !strings.HasPrefix(a.val, "-") && secretText(a.val) {
						c.deny("secrets", "searches the files it finds outside the workspace for credentials")
					}
				}
			}
			if hunt {
				c.secretHunt(inner)
			}
			for _, it := range items {
				argv := make([]arg, 0, len(inner))
				for _, a := range inner {
					if strings.Contains(a.val, "{}") {
						a.val = strings.ReplaceAll(a.val, "{}", it.val)
					}
					argv = append(argv, a)
				}
				c.j.judgeArgv(c.owner, argv, c.sc)
			}
			k = end
		case "-fprint", "-fprint0", "-fprintf", "-fls":
			if k+1 < len(expr) {
				c.checkArg(expr[k+1], accWrite)
			}
		}
	}
}

// judgeArgv judges a command given as an argument vector (find -exec).
func (j *judge) judgeArgv(owner int, argv []arg, sc *scope) {
	if len(argv) == 0 {
		return
	}
	c := &call{j: j, sc: sc, ci: &callInfo{owner: owner}, owner: owner, argv: argv}
	if !c.checkName() {
		return
	}
	c.unwrapAll()
	c.applyRules()
	if c.name != "" {
		c.dispatch()
	}
	if !c.noPathScan {
		c.scanArgs()
	}
}

func (c *call) grep() {
	c.noPathScan = true
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
}

func (c *call) sed() {
	c.noPathScan = true
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

func (c *call) awk() {
	c.noPathScan = true
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
		return
	}
	c.awkProgram(prog.val)
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
			c.progName = baseName(strings.Fields(t + " x")[0])
			if isShellName(c.progName) || isInterpreter(c.progName) {
				c.deny("obfuscation", "awk pipes generated text into "+c.progName)
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

func (c *call) su() {
	c.noPathScan = true
	c.deny("privilege", "switches to another user ("+c.name+")")
	if c.name == "sg" {
		rest := c.argv[1:]
		if len(rest) > 0 && rest[0].val == "-" {
			rest = rest[1:]
		}
		if len(rest) > 1 {
			if rest[1].val == "-c" && len(rest) > 2 {
				c.j.nested(c.owner, rest[2], c.sc, "sg")
			} else {
				c.j.nested(c.owner, rest[1], c.sc, "sg")
			}
		}
		return
	}
	i, opts := parseOpts(c.argv, 1, optSpec{short: "csgGwu", long: []string{"command", "shell", "group", "supp-group", "whitelist-environment", "user", "session-command"}})
	if cmd, ok := hasOpt(opts, "c", "command", "session-command"); ok {
		c.j.nested(c.owner, cmd, c.sc, c.name+" -c")
		return
	}
	rest := c.argv[i:]
	if len(rest) > 0 && rest[0].val == "-" {
		rest = rest[1:]
	}
	if c.name == "runuser" && has(opts, "u", "user") {
		c.j.judgeArgv(c.owner, rest, c.sc)
		return
	}
	// su [user] [-c cmd] with options after the user name.
	for k := 0; k+1 < len(rest); k++ {
		if rest[k].val == "-c" || rest[k].val == "--command" {
			c.j.nested(c.owner, rest[k+1], c.sc, c.name+" -c")
		}
	}
}

func (c *call) watch() {
	c.noPathScan = true
	i, _ := parseOpts(c.argv, 1, optSpec{short: "nq", long: []string{"interval", "differences"}})
	var parts []string
	a := arg{}
	for _, x := range c.argv[i:] {
		parts = append(parts, x.val)
		a.fetch = a.fetch || x.fetch
		a.decode = a.decode || x.decode
	}
	a.val = strings.Join(parts, " ")
	if a.val != "" {
		c.j.nested(c.owner, a, c.sc, "watch")
	}
}

func (c *call) script() {
	c.noPathScan = true
	opts, ops := c.split(optSpec{short: "cETIOBmt", long: []string{"command", "echo", "timing", "log-in", "log-out", "log-io", "logging-format"}})
	if cmd, ok := hasOpt(opts, "c", "command"); ok {
		c.j.nested(c.owner, cmd, c.sc, "script -c")
	}
	for _, o := range ops {
		c.checkArg(o, accWrite)
	}
}

func (c *call) lister() {
	_, ops := c.split(optSpec{short: "ITwLe", long: []string{"ignore", "hide", "width", "level", "exclude", "extension", "type"}})
	dir := c.sc.cwd
	if len(ops) == 1 {
		if p, ok := c.j.resolve(ops[0], c.sc); ok {
			dir = p
		}
	}
	if dir != "" && c.j.inWorkspace(dir) {
		c.ci.lister = dir
	}
}

func (c *call) history() {
	for _, a := range c.argv[1:] {
		switch {
		case a.val == "-c" || a.val == "-d" || strings.HasPrefix(a.val, "-c") || a.val == "-w" || a.val == "-r":
			c.deny("anti_forensics", "clears or rewrites shell history")
			return
		}
	}
}

var secretVarName = lazyre.New(`(?i)(token|secret|passw|api_?key|private|credential|_key$|^key$|auth)`)

func (c *call) printenv() {
	c.noPathScan = true
	names := 0
	for _, a := range c.argv[1:] {
		if strings.HasPrefix(a.val, "-") {
			continue
		}
		names++
		if secretVarName.MatchString(a.val) {
			c.deny("secrets", "prints a secret environment variable: "+a.val)
		}
	}
	if names == 0 {
		c.deny("secrets", "prints the process environment")
	}
}

func (c *call) psCmd() {
	for _, a := range c.argv[1:] {
		if !strings.HasPrefix(a.val, "-") && strings.Contains(a.val, "e") && strings.Trim(a.val, "auxwefjlrTHSmcn") == "" {
			c.deny("secrets", "prints the environment of processes")
		}
	}
}
