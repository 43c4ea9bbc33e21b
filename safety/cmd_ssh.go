package safety

import "strings"

func registerSSHHandlers(reg func(handler, ...string)) {
	reg((*call).ssh, "ssh", "autossh", "dbclient", "mosh")
	reg((*call).scp, "scp", "sftp", "rsync")
}

// ssh judges the remote command as if it ran here, and the forwarding
// options.
func (c *call) ssh() outcome {
	i, opts := parseOpts(c.argv, 1, optSpec{short: "bcDEeFIiJLlmOoPpQRSWwM"})
	for _, o := range opts {
		switch o.name {
		case "R":
			c.deny("reverse_shell", "ssh -R opens a reverse tunnel into this machine")
		case "L", "D", "w":
			c.ask("network_listener", "ssh -"+o.name+" opens a local listener or tunnel")
		case "o":
			k, v, _ := strings.Cut(o.val.val, "=")
			if v == "" {
				k, v, _ = strings.Cut(o.val.val, " ")
			}
			switch strings.ToLower(k) {
			case "proxycommand", "localcommand", "knownhostscommand":
				c.j.nested(c.owner, arg{val: strings.TrimSpace(v)}, c.sc, "ssh "+k)
			case "remoteforward":
				c.deny("reverse_shell", "ssh RemoteForward opens a reverse tunnel into this machine")
			case "localforward", "dynamicforward":
				c.ask("network_listener", "ssh "+k+" opens a local listener")
			}
		case "i", "F":
			c.scanOneIdentity(o.val)
		}
	}
	rest := c.argv[i:]
	if len(rest) == 0 {
		return judgedArgs
	}
	c.loginHere(rest[0], opts)
	c.ci.sink = true
	if len(rest) > 1 {
		var parts []string
		a := arg{}
		for _, r := range rest[1:] {
			parts = append(parts, r.val)
			a.fetch = a.fetch || r.fetch
			a.decode = a.decode || r.decode
		}
		a.val = strings.Join(parts, " ")
		c.j.nested(c.owner, a, c.sc, "ssh remote command")
	}
	if c.stdinFile != "" {
		c.checkArg(arg{val: c.stdinFile}, accRead)
		if !c.j.inWorkspace(c.stdinFile) && !isTemp(c.stdinFile) && !anyUnder(c.stdinFile, benignDevices) {
			c.deny("exfiltration", "sends a file to a remote host: "+c.stdinFile)
		}
	}
	return judgedArgs
}

// scanOneIdentity allows ssh to use a key without counting it as reading
// the key out.
func (c *call) scanOneIdentity(a arg) {
	if p, ok := c.j.resolve(a, c.sc); ok && c.j.isProtected(p, false) {
		c.deny("self_tamper", "uses nanobot's own files: "+p)
	}
}

func isRemoteSpec(v string) bool {
	if strings.HasPrefix(v, "rsync://") || strings.HasPrefix(v, "scp://") || strings.HasPrefix(v, "sftp://") {
		return true
	}
	i := strings.Index(v, ":")
	if i <= 0 {
		return false
	}
	j := strings.Index(v, "/")
	return j < 0 || i < j
}

func (c *call) scp() outcome {
	spec := optSpec{short: "cFiJloPSDX", long: []string{"rsh", "exclude", "include", "filter", "rsync-path", "files-from", "exclude-from", "include-from", "password-file", "log-file", "chmod", "chown", "port", "backup-dir", "suffix", "compare-dest", "link-dest", "copy-dest", "temp-dir", "partial-dir", "bwlimit", "timeout", "contimeout", "out-format", "info", "debug", "max-size", "min-size", "max-delete", "usermap", "groupmap"}}
	if c.name == "rsync" {
		spec.short = "eBfTM"
	}
	opts, ops := c.split(spec)
	if e, ok := hasOpt(opts, "e", "rsh"); ok && c.name == "rsync" {
		c.j.nested(c.owner, e, c.sc, "rsync -e")
	}
	if o, ok := hasOpt(opts, "o"); ok && c.name != "rsync" {
		if k, v, _ := strings.Cut(o.val, "="); strings.EqualFold(k, "ProxyCommand") {
			c.j.nested(c.owner, arg{val: v}, c.sc, "scp ProxyCommand")
		}
	}
	if f, ok := hasOpt(opts, "files-from", "exclude-from", "password-file"); ok {
		c.scanOne(f, accRead)
	}
	if c.name == "sftp" {
		if c.stdinText != nil && strings.Contains(c.stdinText.val, "put ") {
			c.deny("exfiltration", "uploads files over sftp")
		}
		if b, ok := hasOpt(opts, "b"); ok {
			c.scanOne(b, accRead)
			c.deny("exfiltration", "runs an sftp batch that may upload files")
		}
		return judgedArgs
	}
	if len(ops) < 2 {
		return judgedArgs
	}
	dest := ops[len(ops)-1]
	srcs := ops[:len(ops)-1]
	if isRemoteSpec(dest.val) {
		for _, s := range srcs {
			if !isRemoteSpec(s.val) {
				c.deny("exfiltration", c.name+" uploads local files to another host: "+s.text())
				return judgedArgs
			}
		}
		return judgedArgs
	}
	tree := has(opts, "r", "a", "recursive", "archive")
	for _, s := range srcs {
		if !isRemoteSpec(s.val) {
			if tree {
				c.scanOne(s, accReadTree)
			} else {
				c.scanOne(s, accRead)
			}
		}
	}
	if has(opts, "delete", "delete-before", "delete-after", "delete-during", "del", "remove-source-files") {
		for _, s := range srcs {
			if has(opts, "remove-source-files") && !isRemoteSpec(s.val) {
				c.checkArg(s, accDelete)
			}
		}
	}
	c.checkArg(dest, accWrite)
	c.taintCopies(srcs, dest, tree)
	return judgedArgs
}
