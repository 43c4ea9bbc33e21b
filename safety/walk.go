package safety

import (
	"path/filepath"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

const (
	maxDepth = 8    // nested sh -c / eval strings
	maxCalls = 4000 // simple commands judged per line
)

// judge holds the findings for one Check call.
type judge struct {
	p             *Policy
	findings      []finding
	allowedOwners []int
	owners        int
	depth         int
	calls         int
	piping        int // pipelines being judged around the current command
	sockets       int // connections opened into a descriptor (ztcp, exec 3<>/dev/tcp)
	fdShells      int // shells wired to a descriptor held in a variable
	dns           lookups
}

func newJudge(p *Policy) *judge { return &judge{p: p} }

// scope is what the filter knows about the shell state while it reads a
// script from top to bottom.
type scope struct {
	cwd     string // "" when unknown
	vars    map[string]*varVal
	bind    map[string]string // loop variable bound for one judging pass
	funcs   map[string]bool
	tainted map[string]string // file -> category of its origin (download, decoded data)
	links   map[string]string // symlink created by the script -> its target
	venv    bool              // a workspace virtual environment was activated
	home    string
}

type varVal struct {
	vals    []string
	unknown bool
	secret  bool // holds the result of a search for credentials
}

func (j *judge) rootScope() *scope {
	return &scope{
		cwd:     j.p.workspace,
		vars:    map[string]*varVal{},
		funcs:   map[string]bool{},
		tainted: map[string]string{},
		links:   map[string]string{},
		home:    j.p.home,
	}
}

// child returns a scope for a nested script (sh -c): same directory and
// discoveries, fresh variables.
func (sc *scope) child() *scope {
	return &scope{
		cwd:     sc.cwd,
		vars:    map[string]*varVal{},
		funcs:   map[string]bool{},
		tainted: sc.tainted,
		links:   sc.links,
		venv:    sc.venv,
		home:    sc.home,
	}
}

func (j *judge) add(owner int, a Action, cat, reason string) {
	j.findings = append(j.findings, finding{action: a, category: cat, reason: reason, owner: owner})
}

// script parses and judges a whole command line or a nested command string.
func (j *judge) script(src string, sc *scope) {
	if j.depth > maxDepth {
		j.add(-1, Deny, "obfuscation", "commands are nested too deeply to judge")
		return
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	if err != nil {
		j.add(-1, Deny, "unparsable", err.Error())
		return
	}
	j.collectVars(f, sc)
	j.list(f.Stmts, sc)
}

// nested judges a command string given to sh -c, eval, su -c, ssh and the
// like. Unknown parts become a variable reference, so that they count as
// unknowable where it matters (command names, delete targets).
func (j *judge) nested(owner int, a arg, sc *scope, what string) {
	switch {
	case a.fetch:
		j.add(owner, Deny, "download_exec", what+" runs code downloaded at run time")
		return
	case a.decode:
		j.add(owner, Deny, "obfuscation", what+" runs decoded data")
		return
	}
	src := strings.ReplaceAll(a.val, unknownMark, "${__unknown}")
	j.depth++
	j.script(src, sc.child())
	j.depth--
}

func (j *judge) list(stmts []*syntax.Stmt, sc *scope) []*callInfo {
	var all []*callInfo
	for _, s := range stmts {
		all = append(all, j.stmt(s, sc, nil)...)
	}
	return all
}

// stmt judges one statement; in describes what feeds its standard input.
func (j *judge) stmt(s *syntax.Stmt, sc *scope, in []*callInfo) []*callInfo {
	if s == nil {
		return nil
	}
	switch c := s.Cmd.(type) {
	case nil:
		owner := j.newOwner()
		ci := &callInfo{owner: owner}
		j.substs(s, sc)
		j.redirects(ci, s.Redirs, sc)
		return []*callInfo{ci}
	case *syntax.CallExpr:
		infos := j.call(c, s, sc, in)
		if j.piping == 0 {
			j.endlessEnd(infos)
		}
		return infos
	case *syntax.BinaryCmd:
		if c.Op == syntax.Pipe || c.Op == syntax.PipeAll {
			return j.pipeline(s, sc, in)
		}
		out := j.stmt(c.X, sc, in)
		return append(out, j.stmt(c.Y, sc, nil)...)
	}
	return j.compound(s, sc, in)
}

// compound judges a compound command (subshell, block, if, loops, case,
// function, declaration); its redirections apply to everything inside.
func (j *judge) compound(s *syntax.Stmt, sc *scope, in []*callInfo) []*callInfo {
	var out []*callInfo
	owner := j.newOwner()
	red := &callInfo{owner: owner}
	j.redirects(red, s.Redirs, sc)
	switch c := s.Cmd.(type) {
	case *syntax.Subshell:
		saved := sc.cwd
		out = j.stmtsIn(c.Stmts, sc, in)
		sc.cwd = saved
	case *syntax.Block:
		out = j.stmtsIn(c.Stmts, sc, in)
	case *syntax.IfClause:
		for ic := c; ic != nil; ic = ic.Else {
			out = append(out, j.list(ic.Cond, sc)...)
			out = append(out, j.list(ic.Then, sc)...)
		}
	case *syntax.WhileClause:
		out = append(out, j.list(c.Cond, sc)...)
		out = append(out, j.list(c.Do, sc)...)
		if infiniteCond(c.Cond, c.Until) {
			j.loopBomb(owner, c.Do)
			j.spinLoop(owner, c.Do)
		}
	case *syntax.ForClause:
		out = append(out, j.forClause(owner, c, sc)...)
	case *syntax.CaseClause:
		j.substs(c.Word, sc)
		for _, it := range c.Items {
			out = append(out, j.list(it.Stmts, sc)...)
		}
	case *syntax.FuncDecl:
		j.funcDecl(owner, c, sc)
	case *syntax.DeclClause:
		j.substs(c, sc)
		j.declClause(owner, c, sc)
	case *syntax.TimeClause:
		out = j.stmt(c.Stmt, sc, in)
	case *syntax.CoprocClause:
		out = j.stmt(c.Stmt, sc, in)
	case *syntax.TestDecl:
		out = j.stmt(c.Body, sc, in)
	default: // arithmetic, [[ ]], let
		j.substs(c, sc)
	}
	return append(out, red)
}

// forClause judges a for loop: its words, and its body once.
func (j *judge) forClause(owner int, f *syntax.ForClause, sc *scope) []*callInfo {
	j.countedLoop(owner, f)
	if wi, ok := f.Loop.(*syntax.WordIter); ok {
		for _, w := range wi.Items {
			j.substs(w, sc)
		}
	} else if cs, ok := f.Loop.(*syntax.CStyleLoop); ok {
		j.substs(cs, sc)
		if cs.Cond == nil {
			j.loopBomb(owner, f.Do)
			j.spinLoop(owner, f.Do)
		}
	}
	return j.list(f.Do, sc)
}

// stmtsIn judges a block whose first statement receives the block's input.
func (j *judge) stmtsIn(stmts []*syntax.Stmt, sc *scope, in []*callInfo) []*callInfo {
	var out []*callInfo
	for i, s := range stmts {
		var feed []*callInfo
		if i == 0 {
			feed = in
		}
		out = append(out, j.stmt(s, sc, feed)...)
	}
	return out
}

func flattenPipe(s *syntax.Stmt) []*syntax.Stmt {
	if b, ok := s.Cmd.(*syntax.BinaryCmd); ok && (b.Op == syntax.Pipe || b.Op == syntax.PipeAll) && len(s.Redirs) == 0 && !s.Negated {
		return append(flattenPipe(b.X), flattenPipe(b.Y)...)
	}
	return []*syntax.Stmt{s}
}

func (j *judge) pipeline(s *syntax.Stmt, sc *scope, in []*callInfo) []*callInfo {
	// The statement itself is a pipe, even when negated (! a | b) or
	// redirected; its stages are flattened as far as they are plain.
	b := s.Cmd.(*syntax.BinaryCmd)
	stages := append(flattenPipe(b.X), flattenPipe(b.Y)...)
	if len(s.Redirs) > 0 {
		j.redirects(&callInfo{owner: j.newOwner()}, s.Redirs, sc)
	}
	var all []*callInfo
	var stageInfos [][]*callInfo
	feed := in
	j.piping++
	for _, st := range stages {
		infos := j.stmt(st, sc, feed)
		stageInfos = append(stageInfos, infos)
		all = append(all, infos...)
		feed = infos
	}
	j.piping--
	if j.piping == 0 {
		j.endlessEnd(feed)
	}
	j.pipelineRules(stageInfos)
	return all
}

// substs judges the command and process substitutions found in node,
// without descending into nested statements the walker visits itself.
func (j *judge) substs(node syntax.Node, sc *scope) {
	if node == nil {
		return
	}
	syntax.Walk(node, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CmdSubst:
			saved := sc.cwd
			j.list(n.Stmts, sc)
			sc.cwd = saved
			return false
		case *syntax.ProcSubst:
			saved := sc.cwd
			j.list(n.Stmts, sc)
			sc.cwd = saved
			return false
		}
		return true
	})
}

