package safety

import (
	"strings"

	"github.com/nanobot-go/nanobot/internal/lazyre"
)

// Programs that run other commands as part of their work: fd -x and GNU
// parallel feed found items to a command; editors, debuggers and terminal
// multiplexers run the shell commands they are told to. Each payload is
// judged as if it were typed directly.

func registerRunnerHandlers(reg func(handler, ...string)) {
	reg((*call).vim, "vim", "vi", "nvim", "view", "vimdiff", "ex", "rvim", "gvim", "evim", "nvi", "elvis", "vile")
	reg((*call).ed, "ed", "red")
	reg((*call).gdb, "gdb", "cgdb", "gdb-multiarch")
	reg((*call).lldb, "lldb")
	reg((*call).emacs, "emacs", "emacsclient")
	reg((*call).tmux, "tmux")
	reg((*call).screen, "screen")
	reg((*call).cmdStrings, "hyperfine", "entr", "watchexec", "nodemon", "sem")
	reg((*call).manPager, "man")
}

// fd judges fd and fdfind: -x and -X run a command on what was found.
func (c *call) fd() outcome {
	c.lister()
	args := c.argv[1:]
	var pattern string
	var roots []arg
	for k := 0; k < len(args); k++ {
		v := args[k].val
		switch {
		case v == "-x" || v == "--exec" || v == "-X" || v == "--exec-batch":
			inner := args[k+1:]
			for i, a := range inner {
				if a.val == ";" || a.val == "\\;" {
					inner = inner[:i]
					break
				}
			}
			c.runFound(pattern, roots, inner)
			return genericScan
		case strings.HasPrefix(v, "-"):
			switch v {
			case "-e", "--extension", "-t", "--type", "-E", "--exclude", "-d", "--max-depth", "-S", "--size",
				"--changed-within", "--changed-before", "-o", "--owner", "--base-directory", "--search-path", "-j", "--threads":
				k++
			}
		case pattern == "":
			pattern = v
		default:
			roots = append(roots, args[k])
		}
	}
	c.findsSecrets(pattern, roots)
	return genericScan
}

// findsSecrets marks a listing of files holding credentials outside the
// workspace.
func (c *call) findsSecrets(pattern string, roots []arg) {
	if !secretName(pattern) {
		return
	}
	if len(roots) == 0 {
		roots = []arg{litArg(".")}
	}
	for _, r := range roots {
		if c.outsideWorkspace(r) {
			c.ci.secretList = true
		}
	}
}

// runFound judges the command fd runs on each item it finds under roots.
func (c *call) runFound(pattern string, roots, inner []arg) {
	if len(roots) == 0 {
		roots = []arg{litArg(".")}
	}
	c.findsSecrets(pattern, roots)
	if c.ci.secretList {
		c.secretHunt(inner)
	}
	for _, r := range roots {
		c.scanOne(r, accRead)
		item := strings.TrimSuffix(r.val, "/") + "/__found__"
		argv := make([]arg, 0, len(inner)+1)
		placed := false
		for _, a := range inner {
			for _, ph := range []string{"{}", "{/}", "{//}", "{.}", "{/.}"} {
				if strings.Contains(a.val, ph) {
					a.val = strings.ReplaceAll(a.val, ph, item)
					placed = true
				}
			}
			argv = append(argv, a)
		}
		if !placed {
			argv = append(argv, arg{val: item})
		}
		c.j.judgeArgv(c.owner, argv, c.sc)
	}
}

