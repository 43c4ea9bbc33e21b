package safety

import "strings"

// gitCommand is "git [global options] <verb> ..." read the way git reads
// it; the built-in git rules and the owner's rules both judge this.
type gitCommand struct {
	dir     arg   // the directory -C or --work-tree names; empty when none
	configs []arg // the values of -c, in order
	args    []arg // the verb and what follows, -c aliases expanded
	// plain is true when every global option is one that changes neither
	// configuration, repository, directory nor what runs (-P, --no-pager,
	// the pathspec flags): an owner's allow rule reaches through those only.
	plain bool
}

// gitPlainFlags are the global options that leave the meaning of a git
// command alone.
var gitPlainFlags = map[string]bool{
	"-P": true, "--no-pager": true, "--no-replace-objects": true, "--literal-pathspecs": true, "--glob-pathspecs": true,
	"--noglob-pathspecs": true, "--icase-pathspecs": true, "--no-optional-locks": true, "--no-advice": true, "--no-lazy-fetch": true,
}

// gitValueOpts take a value, in the next word or after "=".
var gitValueOpts = []string{"--git-dir", "--work-tree", "--namespace", "--exec-path", "--config-env", "--attr-source"}

// parseGit reads git's arguments (without the program name).
func parseGit(args []arg) gitCommand {
	g := gitCommand{plain: true}
	for len(args) > 0 && strings.HasPrefix(args[0].val, "-") {
		v := args[0].val
		if !gitPlainFlags[v] {
			g.plain = false
		}
		switch {
		case v == "-C" && len(args) > 1:
			g.dir = args[1]
			args = args[2:]
			continue
		case v == "-c" && len(args) > 1:
			g.configs = append(g.configs, args[1])
			args = args[2:]
			continue
		case hasAnyPrefix(v, gitValueOpts):
			if !strings.Contains(v, "=") && len(args) > 1 {
				if strings.HasPrefix(v, "--work-tree") {
					g.dir = args[1]
				}
				args = args[2:]
				continue
			}
			if strings.HasPrefix(v, "--work-tree=") {
				g.dir = arg{val: strings.TrimPrefix(v, "--work-tree=")}
			}
		}
		args = args[1:]
	}
	g.args = expandGitAlias(args, g.configs)
	return g
}

// expandGitAlias replaces a verb defined by "-c alias.<verb>=<value>" with
// its value; a "!" alias runs a shell command, which is judged as one.
func expandGitAlias(args, configs []arg) []arg {
	for range 4 { // aliases may name aliases
		if len(args) == 0 {
			return args
		}
		value, ok := "", false
		for _, kv := range configs {
			k, v, _ := strings.Cut(kv.val, "=")
			if strings.EqualFold(k, "alias."+args[0].val) {
				value, ok = v, true
			}
		}
		if !ok || strings.HasPrefix(value, "!") || strings.TrimSpace(value) == "" {
			return args
		}
		var out []arg
		for _, w := range strings.Fields(value) {
			out = append(out, litArg(w))
		}
		args = append(out, args[1:]...)
	}
	return args
}

// gitAliasDefinition returns what "git config [options] [set] alias.<x>
// <value>" makes alias x stand for; ok is false for other commands and for
// "!" aliases (their shell command is judged as such).
func gitAliasDefinition(args []arg) (value []string, ok bool) {
	if len(args) == 0 || args[0].val != "config" {
		return nil, false
	}
	var ops []string
	rest := args[1:]
	for k := 0; k < len(rest); k++ {
		switch v := rest[k].val; {
		case v == "-f" || v == "--file" || v == "--blob" || v == "--type" || v == "--default" || v == "--comment" || v == "--value":
			k++ // and its value
		case !strings.HasPrefix(v, "-"):
			ops = append(ops, v)
		}
	}
	if len(ops) > 0 && ops[0] == "set" {
		ops = ops[1:]
	}
	if len(ops) < 2 || !strings.HasPrefix(strings.ToLower(ops[0]), "alias.") || strings.HasPrefix(ops[1], "!") {
		return nil, false
	}
	return strings.Fields(ops[1]), true
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
