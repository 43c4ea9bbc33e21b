package safety

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// redirects judges the redirections of a statement that is not a simple
// command with a name (compound commands, bare redirections).
func (j *judge) redirects(ci *callInfo, rs []*syntax.Redirect, sc *scope) {
	c := &call{j: j, sc: sc, ci: ci, owner: ci.owner}
	c.redirectsOf(rs)
}

func (c *call) redirectsOf(rs []*syntax.Redirect) {
	for _, r := range rs {
		switch r.Op {
		case syntax.Hdoc, syntax.DashHdoc:
			var a arg
			if r.Hdoc != nil {
				a = c.j.word(r.Hdoc, c.sc)
			}
			c.stdinText = &a
			continue
		case syntax.WordHdoc:
			a := c.j.word(r.Word, c.sc)
			a.val += "\n"
			c.stdinText = &a
			continue
		}
		if r.Word == nil {
			continue
		}
		a := c.j.word(r.Word, c.sc)
		if r.Op == syntax.DplIn || r.Op == syntax.DplOut {
			if !a.known() && (isShellName(c.name) || isInterpreter(c.name) || c.name == "exec") {
				c.j.fdShells++
			}
			if isFD(a.val) || !a.known() {
				continue
			}
		}
		if r.Op == syntax.RdrIn && a.subst && a.proc != nil {
			c.stdinSubst = &a
			continue
		}
		p, ok := c.j.resolve(a, c.sc)
		if ok && isNetDevice(p) {
			c.ci.netClient = true
			if f := strings.Split(p, "/"); len(f) >= 5 {
				c.judgeDest(f[3], f[4], p)
			}
			if r.Op == syntax.RdrIn {
				c.stdinFile = p
				continue
			}
			if c.name == "" || c.name == "exec" || isShellName(c.name) || isInterpreter(c.name) || r.Op == syntax.RdrInOut || r.Op == syntax.DplOut || r.Op == syntax.DplIn {
				c.deny("reverse_shell", "connects a shell to a network socket: "+p)
			} else {
				c.deny("exfiltration", "sends output to a network socket: "+p)
			}
			continue
		}
		switch r.Op {
		case syntax.RdrIn:
			if ok {
				c.stdinFile = p
			}
			if c.checkArg(a, accRead) == "" && ok && !c.j.inWorkspace(p) && !isTemp(p) && !anyUnder(p, benignDevices) {
				c.ci.sensitive = true
			}
		case syntax.AppOut, syntax.AppAll, syntax.AppClob, syntax.AppAllClob:
			if !(ok && c.keyscanAppend(p)) {
				c.checkArg(a, accCreate)
			}
			if ok {
				c.stdout = p
			}
		default:
			c.checkArg(a, accWrite)
			if ok {
				c.stdout = p
			}
		}
	}
}

func isFD(s string) bool {
	if s == "-" || s == "" {
		return true
	}
	s = strings.TrimSuffix(s, "-")
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