// parallel judges GNU parallel: the command template runs once per input,
// which comes after ::: (or from files after ::::, or standard input).
func (c *call) parallel() outcome {
	i, _ := parseOpts(c.argv, 1, optSpec{short: "jSaIdE", long: []string{"jobs", "sshlogin", "arg-file", "delimiter", "joblog", "results", "tmpdir", "colsep", "timeout", "retries", "memfree", "load", "delay", "tag-string", "workdir", "basefile", "env", "shebang-wrap"}})
	rest := c.argv[i:]
	var tmpl, items []arg
	sep := -1
	for k, a := range rest {
		if a.val == ":::" || a.val == "::::" || a.val == ":::+" || a.val == "::::+" {
			sep = k
			break
		}
	}
	if sep < 0 {
		tmpl = rest
		items = []arg{{val: unknownMark}}
		for _, p := range c.in {
			if p.lister != "" {
				items = []arg{{val: p.lister + "/__item__"}}
			}
			if p.secretList {
				c.secretHunt(tmpl)
			}
		}
	} else {
		tmpl = rest[:sep]
		for _, a := range rest[sep+1:] {
			if strings.HasPrefix(a.val, ":::") {
				continue
			}
			if rest[sep].val == "::::" || rest[sep].val == "::::+" {
				c.scanOne(a, accRead)
				a = arg{val: unknownMark}
			}
			items = append(items, a)
		}
	}
	if len(tmpl) == 0 {
		return judgedArgs
	}
	// A template of one word is a whole command line, as for sh -c.
	single := len(tmpl) == 1 && strings.ContainsAny(tmpl[0].val, " \t;|&")
	for _, it := range items {
		if single {
			cmd := strings.ReplaceAll(tmpl[0].val, "{}", shellQuote(it.val))
			if !strings.Contains(tmpl[0].val, "{}") {
				cmd += " " + shellQuote(it.val)
			}
			c.j.nested(c.owner, arg{val: cmd, fetch: it.fetch, decode: it.decode}, c.sc, "parallel")
			continue
		}
		argv := make([]arg, 0, len(tmpl)+1)
		placed := false
		for _, a := range tmpl {
			if strings.Contains(a.val, "{}") || strings.Contains(a.val, "{1}") {
				a.val = strings.ReplaceAll(strings.ReplaceAll(a.val, "{}", it.val), "{1}", it.val)
				placed = true
			}
			argv = append(argv, a)
		}
		if !placed {
			argv = append(argv, it)
		}
		c.j.judgeArgv(c.owner, argv, c.sc)
	}
	return judgedArgs
}

// shellQuote quotes s for a shell command line; unknown parts stay
// unknown.
func shellQuote(s string) string {
	if strings.Contains(s, unknownMark) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// reExShell finds the shell commands of vim's ex command line: :!cmd,
// :r !cmd, :w !cmd, :terminal cmd, system("cmd").
var (
	reExBang   = lazyre.New(`^(?:silent!?\s*|exe(?:cute)?\s+)?(?:\d*,?\d*|%)?\s*(?:r(?:ead)?|w(?:rite)?|)\s*!(.*)$`)
	reExTerm   = lazyre.New(`^(?:silent!?\s*)?(?:ter(?:minal)?|!)\s+(.+)$`)
	reExSystem = lazyre.New(`(?:system|systemlist|jobstart|termopen|job_start)\s*\(\s*(?:\[\s*)?['"]((?:[^'"\\]|\\.)*)['"]`)
	reExLang   = lazyre.New(`^(py3?|python3?|pyx|pythonx|lua|perl|ruby|tcl|luado|py3do|pydo|rubydo|perldo)\s+(.*)$`)
	reExWrite  = lazyre.New(`^(?:w(?:rite)?|sav(?:eas)?|wq?|x(?:it)?|up(?:date)?)!?\s+([^!|].*)$`)
)

// reBareShell is a command line that only starts an interactive shell.
var reBareShell = lazyre.New(`^\s*(?:exec\s+)?(?:/\S*/)?(?:ba|da|z|k|mk|c|tc|fi|a|r)?sh(?:\s+-[ilps]+)*\s*$`)

// shellEscape refuses a program told to start an interactive shell: it
// escapes whatever confined the program (and, run with more privileges,
// hands them over). It reports whether it refused.
func (c *call) shellEscape(cmd, what string) bool {
	cmd = strings.TrimSpace(strings.Trim(strings.TrimSpace(cmd), `"'`))
	if inner, ok := strings.CutPrefix(cmd, "sh -c "); ok {
		cmd = strings.Trim(inner, `"' `)
	}
	if reBareShell.MatchString(cmd) {
		c.deny("obfuscation", what+" starts an interactive shell")
		return true
	}
	return false
}

// exCommand judges one ex command given to vim with -c, + or --cmd.
func (c *call) exCommand(cmd string) {
	cmd = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(cmd), ":"))
	if cmd == "" {
		return
	}
	switch cmd {
	case "sh", "shell", "terminal", "term", "!sh", "!bash", "!/bin/sh", "!/bin/bash":
		c.deny("obfuscation", c.name+" starts an interactive shell")
		return
	}
	if strings.HasPrefix(cmd, "set shell=") || strings.HasPrefix(cmd, "set shell ") {
		return // harmless alone; :shell or ! is judged on its own
	}
	for _, m := range reExSystem.FindAllStringSubmatch(cmd, -1) {
		c.j.nested(c.owner, arg{val: unescapeCode(m[1])}, c.sc, c.name+" system()")
	}
	if m := reExLang.FindStringSubmatch(cmd); m != nil {
		lang := map[string]string{"lua": "lua", "luado": "lua", "perl": "perl", "perldo": "perl", "ruby": "ruby", "rubydo": "ruby", "tcl": "tclsh"}[m[1]]
		if lang == "" {
			lang = "python"
		}
		c.judgeCode(lang, arg{val: m[2]})
		return
	}
	if m := reExBang.FindStringSubmatch(cmd); m != nil {
		if !c.shellEscape(m[1], c.name) {
			c.j.nested(c.owner, arg{val: m[1]}, c.sc, c.name+" shell command")
		}
		return
	}
	if m := reExTerm.FindStringSubmatch(cmd); m != nil {
		c.j.nested(c.owner, arg{val: m[1]}, c.sc, c.name+" terminal")
		return
	}
	if m := reExWrite.FindStringSubmatch(cmd); m != nil {
		c.checkArg(arg{val: c.j.tildeArg(strings.TrimSpace(m[1]))}, accWrite)
	}
}