func (j *judge) newOwner() int {
	j.owners++
	return j.owners
}

// infiniteCond reports whether a while condition is always true (an until
// condition always false).
func infiniteCond(cond []*syntax.Stmt, until bool) bool {
	if len(cond) != 1 {
		return false
	}
	ce, ok := cond[0].Cmd.(*syntax.CallExpr)
	if !ok || len(ce.Args) == 0 {
		return false
	}
	switch ce.Args[0].Lit() {
	case "true", ":":
		return !until
	case "false":
		return until
	}
	return false
}

// loopBomb flags endless loops that start background processes or keep
// appending to files.
func (j *judge) loopBomb(owner int, body []*syntax.Stmt) {
	bomb := false
	for _, st := range body {
		syntax.Walk(st, func(n syntax.Node) bool {
			switch n := n.(type) {
			case *syntax.Stmt:
				if n.Background {
					bomb = true
				}
				for _, r := range n.Redirs {
					if r.Op == syntax.AppOut || r.Op == syntax.AppAll {
						if w := r.Word.Lit(); w != "/dev/null" {
							bomb = true
						}
					}
				}
			case *syntax.CallExpr:
				if len(n.Args) > 0 {
					switch n.Args[0].Lit() {
					case "fork", "mkdir", "fallocate", "dd":
						bomb = true
					}
				}
			}
			return true
		})
	}
	if bomb {
		j.add(owner, Deny, "resource_exhaustion", "endless loop that keeps spawning processes or growing files")
	}
}

