package safety

import "strings"

// layerRules judges what unwrapping recorded on the invocation, in the
// order it was unwrapped: each wrapper, a package runner the command ends
// on, a command name that cannot be read, and giving up too deep.
func (c *call) layerRules() {
	for _, l := range c.layers {
		c.layerRule(l)
	}
	if c.pkg != nil {
		c.pkgRule(c.pkg)
	}
	c.nameRule()
	if c.tooDeep {
		c.deny("obfuscation", "too many nested wrappers")
	}
}

// nameRule refuses command names that are only known at run time.
func (c *call) nameRule() {
	if c.fault == nameOK {
		return
	}
	a := c.argv[0]
	switch c.fault {
	case nameFetched:
		c.deny("download_exec", "runs a command downloaded at run time")
	case nameRunTime:
		c.deny("obfuscation", "command name is only known at run time: "+a.text())
	case nameGlob:
		c.deny("obfuscation", "command name is a glob pattern: "+a.val)
	case nameEmpty:
		c.deny("obfuscation", "empty command name")
	case nameSyntax:
		c.deny("obfuscation", "command name contains shell syntax: "+a.val)
	}
}

// layerRule judges one wrapper: what it does itself (runs as another user,
// prints the environment, attaches to a process ...), the variables it
// sets, the paths and command strings it is given.
func (c *call) layerRule(l layer) {
	if l.pkg != nil {
		c.pkgRule(l.pkg)
	}
	switch l.wrapper {
	case "sudo", "doas", "pkexec":
		c.deny("privilege", "runs a command as another user ("+l.wrapper+")")
	case "chroot", "unshare", "nsenter":
		c.deny("privilege", "changes root or namespaces ("+l.wrapper+")")
		if l.root != nil {
			c.scanAs(l.wrapper, *l.root)
		}
	case "systemd-run":
		c.deny("services", "starts a system service unit (systemd-run)")
	case "setpriv":
		if l.privileged {
			c.deny("privilege", "runs a command with other user ids or capabilities (setpriv)")
		}
	case "run0":
		c.deny("privilege", "runs a command as another user (run0)")
	case "start-stop-daemon":
		if l.stopped {
			c.deny("services", "start-stop-daemon stops a service")
		}
	case "strace", "ltrace":
		if l.stopped {
			c.deny("secrets", "attaches to a running process ("+l.wrapper+")")
		}
	case "flock":
		if l.nested != nil {
			c.j.nested(c.owner, *l.nested, c.sc, "flock -c")
		}
	case "xargs":
		c.xargsRule(l)
	}
	c.assignRules(l.assigns)
	if l.wrapper == "env" && l.stopped {
		if _, ok := hasOpt(l.opts, "i", "ignore-environment", "0"); !ok {
			c.deny("secrets", "prints the process environment")
		}
	}
}

// xargsRule judges the commands xargs runs and what it reads.
func (c *call) xargsRule(l layer) {
	for _, inner := range l.extras {
		c.j.judgeArgv(c.owner, inner, c.sc)
	}
	if a, ok := hasOpt(l.opts, "a", "arg-file"); ok {
		c.scanAs(l.wrapper, a)
	}
	c.countedXargs(l.opts, l.inner)
	for _, p := range c.in {
		if p.endless {
			c.deny("resource_exhaustion", "xargs runs a command for every line of an endless stream")
		}
		if p.secretList {
			c.secretHunt(l.inner)
		}
	}
}

// scanAs checks a path a wrapper reads the way scanArgs checks the
// arguments of a command of that name.
func (c *call) scanAs(name string, a arg) {
	w := *c
	w.name = name
	w.scanOne(a, accRead)
}

// assignRules judges the NAME=value words a wrapper sets (env, sudo).
func (c *call) assignRules(assigns []arg) {
	for _, a := range assigns {
		name, val, _ := strings.Cut(a.val, "=")
		switch name {
		case "LD_PRELOAD", "LD_AUDIT":
			c.deny("privilege", "preloads a shared library into programs")
		case "HISTFILE", "HISTSIZE", "HISTFILESIZE":
			if val == "" || val == "0" || val == "/dev/null" {
				c.deny("anti_forensics", "disables shell history")
			}
		case "BASH_ENV", "ENV", "PROMPT_COMMAND":
			c.j.nested(c.owner, arg{val: val}, c.sc, name)
		}
		c.registryAssign(name, val)
		c.envCommand(name, part(a, val))
	}
}