// tildeArg expands a leading ~ of a path written inside a program.
func (j *judge) tildeArg(s string) string {
	if strings.HasPrefix(s, "~") {
		return j.tilde(s)
	}
	return s
}

// vim judges vi and its kin: the files edited are written, the ex commands
// given on the command line run.
func (c *call) vim() outcome {
	args := c.argv[1:]
	var files []arg
	for k := 0; k < len(args); k++ {
		v := args[k].val
		switch {
		case v == "-c" || v == "--cmd" || v == "-S" || v == "-s" || v == "-u" || v == "-U" || v == "-i" || v == "-T" || v == "-t" || v == "-w" || v == "-W":
			if k+1 < len(args) {
				k++
				switch v {
				case "-c", "--cmd":
					c.exCommand(args[k].val)
				case "-S", "-s", "-u", "-U":
					c.scanOne(args[k], accRead)
				case "-w", "-W":
					c.checkArg(args[k], accWrite)
				}
			}
		case strings.HasPrefix(v, "+"):
			c.exCommand(v[1:])
		case v == "--":
			files = append(files, args[k+1:]...)
			k = len(args)
		case strings.HasPrefix(v, "-"):
		default:
			files = append(files, args[k])
		}
	}
	for _, f := range files {
		c.checkArg(f, accCreate)
	}
	for _, t := range c.stdinTexts() {
		if c.hasAnyOpt("-s", "-es", "-e", "-E", "-Es") {
			for _, line := range strings.Split(t, "\n") {
				c.exCommand(line)
			}
		}
	}
	return judgedArgs
}

// ed judges ed scripts read from standard input: !command runs a shell.
func (c *call) ed() outcome {
	_, ops := c.split(optSpec{short: "p"})
	for _, o := range ops {
		c.checkArg(o, accCreate)
	}
	for _, t := range c.stdinTexts() {
		for _, line := range strings.Split(t, "\n") {
			l := strings.TrimSpace(line)
			switch {
			case strings.HasPrefix(l, "!"):
				c.j.nested(c.owner, arg{val: l[1:]}, c.sc, "ed shell command")
			case strings.HasPrefix(l, "r !") || strings.HasPrefix(l, "e !") || strings.HasPrefix(l, "w !"):
				c.j.nested(c.owner, arg{val: l[3:]}, c.sc, "ed shell command")
			case len(l) > 2 && (l[0] == 'w' || l[0] == 'W') && l[1] == ' ':
				c.checkArg(arg{val: c.j.tildeArg(strings.TrimSpace(l[2:]))}, accWrite)
			}
		}
	}
	return genericScan
}

var (
	reGdbShell = lazyre.New(`^(?:!|shell\s+|pipe\s+[^|]*\|\s*|\|\s*[^|]*\|\s*)(.+)$`)
	reGdbPy    = lazyre.New(`^(?:python|py|python-interactive|pi)\s+(.+)$`)
	reGdbCall  = lazyre.New(`(?:call|print|p|output)\s+.*\bsystem\s*\(\s*"((?:[^"\\]|\\.)*)"`)
)

