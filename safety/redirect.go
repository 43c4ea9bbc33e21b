package safety

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// redirKind says what a redirection does.
type redirKind int

const (
	redirText   redirKind = iota // here-document or here-string
	redirFD                      // duplicates a descriptor, or one only known at run time
	redirSubst                   // reads a process substitution: < <(command)
	redirNet                     // a /dev/tcp or /dev/udp socket
	redirRead                    // < file
	redirAppend                  // >> file, &>> file
	redirWrite                   // > file and the other writes
)

// redirect is one redirection of a simple command: what it does, the word
// it names and that word resolved to a path ("" when unknown).
type redirect struct {
	op     syntax.RedirOperator
	kind   redirKind
	target arg
	path   string
}

// redirects judges the redirections of a statement that is not a simple
// command with a name (compound commands, bare redirections).
func (j *judge) redirects(ci *callInfo, rs []*syntax.Redirect, sc *scope) {
	c := &call{j: j, sc: sc, ci: ci, owner: ci.owner}
	j.parseRedirects(&c.invocation, rs, sc)
	c.redirectRules()
}

// parseRedirects lists the redirections of a command in inv and fills in
// where its standard input comes from and its standard output goes. It
// judges nothing: redirectRules does, afterwards.
func (j *judge) parseRedirects(inv *invocation, rs []*syntax.Redirect, sc *scope) {
	for _, r := range rs {
		rd := redirect{op: r.Op, kind: redirWrite}
		switch r.Op {
		case syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
			rd.kind = redirText
			if r.Op == syntax.WordHdoc {
				rd.target = j.word(r.Word, sc)
				rd.target.val += "\n"
			} else if r.Hdoc != nil {
				rd.target = j.word(r.Hdoc, sc)
			}
			a := rd.target
			inv.stdinText = &a
			inv.redirs = append(inv.redirs, rd)
			continue
		}
		if r.Word == nil {
			continue
		}
		rd.target = j.word(r.Word, sc)
		a := rd.target
		switch {
		case (r.Op == syntax.DplIn || r.Op == syntax.DplOut) && (isFD(a.val) || !a.known()):
			rd.kind = redirFD
		case r.Op == syntax.RdrIn && a.subst && a.proc != nil:
			rd.kind = redirSubst
			inv.stdinSubst = &a
		default:
			rd.path, _ = j.resolve(a, sc)
			switch {
			case rd.path != "" && isNetDevice(rd.path):
				rd.kind = redirNet
			case r.Op == syntax.RdrIn:
				rd.kind = redirRead
			case r.Op == syntax.AppOut || r.Op == syntax.AppAll || r.Op == syntax.AppClob || r.Op == syntax.AppAllClob:
				rd.kind = redirAppend
			}
			switch {
			case rd.path == "":
			case r.Op == syntax.RdrIn:
				inv.stdinFile = rd.path
			case rd.kind != redirNet:
				inv.stdout = rd.path
			}
		}
		inv.redirs = append(inv.redirs, rd)
	}
}

// redirectRules judges the redirections parseRedirects listed: sockets,
// descriptors wired to a shell, and the files read, created or written.
func (c *call) redirectRules() {
	for _, r := range c.redirs {
		switch r.kind {
		case redirFD:
			if !r.target.known() && (isShellName(c.name) || isInterpreter(c.name) || c.name == "exec") {
				c.j.fdShells++
			}
		case redirNet:
			c.ci.netClient = true
			if f := strings.Split(r.path, "/"); len(f) >= 5 {
				c.judgeDest(f[3], f[4], r.path)
			}
			if r.op == syntax.RdrIn {
				continue
			}
			if c.name == "" || c.name == "exec" || isShellName(c.name) || isInterpreter(c.name) || r.op == syntax.RdrInOut || r.op == syntax.DplOut || r.op == syntax.DplIn {
				c.deny("reverse_shell", "connects a shell to a network socket: "+r.path)
			} else {
				c.deny("exfiltration", "sends output to a network socket: "+r.path)
			}
		case redirRead:
			p := r.path
			if c.checkArg(r.target, accRead) == "" && p != "" && !c.j.inWorkspace(p) && !isTemp(p) && !anyUnder(p, benignDevices) {
				c.ci.sensitive = true
			}
		case redirAppend:
			if !(r.path != "" && c.keyscanAppend(r.path)) {
				c.checkArg(r.target, accCreate)
			}
		case redirWrite:
			c.checkArg(r.target, accWrite)
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
