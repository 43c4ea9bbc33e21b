package safety

import (
	"strings"
)

// interp judges interpreter invocations: one-liners by the patterns of
// their code, programs read from stdin by what feeds them, script files by
// where they came from, and a few modules (python -m http.server, pip).
func (c *call) interp() outcome {
	lang := interpLang(c.name)
	args := c.argv[1:]
	in := c.interpArgs(lang, args)
	if in.encoded {
		c.deny("obfuscation", "powershell runs an encoded command")
		return judgedArgs
	}
	if c.interpSubcommand(&in, args) {
		return judgedArgs
	}
	return c.interpRun(lang, in)
}

// interpLine is what an interpreter's command line holds.
type interpLine struct {
	code    []arg  // program texts (-c, -e and friends)
	ops     []arg  // the operands: a script and its arguments
	inPlace bool   // perl -i edits the operands
	module  string // python -m, ruby -run
	encoded bool   // powershell -EncodedCommand
}

// argCursor walks a list of arguments.
type argCursor struct {
	args []arg
	k    int
}

// next takes the argument after the current one as an option's value.
func (a *argCursor) next() (arg, bool) {
	if a.k+1 < len(a.args) {
		a.k++
		return a.args[a.k], true
	}
	return arg{}, false
}

// rest returns the arguments after the current one.
func (a *argCursor) rest() []arg { return a.args[a.k+1:] }

// end stops the walk after the current argument.
func (a *argCursor) end() { a.k = len(a.args) }

// interpArgs reads the options of an interpreter up to its operands.
func (c *call) interpArgs(lang string, args []arg) interpLine {
	var in interpLine
	cur := &argCursor{args: args}
	for ; cur.k < len(args); cur.k++ {
		v := args[cur.k].val
		if len(in.ops) > 0 || !strings.HasPrefix(v, "-") || v == "-" {
			in.ops = append(in.ops, args[cur.k])
			if lang != "perl" && lang != "ruby" {
				in.ops = append(in.ops, cur.rest()...)
				break
			}
			continue
		}
		switch lang {
		case "python":
			pythonOpt(&in, cur, v)
		case "perl", "ruby":
			perlOpt(&in, cur, lang, v)
		case "node":
			c.nodeOpt(&in, cur, v)
		case "php":
			c.phpOpt(&in, cur, v)
		case "pwsh":
			pwshOpt(&in, cur, v)
			if in.encoded {
				return in
			}
		default:
			for _, f := range codeFlags[lang] {
				if v == f {
					if a, ok := cur.next(); ok {
						in.code = append(in.code, a)
					}
				} else if strings.HasPrefix(f, "--") && strings.HasPrefix(v, f+"=") {
					in.code = append(in.code, part(args[cur.k], v[len(f)+1:]))
				}
			}
		}
	}
	return in
}

func pythonOpt(in *interpLine, cur *argCursor, v string) {
	switch {
	case v == "-c":
		if a, ok := cur.next(); ok {
			in.code = append(in.code, a)
		}
		in.ops = append(in.ops, cur.rest()...)
		cur.end()
	case strings.HasPrefix(v, "-c"):
		in.code = append(in.code, arg{val: v[2:]})
		cur.end()
	case v == "-m":
		if a, ok := cur.next(); ok {
			in.module = a.val
		}
		in.ops = append(in.ops, cur.rest()...)
		cur.end()
	case strings.HasPrefix(v, "-m"):
		in.module = v[2:]
		in.ops = append(in.ops, cur.rest()...)
		cur.end()
	case v == "-W" || v == "-X" || v == "-Q":
		cur.next()
	}
}

// perlOpt reads one word of perl's or ruby's clustered switches (-lne).
func perlOpt(in *interpLine, cur *argCursor, lang, v string) {
	if strings.HasPrefix(v, "--") {
		return
	}
	for i := 1; i < len(v); i++ {
		switch ch := v[i]; {
		case ch == 'e' || ch == 'E':
			if i+1 < len(v) {
				in.code = append(in.code, arg{val: v[i+1:]})
			} else if a, ok := cur.next(); ok {
				in.code = append(in.code, a)
			}
			return
		case strings.IndexByte("rIMmxCFdD", ch) >= 0:
			val := v[i+1:]
			if val == "" && (ch == 'r' || ch == 'I') {
				a, _ := cur.next()
				val = a.val
			}
			if lang == "ruby" && ch == 'r' && val == "un" {
				in.module = "un"
			}
			return
		case ch == 'i':
			in.inPlace = true
			return
		case ch == '0' || ch == 'l':
			for i+1 < len(v) && (v[i+1] >= '0' && v[i+1] <= '9' || v[i+1] >= 'a' && v[i+1] <= 'f') {
				i++
			}
		}
	}
}

