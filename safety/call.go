package safety

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// callInfo summarises one judged simple command for the commands around it
// (pipelines feed data from one to the next).
type callInfo struct {
	owner     int
	name      string
	argv      []arg
	fetch     bool   // downloads from the network to stdout
	decode    bool   // decodes or unscrambles data to stdout
	netClient bool   // raw network connection (nc, socat, telnet, /dev/tcp)
	literal   bool   // prints only text known now (echo, printf)
	text      string // that text
	sink      bool   // sends its standard input to the network
	rawSink   bool   // a raw socket sink: any non-literal input counts
	sensitive bool   // reads secrets or data outside the workspace
	shell     bool   // an interpreter reading a program from stdin
	lister    string // lists file names under this workspace directory
	endless   bool   // writes an endless stream (yes, cat /dev/zero)
	lines     int64  // the number of lines it prints, when known (seq)
	// secretList lists files found by a search for credentials.
	secretList bool
	selfPID    bool // prints the process ids of nanobot (pgrep nanobot)
	outside    bool // prints data it read outside the workspace
}

// call is the simple command being judged: what it is (the invocation)
// and where it is judged (the judge, the scope, the commands feeding it),
// with the summary it publishes to the commands around it.
type call struct {
	invocation
	j     *judge
	sc    *scope
	ci    *callInfo   // what this command tells the commands after it
	owner int         // the owner of its findings
	in    []*callInfo // the commands feeding its standard input
}

// invocation is one simple command as the handlers read it: its name and
// arguments after the wrappers it was unwrapped from, those wrappers, and
// its redirections. unwrap and parseRedirects fill it in, judging nothing;
// the rules over it (layerRules, applyRules, redirectRules) and the
// handlers run afterwards and only read it.
type invocation struct {
	name   string  // the base name of the command, "" when nothing is left to judge
	argv   []arg   // the command and its arguments; each word knows whether it is literal
	layers []layer // the wrappers, outermost first (sudo, env, xargs ...)
	pkg    *pkgRun // a package runner the command ends on, run as no command
	fault  nameFault
	// tooDeep is set when unwrapping gave up before the command.
	tooDeep bool

	redirs     []redirect // the redirections, in order
	stdinText  *arg       // here-document or here-string
	stdinSubst *arg       // < <(command)
	stdinFile  string     // < file
	stdout     string     // > file
}

// nameFault says why argv[0] cannot be read as a command name.
type nameFault int

const (
	nameOK      nameFault = iota
	nameRunTime           // only known at run time
	nameFetched           // the output of a download
	nameGlob              // a glob pattern
	nameEmpty             // the empty string
	nameSyntax            // contains shell syntax
)

// layer is one wrapper around the command: its words as written, what it
// is and what it does to the command.
type layer struct {
	argv       []string
	privileged bool    // runs the command with other privileges, root or namespaces
	wrapper    string  // its name: sudo, env, xargs, npx ...
	opts       []opt   // its options
	operands   []arg   // the words after its options
	assigns    []arg   // NAME=value words it sets for the command (env, sudo)
	root       *arg    // the new root directory (chroot)
	nested     *arg    // a command string it runs (flock -c)
	extras     [][]arg // more commands it runs, one per item (xargs -I)
	pkg        *pkgRun // a package runner examined just before this layer
	inner      []arg   // the command it runs
	stopped    bool    // runs no command to judge (command -v, env alone, flock -c ...)
}

func (c *call) deny(cat, reason string) { c.j.add(c.owner, Deny, cat, reason) }
func (c *call) ask(cat, reason string)  { c.j.add(c.owner, Ask, cat, reason) }

// call judges a simple command, once per value of the loop variables it uses.
func (j *judge) call(ce *syntax.CallExpr, s *syntax.Stmt, sc *scope, in []*callInfo) []*callInfo {
	j.calls++
	if j.calls > maxCalls {
		j.add(-1, Deny, "obfuscation", "too many commands to judge")
		return nil
	}
	owner := j.newOwner()
	j.substs(s, sc)
	names := sc.multiVars(ce)
	if len(names) == 0 {
		return []*callInfo{j.simple(owner, ce, s, sc, in)}
	}
	combos := []map[string]string{{}}
	for _, n := range names {
		var next []map[string]string
		for _, c := range combos {
			for _, v := range sc.vars[n].vals {
				m := map[string]string{n: v}
				for k, x := range c {
					m[k] = x
				}
				next = append(next, m)
			}
		}
		combos = next
		if len(combos) > 32 {
			return []*callInfo{j.simple(owner, ce, s, sc, in)}
		}
	}
	var out []*callInfo
	saved := sc.bind
	for _, b := range combos {
		sc.bind = b
		out = append(out, j.simple(owner, ce, s, sc, in))
	}
	sc.bind = saved
	return out
}

