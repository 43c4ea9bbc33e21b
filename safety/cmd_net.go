package safety

import (
	"strings"
)

func registerNetHandlers(reg func(func(*call), ...string)) {
	reg((*call).curl, "curl", "curlie")
	reg((*call).wget, "wget", "wget2")
	reg((*call).fetcher, "fetch", "http", "https", "xh", "lynx", "links", "w3m", "aria2c", "httpie")
	reg((*call).netcat, "nc", "ncat", "netcat", "nc.traditional", "nc.openbsd", "pwncat", "cryptcat", "sbd")
	reg((*call).socat, "socat")
	reg((*call).telnet, "telnet")
	reg((*call).openssl, "openssl")
	reg((*call).ssh, "ssh", "autossh", "dbclient", "mosh")
	reg((*call).scp, "scp", "sftp", "rsync")
	reg((*call).mail, "mail", "mailx", "sendmail", "mutt", "msmtp", "ssmtp", "swaks", "neomutt", "s-nail")
	reg((*call).lookup, "dig", "nslookup", "host", "ping", "ping6", "traceroute", "drill", "whois")
	reg((*call).ftp, "ftp", "tftp", "lftp", "smbclient", "ncftp", "ncftpput")
	reg((*call).ztcp, "ztcp", "zsocket")
}

// urlArg reports whether a looks like a URL or host.
func isURL(v string) bool {
	return strings.Contains(v, "://")
}

// dataFile judges a file that a request would upload.
func (c *call) dataFile(f arg, what string) {
	if f.val == "-" || f.val == "" {
		c.ci.sink = true
		return
	}
	if rest, ok := strings.CutPrefix(f.val, "~/"); ok && c.j.p.home != "" {
		// The shell leaves this tilde alone, but it can only mean home.
		f = part(f, c.j.p.home+"/"+rest)
	}
	p, ok := c.j.resolve(f, c.sc)
	if !ok {
		c.deny("exfiltration", what+" uploads a file only known at run time")
		return
	}
	cat, _ := c.j.classify(p, accRead)
	switch {
	case cat == "self_tamper":
		c.deny("self_tamper", what+" uploads nanobot's own files: "+p)
	case cat != "" || (!c.j.inWorkspace(p) && !isTemp(p)):
		c.deny("exfiltration", what+" uploads a file from outside the workspace: "+p)
	}
}

