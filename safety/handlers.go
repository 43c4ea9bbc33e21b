package safety

import "strings"

// handler judges one command: it reports its findings to the judge and
// returns what the steps after it need to know.
type handler func(*call) outcome

// outcome is what a handler decided besides its findings: whether the
// generic scan of the arguments (scanArgs) still runs, and which
// interpreter reads its program from standard input (stdinProgram).
type outcome struct {
	argsJudged bool   // the handler judged the arguments itself
	stdinProg  string // the interpreter reading its program from stdin; "" for none
}

var (
	genericScan = outcome{}                 // the generic scan judges the arguments
	judgedArgs  = outcome{argsJudged: true} // the handler judged the arguments
)

// readsStdin is the outcome of a handler that judged the arguments and
// whose command prog reads its program from standard input.
func readsStdin(prog string) outcome { return outcome{argsJudged: true, stdinProg: prog} }

// commandHandlers maps command names to the function judging them.
// Commands without a handler are allowed unless their arguments name
// protected or secret paths.
func commandHandlers() map[string]handler {
	h := map[string]handler{}
	reg := func(f handler, names ...string) {
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
	registerPermHandlers(reg)
	registerArchiveHandlers(reg)
	registerDiskHandlers(reg)
	registerSystemHandlers(reg)
	registerContainerHandlers(reg)
	registerGitHandlers(reg)
	registerFetchHandlers(reg)
	registerSSHHandlers(reg)
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

// dispatch runs the handler for the command name and returns its outcome.
func (c *call) dispatch() outcome {
	full := c.argv[0].val
	if strings.HasPrefix(full, "/etc/init.d/") || strings.HasPrefix(full, "/etc/rc.d/") {
		if len(c.argv) > 1 && c.argv[1].val == "status" {
			return genericScan
		}
		c.deny("services", "controls a system service: "+full)
		return genericScan
	}
	if f := c.j.p.handlers[c.name]; f != nil {
		return f(c)
	}
	return genericScan
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