// debugCommand judges one command given to gdb or lldb.
func (c *call) debugCommand(cmd string) {
	cmd = strings.TrimSpace(cmd)
	switch {
	case strings.HasPrefix(cmd, "platform shell "):
		c.j.nested(c.owner, arg{val: strings.TrimPrefix(cmd, "platform shell ")}, c.sc, c.name+" shell command")
	case strings.HasPrefix(cmd, "script "):
		c.judgeCode("python", arg{val: strings.TrimPrefix(cmd, "script ")})
	case strings.HasPrefix(cmd, "attach ") || strings.HasPrefix(cmd, "process attach"):
		c.deny("secrets", c.name+" attaches to a running process and can read its memory")
	}
	if m := reGdbPy.FindStringSubmatch(cmd); m != nil {
		c.judgeCode("python", arg{val: m[1]})
		return
	}
	if cmd == "shell" || cmd == "!" {
		c.deny("obfuscation", c.name+" starts an interactive shell")
		return
	}
	if m := reGdbShell.FindStringSubmatch(cmd); m != nil {
		if !c.shellEscape(m[1], c.name) {
			c.j.nested(c.owner, arg{val: m[1]}, c.sc, c.name+" shell command")
		}
		return
	}
	if m := reGdbCall.FindStringSubmatch(cmd); m != nil {
		c.j.nested(c.owner, arg{val: unescapeCode(m[1])}, c.sc, c.name+" system()")
	}
}

// gdb judges gdb's -ex commands, attaching to processes and the program it
// would run.
func (c *call) gdb() outcome {
	args := c.argv[1:]
	var ops []arg
	for k := 0; k < len(args); k++ {
		v := strings.TrimPrefix(args[k].val, "-")
		switch {
		case v == "ex" || v == "-ex" || v == "iex" || v == "eval-command" || v == "-eval-command" || v == "init-eval-command" || v == "batch-eval-command":
			if k+1 < len(args) {
				k++
				c.debugCommand(args[k].val)
			}
		case strings.HasPrefix(v, "-eval-command="):
			c.debugCommand(strings.TrimPrefix(v, "-eval-command="))
		case v == "x" || v == "-command" || v == "ix" || v == "cd" || v == "d" || v == "directory" || v == "s" || v == "symbols" || v == "e" || v == "exec" || v == "c" || v == "core":
			if k+1 < len(args) {
				k++
				c.scanOne(args[k], accRead)
			}
		case v == "p" || v == "pid" || v == "-pid":
			c.deny("secrets", "gdb attaches to a running process and can read its memory")
			k++
		case v == "args" || v == "-args":
			if k+1 < len(args) {
				c.j.judgeArgv(c.owner, args[k+1:], c.sc)
			}
			return judgedArgs
		case strings.HasPrefix(args[k].val, "-"):
		default:
			ops = append(ops, args[k])
		}
	}
	if len(ops) > 1 && isNumber(ops[1].val) {
		c.deny("secrets", "gdb attaches to a running process and can read its memory")
	}
	for _, t := range c.stdinTexts() {
		for _, line := range strings.Split(t, "\n") {
			c.debugCommand(line)
		}
	}
	return judgedArgs
}

func (c *call) lldb() outcome {
	for _, v := range c.optValues("-o", "--one-line", "-O", "--one-line-before-file", "-k", "--one-line-on-crash") {
		c.debugCommand(v.val)
	}
	if c.hasAnyOpt("-p", "--attach-pid", "-n", "--attach-name") {
		c.deny("secrets", "lldb attaches to a running process and can read its memory")
	}
	return judgedArgs
}

// emacs judges Emacs Lisp given with --eval: shell-command, call-process
// and the file functions it calls.
func (c *call) emacs() outcome {
	for _, v := range c.optValues("--eval", "-eval", "--execute", "-e") {
		c.judgeCode("lisp", v)
		if reEmacsShell.MatchString(v.val) {
			c.deny("obfuscation", "emacs starts an interactive shell")
		}
	}
	for _, f := range c.optValues("-l", "--load", "-script", "--script") {
		c.scanOne(f, accRead)
	}
	return judgedArgs
}