func (c *call) curl() {
	c.noPathScan = true
	args := c.argv[1:]
	toStdout := true
	var outs []arg
	remoteName := false
	method := ""
	var targets []string
	valueOpts := map[string]bool{}
	for _, o := range []string{"-X", "--request", "-H", "--header", "-u", "--user", "-A", "--user-agent", "-e", "--referer",
		"-b", "--cookie", "-c", "--cookie-jar", "-m", "--max-time", "-w", "--write-out", "-x", "--proxy", "-U",
		"--proxy-user", "-r", "--range", "-E", "--cert", "--key", "--cacert", "--capath", "--connect-timeout", "--retry",
		"--retry-delay", "--retry-max-time", "--resolve", "-C", "--continue-at", "--url", "-D", "--dump-header",
		"--limit-rate", "-y", "--speed-time", "-Y", "--speed-limit", "-z", "--time-cond", "-t", "--telnet-option",
		"--max-filesize", "--max-redirs", "--interface", "--dns-servers", "--proto", "--proto-redir", "--oauth2-bearer",
		"--aws-sigv4", "--connect-to", "--output-dir", "--create-file-mode", "--trace", "--trace-ascii", "--stderr",
		"--unix-socket", "--abstract-unix-socket", "--noproxy", "--local-port", "--variable", "--expand-url"} {
		valueOpts[o] = true
	}
	for k := 0; k < len(args); k++ {
		a := args[k]
		v := a.val
		name, inline, hasInline := strings.Cut(v, "=")
		if !strings.HasPrefix(v, "--") {
			name, hasInline = v, false
		}
		val := func() (arg, bool) {
			if hasInline {
				return arg{val: inline, subst: a.subst}, true
			}
			if k+1 < len(args) {
				k++
				return args[k], true
			}
			return arg{}, false
		}
		// Short options may carry their value attached: -o/tmp/x, -d@file.
		if len(v) > 2 && v[0] == '-' && v[1] != '-' && strings.ContainsAny(v[1:2], "odFTKXHu") && !strings.ContainsAny(v[2:], "-") && v[1] != 's' {
			name, inline, hasInline = v[:2], v[2:], true
		}
		switch name {
		case "-d", "--data", "--data-binary", "--data-ascii", "--data-urlencode", "--json":
			d, ok := val()
			if !ok {
				continue
			}
			if d.subst {
				c.deny("exfiltration", "sends command output in a request")
			}
			dv := d.val
			if name == "--data-urlencode" {
				if i := strings.Index(dv, "@"); i >= 0 && !strings.Contains(dv[:i], "=") {
					dv = dv[i:]
				}
			}
			if strings.HasPrefix(dv, "@") {
				c.dataFile(arg{val: dv[1:]}, "curl")
			}
		case "--data-raw":
			if d, ok := val(); ok && d.subst {
				c.deny("exfiltration", "sends command output in a request")
			}
		case "-F", "--form":
			d, ok := val()
			if !ok {
				continue
			}
			if d.subst {
				c.deny("exfiltration", "sends command output in a request")
			}
			if _, fv, ok := strings.Cut(d.val, "="); ok && (strings.HasPrefix(fv, "@") || strings.HasPrefix(fv, "<")) {
				f, _, _ := strings.Cut(fv[1:], ";")
				c.dataFile(arg{val: f}, "curl")
			}
		case "-T", "--upload-file":
			f, ok := val()
			if !ok {
				continue
			}
			if f.val == "-" || f.val == "." {
				c.ci.sink = true
				continue
			}
			c.deny("exfiltration", "uploads a file: "+f.text())
		case "-o", "--output":
			f, ok := val()
			if ok && f.val != "-" {
				toStdout = false
				outs = append(outs, f)
			}
		case "-O", "--remote-name", "--remote-name-all":
			toStdout = false
			remoteName = true
		case "-K", "--config":
			if f, ok := val(); ok {
				c.checkArg(f, accRead)
			}
		case "--url":
			if u, ok := val(); ok {
				c.judgeTarget(u.val, "curl")
				if remoteName {
					outs = append(outs, arg{val: urlBase(u.val)})
				}
			}
		case "--resolve", "--connect-to":
			// host:port:address and host:port:host2:port2 name the address
			// really connected to.
			if r, ok := val(); ok {
				f := strings.Split(strings.TrimPrefix(r.val, "+"), ":")
				if len(f) >= 3 {
					c.judgeDest(strings.Trim(f[2], "[]"), f[1], "curl")
				}
			}
		case "--unix-socket", "--abstract-unix-socket":
			if sock, ok := val(); ok && isEngineSocket(sock.val) {
				c.deny("privilege", "curl drives the container engine through its socket: "+sock.val)
			}
		case "-X", "--request":
			if m, ok := val(); ok {
				method = strings.ToUpper(m.val)
			}
		default:
			switch {
			case valueOpts[name] && !hasInline:
				h, ok := val()
				if ok && h.subst {
					c.deny("exfiltration", "puts command output into a request")
				}
			case strings.HasPrefix(v, "-") && !strings.HasPrefix(v, "--") && len(v) > 2 && strings.HasSuffix(v, "o") && k+1 < len(args):
				// bundled flags ending in -o, like -sSLo file
				k++
				toStdout = false
				outs = append(outs, args[k])
			case strings.HasPrefix(v, "-") && !strings.HasPrefix(v, "--") && strings.Contains(v, "O"):
				toStdout = false
				remoteName = true
			case strings.HasPrefix(v, "-"):
			default:
				if a.subst {
					c.deny("exfiltration", "puts command output into a request URL")
				}
				if strings.HasPrefix(strings.ToLower(v), "file://") {
					c.scanOne(a, accRead)
				}
				c.judgeTarget(v, "curl")
				targets = append(targets, v)
				if remoteName {
					outs = append(outs, arg{val: urlBase(v)})
				}
			}
		}
	}
	if method == "DELETE" {
		c.httpDelete(targets)
	}
	for _, o := range outs {
		if c.checkArg(o, accWrite) == "" {
			if p, ok := c.j.resolve(o, c.sc); ok {
				c.sc.tainted[p] = "download_exec"
			}
		}
	}
	if toStdout {
		c.ci.fetch = true
		if c.stdout != "" {
			c.sc.tainted[c.stdout] = "download_exec"
		}
	}
}

