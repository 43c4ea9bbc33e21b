package safety

import (
	"regexp"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

// FuzzCheck checks that Check never panics and that a refused command
// stays refused when disguised in ways that do not change its meaning:
// extra blanks, a harmless wrapper, or a quoted command name.
func FuzzCheck(f *testing.F) {
	for _, r := range loadCorpus(f) {
		f.Add(r.command)
	}
	for _, r := range loadRows(f, "heldout3.tsv") {
		f.Add(r.command)
	}
	p := corpusPolicy(f)
	f.Fuzz(func(t *testing.T, cmd string) {
		v := p.Check(cmd)
		switch v.Action {
		case Allow, Ask, Deny:
		default:
			t.Fatalf("Check(%q) = %v: unknown action", cmd, v)
		}
		if v.Action != Deny {
			return
		}
		for _, variant := range variants(cmd) {
			if got := p.Check(variant); got.Action != Deny {
				t.Errorf("Check(%q) = %v, but Check(%q) = %v", cmd, v, variant, got)
			}
		}
	})
}

var plainWord = regexp.MustCompile(`^[A-Za-z0-9_./+-]+$`)

// variants returns disguises of cmd with the same meaning. Wrappers and
// quoting are applied only to a single simple command whose name is an
// ordinary word, where they cannot change what runs.
func variants(cmd string) []string {
	out := []string{"  " + cmd}
	if !strings.HasSuffix(cmd, "\\") {
		out = append(out, cmd+" \t ")
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(cmd), "")
	if err != nil || len(f.Stmts) != 1 {
		return out
	}
	st := f.Stmts[0]
	ce, ok := st.Cmd.(*syntax.CallExpr)
	if !ok || len(ce.Args) == 0 || len(ce.Assigns) > 0 || st.Negated || st.Background || st.Coprocess {
		return out
	}
	first := ce.Args[0]
	name := first.Lit()
	if !plainWord.MatchString(name) || strings.HasPrefix(name, "-") || syntax.IsKeyword(name) || isShellBuiltin(name) {
		return out
	}
	start := int(first.Pos().Offset())
	end := int(first.End().Offset())
	if start != int(st.Pos().Offset()) || end > len(cmd) || cmd[start:end] != name {
		return out // a redirection comes first, or the word is spelled differently
	}
	rest := cmd[end:]
	out = append(out,
		cmd[:start]+`"`+name+`"`+rest,
		cmd[:end]+"  "+strings.TrimLeft(rest, " "),
	)
	for _, w := range []string{"nice ", "env ", "command ", "timeout 5 "} {
		out = append(out, cmd[:start]+w+cmd[start:])
	}
	return out
}

// isShellBuiltin lists builtins that a wrapper cannot run (a wrapper
// executes a program, not a builtin of the current shell).
func isShellBuiltin(name string) bool {
	switch name {
	case "cd", "pushd", "popd", "export", "unset", "set", "eval", "source", ".", "alias", "unalias", "trap",
		"history", "declare", "local", "readonly", "typeset", "exec", "exit", "return", "shift", "builtin",
		"command", "hash", "read", "wait", "jobs", "fg", "bg", "disown", "ulimit", "umask", "shopt", "let",
		"getopts", "enable", "mapfile", "readarray", "complete", "compgen", "bind", "caller", "suspend", "logout",
		"times", "type", "break", "continue", "kill", "echo", "printf", "test", "[", "true", "false", ":", "time":
		return true
	}
	return false
}