// tmux judges the shell commands of new sessions, windows and panes, and
// the keys sent to them.
func (c *call) tmux() outcome {
	args := c.argv[1:]
	for k := 0; k < len(args); k++ {
		switch args[k].val {
		case "new-session", "new", "new-window", "neww", "split-window", "splitw", "respawn-pane", "respawnp",
			"respawn-window", "respawnw", "run-shell", "run", "if-shell", "if", "display-popup", "popup", "pipe-pane", "pipep":
			var words []arg
			for k++; k < len(args) && args[k].val != ";" && args[k].val != "\\;"; k++ {
				v := args[k].val
				if strings.HasPrefix(v, "-") && len(words) == 0 {
					if strings.ContainsAny(v[len(v)-1:], "tsnc FeFxyw") && k+1 < len(args) && len(v) == 2 {
						k++
					}
					continue
				}
				words = append(words, args[k])
			}
			c.runWords(words, "tmux")
		case "send-keys", "send":
			var keys []string
			for k++; k < len(args) && args[k].val != ";" && args[k].val != "\\;"; k++ {
				v := args[k].val
				switch {
				case v == "-t" || v == "-N":
					k++
				case strings.HasPrefix(v, "-"):
				case v == "Enter" || v == "C-m" || v == "KPEnter":
					keys = append(keys, "\n")
				default:
					keys = append(keys, v)
				}
			}
			c.j.nested(c.owner, arg{val: strings.Join(keys, "")}, c.sc, "tmux send-keys")
		}
	}
	return judgedArgs
}

// runWords judges the words of a command run by another program: one word
// is a shell command line, several are an argument vector.
func (c *call) runWords(words []arg, what string) {
	switch {
	case len(words) == 1:
		c.j.nested(c.owner, words[0], c.sc, what)
	case len(words) > 1:
		c.j.judgeArgv(c.owner, words, c.sc)
	}
}

// screen judges screen -dm commands and text stuffed into a session.
func (c *call) screen() outcome {
	args := c.argv[1:]
	for k := 0; k < len(args); k++ {
		v := args[k].val
		switch {
		case v == "-X" || v == "-x":
			if v == "-X" && k+2 < len(args) && args[k+1].val == "stuff" {
				c.j.nested(c.owner, arg{val: decodeANSIC(args[k+2].val)}, c.sc, "screen stuff")
			}
			return judgedArgs
		case v == "-Logfile" || len(v) > 1 && v[0] == '-' && strings.ContainsAny(v[len(v)-1:], "SceLpTts"):
			k++ // an option taking a value, maybe after flags (-dmS name)
		case strings.HasPrefix(v, "-"):
		default:
			c.j.judgeArgv(c.owner, args[k:], c.sc)
			return judgedArgs
		}
	}
	return judgedArgs
}

// cmdStrings judges tools whose operands are shell command lines
// (hyperfine, watchexec, nodemon --exec) or an argument vector (entr).
func (c *call) cmdStrings() outcome {
	switch c.name {
	case "hyperfine":
		_, ops := c.split(optSpec{short: "wrmMpcsSnLu", long: []string{"warmup", "runs", "min-runs", "max-runs", "prepare", "cleanup", "setup", "shell", "command-name", "parameter-scan", "parameter-list", "export-json", "export-csv", "export-markdown", "time-unit", "output", "style"}})
		for _, o := range ops {
			c.j.nested(c.owner, o, c.sc, "hyperfine")
		}
		for _, v := range c.optValues("-p", "--prepare", "-c", "--cleanup", "-s", "--setup") {
			c.j.nested(c.owner, v, c.sc, "hyperfine")
		}
	case "nodemon":
		for _, v := range c.optValues("-x", "--exec") {
			c.j.nested(c.owner, v, c.sc, "nodemon --exec")
		}
	case "entr", "watchexec", "sem":
		i, _ := parseOpts(c.argv, 1, optSpec{short: "ewfsWpd", long: []string{"exts", "watch", "filter", "ignore", "shell", "signal", "debounce", "delay", "jobs", "id"}})
		c.runWords(c.argv[i:], c.name)
	}
	return judgedArgs
}

// manPager judges the pager man is told to use: it runs as a command.
func (c *call) manPager() outcome {
	for _, v := range c.optValues("-P", "--pager", "-H", "--html") {
		if !c.shellEscape(v.val, "man's pager") {
			c.j.nested(c.owner, v, c.sc, "man pager")
		}
	}
	return genericScan
}

var reEmacsShell = lazyre.New(`\((?:term|ansi-term|shell|eshell|vterm)\b`)