func urlBase(u string) string {
	u, _, _ = strings.Cut(u, "?")
	u, _, _ = strings.Cut(u, "#")
	b := baseName(strings.TrimRight(u, "/"))
	if b == "" || strings.Contains(b, ":") {
		return "index.html"
	}
	return b
}

func (c *call) wget() {
	c.noPathScan = true
	opts, ops := c.split(optSpec{short: "OoPiaeUTtwQ", long: []string{"output-document", "output-file", "directory-prefix",
		"input-file", "append-output", "execute", "user-agent", "timeout", "tries", "wait", "quota", "post-data", "post-file",
		"body-data", "body-file", "method", "header", "user", "password", "http-user", "http-password", "referer", "load-cookies",
		"save-cookies", "ca-certificate", "certificate", "private-key", "limit-rate", "use-askpass"}})
	for _, o := range opts {
		switch o.name {
		case "post-file", "body-file":
			c.dataFile(o.val, "wget")
		case "post-data", "body-data", "header":
			if o.val.subst {
				c.deny("exfiltration", "sends command output in a request")
			}
		case "i", "input-file", "load-cookies":
			c.scanOne(o.val, accRead)
		case "use-askpass":
			c.j.nested(c.owner, o.val, c.sc, "wget --use-askpass")
		}
	}
	for _, o := range ops {
		if o.subst {
			c.deny("exfiltration", "puts command output into a request URL")
		}
		c.judgeTarget(o.val, "wget")
	}
	if m, ok := hasOpt(opts, "method"); ok && strings.EqualFold(m.val, "DELETE") {
		c.httpDelete(argTexts(ops))
	}
	if out, ok := hasOpt(opts, "O", "output-document"); ok {
		if out.val == "-" {
			c.ci.fetch = true
			return
		}
		if c.checkArg(out, accWrite) == "" {
			if p, ok := c.j.resolve(out, c.sc); ok {
				c.sc.tainted[p] = "download_exec"
			}
		}
		return
	}
	dir := arg{val: "."}
	if d, ok := hasOpt(opts, "P", "directory-prefix"); ok {
		dir = d
		c.checkArg(d, accCreate)
	}
	for _, o := range ops {
		if isURL(o.val) {
			if p, ok := c.j.resolve(arg{val: dir.val + "/" + urlBase(o.val)}, c.sc); ok {
				c.sc.tainted[p] = "download_exec"
			}
		}
	}
}

func (c *call) fetcher() {
	c.noPathScan = true
	out := false
	var targets []string
	deleting := false
	for k, a := range c.argv[1:] {
		if a.subst {
			c.deny("exfiltration", "puts command output into a request")
		}
		if !strings.HasPrefix(a.val, "-") {
			c.judgeTarget(a.val, c.name)
			if strings.ContainsAny(a.val, ":./") {
				targets = append(targets, a.val)
			}
			deleting = deleting || a.val == "DELETE"
		}
		if (a.val == "-o" || a.val == "-O" || a.val == "--output" || a.val == "-d" || a.val == "--download") && k+2 < len(c.argv) {
			if c.argv[k+2].val != "-" {
				out = true
			}
		}
		if strings.Contains(a.val, "@") && !strings.Contains(a.val, "://") && (strings.Contains(a.val, "=@") || strings.HasPrefix(a.val, "@")) {
			_, f, _ := strings.Cut(a.val, "@")
			c.dataFile(arg{val: f}, c.name)
		}
	}
	if deleting {
		c.httpDelete(targets)
	}
	if c.name == "aria2c" {
		c.aria2Outputs()
		return
	}
	if !out {
		c.ci.fetch = true
	}
}