func (c *call) nodeOpt(in *interpLine, cur *argCursor, v string) {
	switch v {
	case "-e", "--eval", "-p", "--print":
		if a, ok := cur.next(); ok {
			in.code = append(in.code, a)
		}
		in.ops = append(in.ops, cur.rest()...)
		cur.end()
	case "-r", "--require", "--import", "--loader", "--experimental-loader", "-C", "--conditions":
		cur.next()
	}
	if c.name == "deno" || c.name == "bun" {
		if v == "eval" || v == "-e" {
			if a, ok := cur.next(); ok {
				in.code = append(in.code, a)
			}
		}
	}
}

func (c *call) phpOpt(in *interpLine, cur *argCursor, v string) {
	switch v {
	case "-r":
		if a, ok := cur.next(); ok {
			in.code = append(in.code, a)
		}
	case "-S":
		cur.next()
		c.ask("network_listener", "php -S starts a web server")
	case "-t", "-c", "-d", "-z":
		if a, ok := cur.next(); ok && v == "-t" {
			c.serveDir(a)
		}
	case "-f":
		if a, ok := cur.next(); ok {
			in.ops = append(in.ops, a)
		}
	}
}

func pwshOpt(in *interpLine, cur *argCursor, v string) {
	lv := strings.ToLower(v)
	switch {
	case lv == "-c" || lv == "-command" || lv == "--command":
		if a, ok := cur.next(); ok {
			var parts []string
			parts = append(parts, a.val)
			for _, r := range cur.rest() {
				parts = append(parts, r.val)
			}
			in.code = append(in.code, arg{val: strings.Join(parts, " ")})
		}
		cur.end()
	case strings.HasPrefix(lv, "-e") || strings.HasPrefix(lv, "-enc"):
		in.encoded = true
	}
}

// interpSubcommand reads the subcommands some interpreters take (crystal
// eval, deno run, bun add); it reports whether that settles the command.
func (c *call) interpSubcommand(in *interpLine, args []arg) bool {
	// Some take the program as a subcommand's operand.
	if (c.name == "crystal" && len(in.ops) > 1 && in.ops[0].val == "eval") || (c.name == "swift" && len(in.ops) > 1 && in.ops[0].val == "-e") {
		in.code = append(in.code, in.ops[1])
		in.ops = in.ops[2:]
	}
	if (c.name != "deno" && c.name != "bun") || len(in.ops) == 0 {
		return false
	}
	switch in.ops[0].val {
	case "eval":
		if len(in.ops) > 1 {
			in.code = append(in.code, in.ops[1])
		}
		in.ops = nil
	case "run", "x":
		in.ops = in.ops[1:]
		for len(in.ops) > 0 && strings.HasPrefix(in.ops[0].val, "-") {
			in.ops = in.ops[1:]
		}
	case "install", "add":
		if c.name == "bun" && (strings.Contains(strings.Join(argTexts(args), " "), " -g") || strings.Contains(strings.Join(argTexts(args), " "), "--global")) {
			c.ask("package_install", "bun installs global packages")
		}
		if c.name == "deno" && in.ops[0].val == "install" && len(in.ops) > 1 {
			c.ask("package_install", "deno install adds a global command")
		}
		return true
	default:
		if c.name == "bun" && len(in.ops) > 0 && !strings.Contains(in.ops[0].val, ".") {
			return true // bun test, bun build, bun <script>
		}
	}
	return false
}