func (j *judge) simple(owner int, ce *syntax.CallExpr, s *syntax.Stmt, sc *scope, in []*callInfo) *callInfo {
	ci := &callInfo{owner: owner}
	c := &call{j: j, sc: sc, ci: ci, owner: owner, in: in}
	for _, as := range ce.Assigns {
		j.assignCheck(c, as, len(ce.Args) == 0)
	}
	c.invocation = j.unwrap(j.words(ce.Args, sc), in)
	if c.name == "" && len(c.layers) == 0 {
		c.nameRule() // no name to judge: the redirections are bare ones
		j.redirects(ci, s.Redirs, sc)
		return ci
	}
	if sc.vars["IFS"] != nil && hasBareParam(ce.Args[0]) {
		c.deny("obfuscation", "command name depends on word splitting with a custom IFS")
	}
	c.layerRules()
	c.applyRules()
	// The redirections are read after the wrappers are judged: the command
	// strings those run (BASH_ENV, flock -c, xargs items) may create the
	// links their targets resolve through.
	j.parseRedirects(&c.invocation, s.Redirs, sc)
	c.redirectRules()
	var o outcome
	if c.name != "" {
		c.checkTainted()
		o = c.dispatch()
		c.passThrough()
		c.endlessStream()
		c.printsFound()
		if c.name == "echo" || c.name == "printf" || c.name == "print" {
			c.secretVars(ce)
		}
	}
	if !o.argsJudged {
		c.scanArgs()
	}
	c.selfCheck()
	if o.stdinProg != "" {
		c.stdinProgram(o.stdinProg)
	}
	ci.name = c.name
	ci.argv = c.argv
	for _, f := range j.findings {
		if f.owner == owner && f.action == Deny && (f.category == "secrets" || f.category == "self_tamper") {
			ci.sensitive = true
		}
	}
	return ci
}

// hasBareParam reports whether a word contains an unquoted parameter
// expansion, which the shell splits into several words.
func hasBareParam(w *syntax.Word) bool {
	for _, p := range w.Parts {
		if _, ok := p.(*syntax.ParamExp); ok {
			return true
		}
	}
	return false
}

// checkTainted refuses running a file that this line downloaded or decoded.
func (c *call) checkTainted() {
	if !strings.Contains(c.argv[0].val, "/") {
		return
	}
	if p, ok := c.j.resolve(c.argv[0], c.sc); ok {
		if t, ok := c.sc.taintOf(p); ok {
			c.deny(t, "runs a file produced by a download or decoder: "+p)
		}
	}
}

// passThrough lets data flags flow through filters in a pipeline, so that
// "curl ... | tee x | sh" is still a download piped into a shell.
func (c *call) passThrough() {
	switch c.name {
	case "tee", "cat", "pv", "head", "tail", "sed", "grep", "sort", "uniq", "tr", "rev", "base64", "base32",
		"basenc", "xxd", "gunzip", "zcat", "bzcat", "xzcat", "gzip", "xz", "bzip2", "zstd", "openssl", "dd",
		"buffer", "mbuffer", "awk", "cut", "uudecode", "iconv", "fold", "expand", "dos2unix", "strings", "tac":
	default:
		return
	}
	for _, p := range c.in {
		c.ci.fetch = c.ci.fetch || p.fetch
		c.ci.netClient = c.ci.netClient || p.netClient
		c.ci.sensitive = c.ci.sensitive || p.sensitive
		c.ci.decode = c.ci.decode || p.decode
		c.ci.secretList = c.ci.secretList || p.secretList
		c.ci.outside = c.ci.outside || p.outside
		if c.name == "tee" {
			// tee passes text through unchanged, so "echo ... | tee f | sh"
			// can still be judged.
			c.ci.literal = p.literal
			c.ci.text = p.text
		}
	}
}

// secretVars refuses printing variables named like credentials.
func (c *call) secretVars(ce *syntax.CallExpr) {
	syntax.Walk(ce, func(n syntax.Node) bool {
		if p, ok := n.(*syntax.ParamExp); ok && p.Param != nil && secretVarName.MatchString(p.Param.Value) {
			c.deny("secrets", "prints a secret variable: "+p.Param.Value)
		}
		return true
	})
}

func argTexts(as []arg) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.text()
	}
	return out
}