// netcat judges nc and its variants: -e is a shell on a socket, -l a
// listener, anything else a raw connection.
func (c *call) netcat() {
	c.noPathScan = true
	opts, ops := c.split(optSpec{short: "ecpswiqIOPTVxXbo", long: []string{"exec", "sh-exec", "lua-exec", "source", "wait", "proxy", "proxy-type", "send-only", "output"}})
	if has(opts, "e", "c", "exec", "sh-exec", "lua-exec") {
		c.deny("reverse_shell", c.name+" attaches a program to a network connection")
		return
	}
	if has(opts, "l", "listen") {
		c.ask("network_listener", c.name+" listens for network connections")
		return
	}
	if len(ops) > 0 {
		if has(opts, "U", "unixsock") {
			c.judgeTarget(ops[0].val, c.name)
		} else {
			port := ""
			if len(ops) > 1 {
				port = ops[1].val
			}
			c.judgeDest(ops[0].val, port, c.name)
		}
	}
	if has(opts, "z") || len(ops) == 0 {
		return
	}
	c.netSend()
}

// netSend marks a raw network client and judges what it sends.
func (c *call) netSend() {
	c.ci.netClient = true
	c.ci.rawSink = true
	if c.stdinFile != "" && !anyUnder(c.stdinFile, benignDevices) {
		c.deny("exfiltration", "sends a file to the network: "+c.stdinFile)
	}
	for _, a := range c.argv[1:] {
		if a.subst {
			c.deny("exfiltration", "puts command output into a network connection")
		}
	}
}

func (c *call) socat() {
	c.noPathScan = true
	var addrs []string
	for _, a := range c.argv[1:] {
		if !strings.HasPrefix(a.val, "-") || a.val == "-" {
			addrs = append(addrs, strings.ToLower(a.val))
		}
	}
	hasExec, hasNet, listen := false, false, false
	for _, a := range addrs {
		c.socatDest(a)
		switch {
		case strings.HasPrefix(a, "exec:") || strings.HasPrefix(a, "system:") || strings.Contains(a, "pty") || strings.HasPrefix(a, "file:`tty`") || strings.HasPrefix(a, "file:$(tty)"):
			hasExec = true
		case strings.Contains(a, "listen") || strings.HasPrefix(a, "tcp-l:") || strings.HasPrefix(a, "tcp4-l:") || strings.HasPrefix(a, "udp-l:"):
			hasNet, listen = true, true
		case strings.HasPrefix(a, "tcp") || strings.HasPrefix(a, "udp") || strings.HasPrefix(a, "openssl") || strings.HasPrefix(a, "ssl") || strings.HasPrefix(a, "sctp") || strings.HasPrefix(a, "socks") || strings.HasPrefix(a, "proxy"):
			hasNet = true
		}
	}
	switch {
	case hasExec && hasNet:
		c.deny("reverse_shell", "socat attaches a program to a network connection")
	case listen:
		c.ask("network_listener", "socat listens for network connections")
	case hasNet:
		c.netSend()
		for _, a := range addrs {
			if strings.HasPrefix(a, "file:") || strings.HasPrefix(a, "open:") || strings.HasPrefix(a, "gopen:") || strings.HasPrefix(a, "create:") {
				f, _, _ := strings.Cut(a[strings.Index(a, ":")+1:], ",")
				c.dataFile(arg{val: f}, "socat")
			}
		}
	}
}

// ztcp judges zsh's socket builtins (zmodload zsh/net/tcp): a connection
// whose descriptor lands in $REPLY.
func (c *call) ztcp() {
	c.noPathScan = true
	_, ops := c.split(optSpec{short: "d"})
	if c.name == "ztcp" && c.hasAnyOpt("-l", "-a") {
		c.ask("network_listener", "ztcp listens for network connections")
		return
	}
	if len(ops) > 0 && !c.hasAnyOpt("-c") {
		port := ""
		if len(ops) > 1 {
			port = ops[1].val
		}
		if c.name == "ztcp" {
			c.judgeDest(ops[0].val, port, "ztcp")
		} else {
			c.judgeTarget(ops[0].val, "zsocket")
		}
		c.j.sockets++
		c.netSend()
	}
}

func (c *call) telnet() {
	c.noPathScan = true
	_, ops := c.split(optSpec{short: "belnkX"})
	if len(ops) > 0 {
		port := ""
		if len(ops) > 1 {
			port = ops[1].val
		}
		c.judgeDest(ops[0].val, port, "telnet")
	}
	if len(c.argv) > 1 {
		c.netSend()
	}
}