// funcDecl flags self-recursive functions (fork bombs) and judges the body
// where it is declared, since it may run later under any name.
func (j *judge) funcDecl(owner int, fd *syntax.FuncDecl, sc *scope) {
	var names []string
	if fd.Name != nil {
		names = append(names, fd.Name.Value)
	}
	for _, n := range fd.Names {
		names = append(names, n.Value)
	}
	for _, name := range names {
		sc.funcs[name] = true
		recursive := false
		syntax.Walk(fd.Body, func(n syntax.Node) bool {
			if ce, ok := n.(*syntax.CallExpr); ok && len(ce.Args) > 0 && ce.Args[0].Lit() == name {
				recursive = true
			}
			return true
		})
		if recursive {
			j.add(owner, Deny, "resource_exhaustion", "function "+name+" calls itself (fork bomb)")
		}
	}
	j.stmt(fd.Body, sc, nil)
}

// collectVars records, for the whole script, the values each variable may
// take. It is flow-insensitive: a variable assigned twice has two values.
func (j *judge) collectVars(f *syntax.File, sc *scope) {
	setVal := func(name string, a arg, known bool) {
		v := sc.vars[name]
		if v == nil {
			v = &varVal{}
			sc.vars[name] = v
		}
		v.secret = v.secret || a.secret
		if !known || !a.known() {
			v.unknown = true
			return
		}
		v.vals = append(v.vals, a.val)
	}
	assign := func(as *syntax.Assign) {
		if as.Name == nil {
			return
		}
		if as.Naked && as.Value == nil && as.Array == nil {
			return // "export NAME" or "local name" keeps the value
		}
		if as.Value == nil || as.Array != nil || as.Append || as.Index != nil {
			setVal(as.Name.Value, arg{}, false)
			return
		}
		setVal(as.Name.Value, j.word(as.Value, sc), true)
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CallExpr:
			for _, as := range n.Assigns {
				assign(as)
			}
			if len(n.Args) > 0 {
				switch n.Args[0].Lit() {
				case "read", "mapfile", "readarray", "getopts", "printf", "select":
					for _, w := range n.Args[1:] {
						if l := w.Lit(); l != "" && !strings.HasPrefix(l, "-") {
							setVal(l, arg{}, false)
						}
					}
				}
			}
		case *syntax.DeclClause:
			nameref := false
			for _, as := range n.Args {
				if as.Name == nil && as.Value != nil && strings.HasPrefix(as.Value.Lit(), "-") && strings.Contains(as.Value.Lit(), "n") {
					nameref = true // declare -n: the name stands for another variable
				}
			}
			for _, as := range n.Args {
				if nameref && as.Name != nil {
					setVal(as.Name.Value, arg{}, false)
					continue
				}
				assign(as)
			}
		case *syntax.ForClause:
			if wi, ok := n.Loop.(*syntax.WordIter); ok {
				if len(wi.Items) == 0 {
					setVal(wi.Name.Value, arg{}, false)
				}
				for _, a := range j.words(wi.Items, sc) {
					setVal(wi.Name.Value, a, true)
				}
			}
		}
		return true
	})
}