// interpRun judges what the interpreter runs: its code, a module, files it
// edits, a program from stdin or a script file.
func (c *call) interpRun(lang string, in interpLine) outcome {
	for _, a := range in.code {
		c.judgeCode(lang, a)
	}
	if in.module != "" {
		c.pyModule(in.module, in.ops)
		return judgedArgs
	}
	if in.inPlace {
		for _, o := range in.ops {
			c.checkArg(o, accWrite)
		}
		return judgedArgs
	}
	if len(in.code) > 0 {
		for _, o := range in.ops {
			c.scanOne(o, accRead)
		}
		return judgedArgs
	}
	ops := in.ops
	if len(ops) == 0 || ops[0].val == "-" || ops[0].val == "/dev/stdin" {
		switch lang {
		case "python", "perl", "ruby", "node", "php", "pwsh", "lua", "tclsh", "jshell", "osascript":
			c.ci.shell = true
			return readsStdin(lang)
		}
		return judgedArgs
	}
	if (lang == "node") && isURL(ops[0].val) {
		c.deny("download_exec", "runs a script straight from the network: "+ops[0].text())
		return judgedArgs
	}
	c.runFile(ops[0])
	for _, o := range ops[1:] {
		c.scanOne(o, accRead)
	}
	return judgedArgs
}

// codeFlags are the options that pass a program as text, for the
// interpreters without special handling.
var codeFlags = map[string][]string{
	"lua": {"-e"}, "r": {"-e", "--expr"}, "julia": {"-e", "--eval", "-E", "--print"}, "tclsh": {"-c"},
	"osascript": {"-e"}, "elixir": {"-e", "--eval"}, "erl": {"-eval"}, "lisp": {"-e", "--eval", "-x", "-c", "--expr"},
	"groovy": {"-e"}, "scala": {"-e"}, "clojure": {"-e", "--eval"}, "ghc": {"-e"}, "jshell": {},
	"crystal": {}, "swift": {}, "ocaml": {}, "nim": {}, "dart": {},
}

// serveDir judges the directory a web server would publish.
func (c *call) serveDir(d arg) {
	p, ok := c.j.resolve(d, c.sc)
	if !ok {
		c.deny("exfiltration", "serves a directory only known at run time")
		return
	}
	if cat, _ := c.j.classify(p, accReadTree); cat != "" || (!c.j.inWorkspace(p) && !isTemp(p)) {
		c.deny("exfiltration", "serves files from outside the workspace to the network: "+p)
	}
}

func (c *call) pyModule(module string, ops []arg) {
	switch module {
	case "http.server", "SimpleHTTPServer", "CGIHTTPServer", "un", "smtpd", "aiosmtpd", "pyftpdlib", "uploadserver", "wsgiref.simple_server", "RangeHTTPServer":
		c.ask("network_listener", module+" starts a server")
		for k, o := range ops {
			if (o.val == "-d" || o.val == "--directory") && k+1 < len(ops) {
				c.serveDir(ops[k+1])
			}
			if strings.HasPrefix(o.val, "--directory=") {
				c.serveDir(arg{val: strings.TrimPrefix(o.val, "--directory=")})
			}
		}
		if module == "un" {
			c.serveCwd()
		} else if strings.HasPrefix(module, "http") || module == "SimpleHTTPServer" {
			c.serveCwd()
		}
	case "pip", "pip3":
		inner := &call{invocation: invocation{name: "pip", argv: append([]arg{c.argv[0]}, ops...), layers: c.layers}, j: c.j, sc: c.sc, ci: c.ci, owner: c.owner}
		inner.pip()
	case "pty":
		c.deny("obfuscation", "python -m pty spawns a terminal")
	case "base64":
		for _, o := range ops {
			if o.val == "-d" || o.val == "--decode" {
				c.ci.decode = true
			}
		}
	default:
		// A module that is also a command (twine, ansible, black) does
		// what that command does.
		if _, ok := c.j.p.handlers[module]; ok && !strings.Contains(module, ".") && !isInterpreter(module) && !isShellName(module) {
			c.j.judgeArgv(c.owner, append([]arg{litArg(module)}, ops...), c.sc)
		}
	}
}

func (c *call) serveCwd() {
	if c.sc.cwd == "" {
		c.deny("exfiltration", "serves a directory only known at run time")
		return
	}
	c.serveDir(arg{val: c.sc.cwd})
}