// socatDest judges the destination of one socat address.
func (c *call) socatDest(a string) {
	kind, rest, ok := strings.Cut(a, ":")
	if !ok {
		return
	}
	rest, _, _ = strings.Cut(rest, ",")
	switch {
	case strings.HasPrefix(kind, "unix") || strings.HasPrefix(kind, "abstract") || kind == "gopen" || kind == "open":
		if isEngineSocket(rest) {
			c.deny("privilege", "socat drives the container engine through its socket: "+rest)
		}
	case strings.Contains(kind, "listen") || strings.HasSuffix(kind, "-l"):
	case strings.HasPrefix(kind, "tcp") || strings.HasPrefix(kind, "udp") || strings.HasPrefix(kind, "openssl") ||
		strings.HasPrefix(kind, "ssl") || strings.HasPrefix(kind, "sctp") || strings.HasPrefix(kind, "dccp"):
		host, port := splitHostPort(rest)
		if i := strings.LastIndexByte(rest, ':'); i > 0 && port == "" && !strings.HasPrefix(rest, "[") {
			host, port = rest[:i], rest[i+1:]
		}
		c.judgeDest(host, port, "socat")
	}
}

func (c *call) openssl() {
	if len(c.argv) < 2 {
		return
	}
	switch c.argv[1].val {
	case "speed":
		c.benchWorkers("-multi")
	case "s_client":
		for k, a := range c.argv[2:] {
			if (a.val == "-connect" || a.val == "-host") && k+3 < len(c.argv) {
				host, port := splitHostPort(c.argv[k+3].val)
				c.judgeDest(host, port, "openssl s_client")
			}
		}
		c.netSend()
	case "s_server":
		c.ask("network_listener", "openssl s_server listens for network connections")
	case "enc", "base64", "aes-256-cbc", "des3":
		for _, a := range c.argv[2:] {
			if a.val == "-d" {
				c.ci.decode = true
			}
		}
	}
}

// ssh judges the remote command as if it ran here, and the forwarding
// options.
func (c *call) ssh() {
	c.noPathScan = true
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
		return
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

func (c *call) scp() {
	c.noPathScan = true
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
		return
	}
	if len(ops) < 2 {
		return
	}
	dest := ops[len(ops)-1]
	srcs := ops[:len(ops)-1]
	if isRemoteSpec(dest.val) {
		for _, s := range srcs {
			if !isRemoteSpec(s.val) {
				c.deny("exfiltration", c.name+" uploads local files to another host: "+s.text())
				return
			}
		}
		return
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
}

func (c *call) mail() {
	c.noPathScan = true
	c.ci.sink = true
	c.ci.rawSink = true
	for k, a := range c.argv[1:] {
		if (a.val == "-a" || a.val == "-A" || a.val == "--attach") && k+2 < len(c.argv) {
			f := c.argv[k+2]
			if strings.Contains(f.val, ":") && !strings.HasPrefix(f.val, "/") {
				continue // a header, for mailx -a
			}
			c.deny("exfiltration", "mails a file: "+f.text())
		}
		if strings.HasPrefix(a.val, "--attach") && strings.Contains(a.val, "@") {
			c.deny("exfiltration", "mails a file")
		}
		if a.subst {
			c.deny("exfiltration", "mails command output")
		}
	}
	if c.stdinFile != "" && !anyUnder(c.stdinFile, benignDevices) {
		c.deny("exfiltration", "mails a file: "+c.stdinFile)
	}
}

func (c *call) lookup() {
	c.noPathScan = true
	for _, a := range c.argv[1:] {
		if a.subst {
			c.deny("exfiltration", c.name+" leaks command output through a network lookup")
			return
		}
	}
}

func (c *call) ftp() {
	c.noPathScan = true
	text := ""
	if c.stdinText != nil {
		text = c.stdinText.val
	}
	for _, a := range c.argv[1:] {
		text += " " + a.val
	}
	for _, w := range []string{"put ", "mput ", "-c put", "upload", "send "} {
		if strings.Contains(text, w) {
			c.deny("exfiltration", c.name+" uploads files")
			return
		}
	}
	c.ftpGets(text)
}