// taintOf returns the category of the origin of p: a file downloaded or
// decoded by the script, or one inside a repository it cloned (names in
// tainted that end in a slash).
func (sc *scope) taintOf(p string) (string, bool) {
	if t, ok := sc.tainted[p]; ok {
		return t, true
	}
	for k, t := range sc.tainted {
		if strings.HasSuffix(k, "/") && strings.HasPrefix(p, k) {
			return t, true
		}
	}
	return "", false
}

// param evaluates a parameter expansion when its value is known.
func (sc *scope) param(p *syntax.ParamExp) string {
	if p.Param == nil || p.Excl || p.Length || p.Width || p.Index != nil || p.Slice != nil ||
		p.Repl != nil || p.Exp != nil || p.Names != 0 || len(p.Modifiers) > 0 || p.NestedParam != nil || p.Flags != nil {
		return unknownMark
	}
	name := p.Param.Value
	if v, ok := sc.bind[name]; ok {
		return v
	}
	if v := sc.vars[name]; v != nil {
		if !v.unknown && len(v.vals) == 1 {
			return v.vals[0]
		}
		return unknownMark
	}
	switch name {
	case "!":
		return "%bg"
	case "$":
		return "%self"
	case "PPID":
		return "%ppid"
	case "RANDOM", "SRANDOM", "EPOCHSECONDS", "EPOCHREALTIME", "SECONDS", "UID", "EUID", "BASHPID", "LINENO":
		return "_" // a number: part of a name, never a directory
	case "HOME":
		if sc.home != "" {
			return sc.home
		}
	case "PWD":
		if sc.cwd != "" {
			return sc.cwd
		}
	}
	return unknownMark
}

// multiVars lists variables referenced by node that have a few known values,
// so the command can be judged once per value.
func (sc *scope) multiVars(node syntax.Node) []string {
	var names []string
	syntax.Walk(node, func(n syntax.Node) bool {
		if p, ok := n.(*syntax.ParamExp); ok && p.Param != nil {
			if v := sc.vars[p.Param.Value]; v != nil && !v.unknown && len(v.vals) > 1 && len(v.vals) <= 16 {
				for _, x := range names {
					if x == p.Param.Value {
						return true
					}
				}
				names = append(names, p.Param.Value)
			}
		}
		return true
	})
	return names
}

// resolve turns a path argument into a cleaned absolute path, following
// links the script itself created. ok is false when it cannot be known.
func (j *judge) resolve(a arg, sc *scope) (string, bool) {
	if !a.known() || a.val == "" {
		return "", false
	}
	p := a.val
	if !strings.HasPrefix(p, "/") {
		if sc.cwd == "" {
			return "", false
		}
		p = sc.cwd + "/" + p
	}
	p = filepath.Clean(p)
	for link, target := range sc.links {
		if p == link || strings.HasPrefix(p, link+"/") {
			p = filepath.Clean(target + p[len(link):])
		}
	}
	return p, true
}
