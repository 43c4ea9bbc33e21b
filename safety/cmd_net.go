package safety

import (
	"strings"
)

func registerNetHandlers(reg func(handler, ...string)) {
	reg((*call).netcat, "nc", "ncat", "netcat", "nc.traditional", "nc.openbsd", "pwncat", "cryptcat", "sbd")
	reg((*call).socat, "socat")
	reg((*call).telnet, "telnet")
	reg((*call).openssl, "openssl")
	reg((*call).mail, "mail", "mailx", "sendmail", "mutt", "msmtp", "ssmtp", "swaks", "neomutt", "s-nail")
	reg((*call).lookup, "dig", "nslookup", "host", "ping", "ping6", "traceroute", "drill", "whois")
	reg((*call).ftp, "ftp", "tftp", "lftp", "smbclient", "ncftp", "ncftpput")
	reg((*call).ztcp, "ztcp", "zsocket")
}

// urlArg reports whether a looks like a URL or host.
func isURL(v string) bool {
	return strings.Contains(v, "://")
}

// netcat judges nc and its variants: -e is a shell on a socket, -l a
// listener, anything else a raw connection.
func (c *call) netcat() outcome {
	opts, ops := c.split(optSpec{short: "ecpswiqIOPTVxXbo", long: []string{"exec", "sh-exec", "lua-exec", "source", "wait", "proxy", "proxy-type", "send-only", "output"}})
	if has(opts, "e", "c", "exec", "sh-exec", "lua-exec") {
		c.deny("reverse_shell", c.name+" attaches a program to a network connection")
		return judgedArgs
	}
	if has(opts, "l", "listen") {
		c.ask("network_listener", c.name+" listens for network connections")
		return judgedArgs
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
		return judgedArgs
	}
	c.netSend()
	return judgedArgs
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

func (c *call) socat() outcome {
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
	return judgedArgs
}

// ztcp judges zsh's socket builtins (zmodload zsh/net/tcp): a connection
// whose descriptor lands in $REPLY.
func (c *call) ztcp() outcome {
	_, ops := c.split(optSpec{short: "d"})
	if c.name == "ztcp" && c.hasAnyOpt("-l", "-a") {
		c.ask("network_listener", "ztcp listens for network connections")
		return judgedArgs
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
	return judgedArgs
}

func (c *call) telnet() outcome {
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
	return judgedArgs
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

func (c *call) openssl() outcome {
	if len(c.argv) < 2 {
		return genericScan
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
	return genericScan
}

func (c *call) mail() outcome {
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
	return judgedArgs
}

func (c *call) lookup() outcome {
	for _, a := range c.argv[1:] {
		if a.subst {
			c.deny("exfiltration", c.name+" leaks command output through a network lookup")
			return judgedArgs
		}
	}
	return judgedArgs
}

func (c *call) ftp() outcome {
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
			return judgedArgs
		}
	}
	c.ftpGets(text)
	return judgedArgs
}
