package safety

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/nanobot-go/nanobot/internal/lazyre"
)

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
func (c *call) shell() outcome {
	i, opts := parseOpts(c.argv, 1, optSpec{short: "oO", long: []string{"rcfile", "init-file"}})
	ops := c.argv[i:]
	if has(opts, "p", "privileged") && c.name != "fish" && c.name != "csh" && c.name != "tcsh" {
		c.deny("privilege", c.name+" -p keeps the privileges of a set-user-ID program")
	}
	if has(opts, "c", "command") {
		if len(ops) > 0 {
			c.j.nested(c.owner, ops[0], c.sc, c.name+" -c")
		}
		return judgedArgs
	}
	if len(ops) == 0 || has(opts, "s") || ops[0].val == "-" || ops[0].val == "/dev/stdin" {
		c.ci.shell = true
		return readsStdin(c.name)
	}
	if has(opts, "i") {
		c.ci.shell = true
	}
	c.runFile(ops[0])
	return judgedArgs
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

func (c *call) eval() outcome {
	if len(c.argv) < 2 {
		return judgedArgs
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
	return judgedArgs
}

func (c *call) source() outcome {
	if len(c.argv) < 2 {
		return judgedArgs
	}
	a := c.argv[1]
	if a.val == "/dev/stdin" || a.val == "-" {
		return readsStdin("sh")
	}
	if p, ok := c.j.resolve(a, c.sc); ok && strings.HasSuffix(p, "/bin/activate") && c.j.inWorkspace(p) {
		c.sc.venv = true
	}
	c.runFile(a)
	return judgedArgs
}

func (c *call) trap() outcome {
	if len(c.argv) < 3 {
		return judgedArgs
	}
	a := c.argv[1]
	if a.val == "-" || a.val == "" || strings.HasPrefix(a.val, "-") {
		return judgedArgs
	}
	c.j.nested(c.owner, a, c.sc, "trap")
	return judgedArgs
}

func (c *call) alias() outcome {
	for _, a := range c.argv[1:] {
		if _, v, ok := strings.Cut(a.val, "="); ok {
			c.j.nested(c.owner, arg{val: v, fetch: a.fetch, decode: a.decode}, c.sc, "alias")
		}
	}
	return judgedArgs
}

func (c *call) unset() outcome {
	for _, a := range c.argv[1:] {
		switch a.val {
		case "HISTFILE", "HISTSIZE", "HISTFILESIZE":
			c.deny("anti_forensics", "disables shell history")
		}
	}
	return genericScan
}

func (c *call) set() outcome {
	if len(c.argv) == 1 {
		c.deny("secrets", "prints all shell variables and the environment")
		return judgedArgs
	}
	for i, a := range c.argv[1:] {
		if a.val == "+o" && i+2 < len(c.argv) && c.argv[i+2].val == "history" {
			c.deny("anti_forensics", "disables shell history")
		}
	}
	return judgedArgs
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

func (c *call) cd() outcome {
	switch c.name {
	case "popd":
		c.sc.cwd = ""
		return genericScan
	}
	_, ops := c.split(optSpec{})
	if len(ops) == 0 {
		c.sc.cwd = c.j.p.home
		return genericScan
	}
	if ops[0].val == "-" {
		c.sc.cwd = ""
		return genericScan
	}
	p, ok := c.j.resolve(ops[0], c.sc)
	if !ok {
		c.sc.cwd = ""
		return genericScan
	}
	c.sc.cwd = p
	return genericScan
}

func (c *call) su() outcome {
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
		return judgedArgs
	}
	i, opts := parseOpts(c.argv, 1, optSpec{short: "csgGwu", long: []string{"command", "shell", "group", "supp-group", "whitelist-environment", "user", "session-command"}})
	if cmd, ok := hasOpt(opts, "c", "command", "session-command"); ok {
		c.j.nested(c.owner, cmd, c.sc, c.name+" -c")
		return judgedArgs
	}
	rest := c.argv[i:]
	if len(rest) > 0 && rest[0].val == "-" {
		rest = rest[1:]
	}
	if c.name == "runuser" && has(opts, "u", "user") {
		c.j.judgeArgv(c.owner, rest, c.sc)
		return judgedArgs
	}
	// su [user] [-c cmd] with options after the user name.
	for k := 0; k+1 < len(rest); k++ {
		if rest[k].val == "-c" || rest[k].val == "--command" {
			c.j.nested(c.owner, rest[k+1], c.sc, c.name+" -c")
		}
	}
	return judgedArgs
}

func (c *call) watch() outcome {
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
	return judgedArgs
}

func (c *call) script() outcome {
	opts, ops := c.split(optSpec{short: "cETIOBmt", long: []string{"command", "echo", "timing", "log-in", "log-out", "log-io", "logging-format"}})
	if cmd, ok := hasOpt(opts, "c", "command"); ok {
		c.j.nested(c.owner, cmd, c.sc, "script -c")
	}
	for _, o := range ops {
		c.checkArg(o, accWrite)
	}
	return judgedArgs
}

func (c *call) lister() outcome {
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
	return genericScan
}

func (c *call) history() outcome {
	for _, a := range c.argv[1:] {
		switch {
		case a.val == "-c" || a.val == "-d" || strings.HasPrefix(a.val, "-c") || a.val == "-w" || a.val == "-r":
			c.deny("anti_forensics", "clears or rewrites shell history")
			return genericScan
		}
	}
	return genericScan
}

var secretVarName = lazyre.New(`(?i)(token|secret|passw|api_?key|private|credential|_key$|^key$|auth)`)

func (c *call) printenv() outcome {
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
	return judgedArgs
}

func (c *call) psCmd() outcome {
	for _, a := range c.argv[1:] {
		if !strings.HasPrefix(a.val, "-") && strings.Contains(a.val, "e") && strings.Trim(a.val, "auxwefjlrTHSmcn") == "" {
			c.deny("secrets", "prints the environment of processes")
		}
	}
	return genericScan
}