// applyRules matches the configured deny and allow rules against every
// layer of the simple command (as written and after each wrapper) and
// against what the command means (see ruleForms). A deny rule also
// reads options loosely (rule.matchLoose); an allow rule matches exactly,
// through the global options that change nothing, and never through sudo
// and friends.
func (c *call) applyRules() {
	if len(c.j.p.deny) == 0 && len(c.j.p.allow) == 0 {
		return
	}
	layers := append(c.layers, layer{argv: argTexts(c.argv)})
	meaning, plain, defines := c.ruleForms()
	for _, r := range c.j.p.deny {
		if r.matchAny(layers, meaning, defines) {
			c.j.findings = append(c.j.findings, finding{action: Deny, category: "rule", reason: "matches deny rule " + quote(r.text), owner: c.owner, rule: true})
		}
	}
	for _, r := range c.j.p.allow {
		if r.matchAllow(layers, meaning, plain) {
			c.j.allowedOwners = append(c.j.allowedOwners, c.owner)
		}
	}
}

// ruleForms returns what the simple command means for the owner's rules,
// when that differs from how it is written: git without its global options
// and with -c aliases expanded (plain when those options change nothing),
// and the command an alias defined by "git config alias.x ..." stands for.
func (c *call) ruleForms() (meaning []string, plain bool, defines []string) {
	if c.name != "git" {
		return nil, false, nil
	}
	g := parseGit(c.argv[1:])
	meaning = append([]string{c.argv[0].text()}, argTexts(g.args)...)
	if v, ok := gitAliasDefinition(g.args); ok {
		defines = append([]string{c.argv[0].text()}, v...)
	}
	return meaning, g.plain, defines
}

func quote(s string) string { return `"` + s + `"` }

// assignCheck judges variable assignments with side effects on the shell.
func (j *judge) assignCheck(c *call, as *syntax.Assign, standalone bool) {
	if as.Name == nil {
		return
	}
	var v arg
	if as.Value != nil {
		v = j.word(as.Value, c.sc)
	}
	switch as.Name.Value {
	case "HISTFILE", "HISTSIZE", "HISTFILESIZE", "SAVEHIST":
		if as.Value == nil || v.val == "" || v.val == "0" || v.val == "/dev/null" {
			c.deny("anti_forensics", "disables shell history")
		}
	case "HISTCONTROL", "HISTIGNORE":
		if strings.Contains(v.val, "*") || strings.Contains(v.val, "ignorespace") {
			c.deny("anti_forensics", "hides commands from shell history")
		}
	case "LD_PRELOAD", "LD_AUDIT":
		c.deny("privilege", "preloads a shared library into programs")
	case "PROMPT_COMMAND", "BASH_ENV", "ENV":
		j.nested(c.owner, v, c.sc, as.Name.Value)
	}
	c.registryAssign(as.Name.Value, v.val)
	c.envCommand(as.Name.Value, v)
}

// scanArgs checks every argument that could name a file against protected
// paths and secrets.
func (c *call) scanArgs() {
	if noScan(c.name) {
		return
	}
	for _, a := range c.argv[1:] {
		c.scanOne(a, accRead)
	}
}

func (c *call) scanOne(a arg, acc access) {
	if !a.known() {
		if !strings.HasPrefix(a.val, "-") && !strings.Contains(a.val, "://") {
			c.checkUnknownRead(a, acc)
		}
		return
	}
	v := a.val
	if strings.HasPrefix(v, "-") {
		_, val, ok := strings.Cut(v, "=")
		if !ok {
			return
		}
		v = val
	} else if k, val, ok := strings.Cut(v, "="); ok && !strings.Contains(k, "/") && (strings.HasPrefix(val, "/") || strings.HasPrefix(val, "~")) {
		v = val
	}
	if strings.Contains(v, "://") || v == "" {
		if strings.HasPrefix(v, "file://") {
			v = strings.TrimPrefix(v, "file://")
		} else {
			return
		}
	}
	if strings.Contains(v, "\n") {
		return
	}
	if metaOnly(c.name) {
		if p, ok := c.j.resolve(arg{val: v}, c.sc); ok && (isRawDevice(p) || c.j.isProtected(p, false)) {
			return // looks at the node, not at what it holds
		}
	}
	c.checkArg(arg{val: v}, acc)
}

func metaOnly(name string) bool {
	switch name {
	case "ls", "stat", "file", "lsblk", "blkid", "udevadm", "smartctl", "namei", "du", "df", "findmnt", "test", "[", "lsof", "fuser":
		return true
	}
	return false
}
