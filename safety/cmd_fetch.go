package safety

import "strings"

func registerFetchHandlers(reg func(handler, ...string)) {
	reg((*call).curl, "curl", "curlie")
	reg((*call).wget, "wget", "wget2")
	reg((*call).fetcher, "fetch", "http", "https", "xh", "lynx", "links", "w3m", "aria2c", "httpie")
}

// curl judges a curl command option by option, then the request as a whole.
func (c *call) curl() outcome {
	args := c.argv[1:]
	r := &curlRequest{toStdout: true}
	for k := 0; k < len(args); k++ {
		k = c.curlArg(r, args, k)
	}
	c.curlDone(r)
	return judgedArgs
}

// curlValueOpts are the curl options taking a value that curlArg does not
// read otherwise.
var curlValueOpts = func() map[string]bool {
	m := map[string]bool{}
	for _, o := range []string{"-X", "--request", "-H", "--header", "-u", "--user", "-A", "--user-agent", "-e", "--referer",
		"-b", "--cookie", "-c", "--cookie-jar", "-m", "--max-time", "-w", "--write-out", "-x", "--proxy", "-U",
		"--proxy-user", "-r", "--range", "-E", "--cert", "--key", "--cacert", "--capath", "--connect-timeout", "--retry",
		"--retry-delay", "--retry-max-time", "--resolve", "-C", "--continue-at", "--url", "-D", "--dump-header",
		"--limit-rate", "-y", "--speed-time", "-Y", "--speed-limit", "-z", "--time-cond", "-t", "--telnet-option",
		"--max-filesize", "--max-redirs", "--interface", "--dns-servers", "--proto", "--proto-redir", "--oauth2-bearer",
		"--aws-sigv4", "--connect-to", "--output-dir", "--create-file-mode", "--trace", "--trace-ascii", "--stderr",
		"--unix-socket", "--abstract-unix-socket", "--noproxy", "--local-port", "--variable", "--expand-url"} {
		m[o] = true
	}
	return m
}()

// curlRequest is what curl's arguments say about the request so far.
type curlRequest struct {
	toStdout   bool     // the response goes to standard output
	outs       []arg    // files the response is saved to
	remoteName bool     // -O: saved under the URL's file name
	method     string   // -X
	targets    []string // the URLs
}

// curlArg judges the argument args[k] of curl (and the value it takes) and
// returns the index of the last argument it used.
func (c *call) curlArg(r *curlRequest, args []arg, k int) int {
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
	case "-d", "--data", "--data-binary", "--data-ascii", "--data-urlencode", "--json", "--data-raw", "-F", "--form",
		"-T", "--upload-file":
		c.curlBody(name, val)
	case "-o", "--output", "-O", "--remote-name", "--remote-name-all", "--url":
		c.curlOutput(r, name, val)
	case "-K", "--config", "--resolve", "--connect-to", "--unix-socket", "--abstract-unix-socket", "-X", "--request":
		c.curlConnection(r, name, val)
	default:
		switch {
		case curlValueOpts[name] && !hasInline:
			h, ok := val()
			if ok && h.subst {
				c.deny("exfiltration", "puts command output into a request")
			}
		case strings.HasPrefix(v, "-") && !strings.HasPrefix(v, "--") && len(v) > 2 && strings.HasSuffix(v, "o") && k+1 < len(args):
			// bundled flags ending in -o, like -sSLo file
			k++
			r.toStdout = false
			r.outs = append(r.outs, args[k])
		case strings.HasPrefix(v, "-") && !strings.HasPrefix(v, "--") && strings.Contains(v, "O"):
			r.toStdout = false
			r.remoteName = true
		case strings.HasPrefix(v, "-"):
		default:
			c.curlURL(r, a)
		}
	}
	return k
}

// curlBody judges the options giving the data a request sends.
func (c *call) curlBody(name string, val func() (arg, bool)) {
	switch name {
	case "-d", "--data", "--data-binary", "--data-ascii", "--data-urlencode", "--json":
		d, ok := val()
		if !ok {
			return
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
			return
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
			return
		}
		if f.val == "-" || f.val == "." {
			c.ci.sink = true
			return
		}
		c.deny("exfiltration", "uploads a file: "+f.text())
	}
}

// curlOutput reads the options saying where the response goes.
func (c *call) curlOutput(r *curlRequest, name string, val func() (arg, bool)) {
	switch name {
	case "-o", "--output":
		f, ok := val()
		if ok && f.val != "-" {
			r.toStdout = false
			r.outs = append(r.outs, f)
		}
	case "-O", "--remote-name", "--remote-name-all":
		r.toStdout = false
		r.remoteName = true
	case "--url":
		if u, ok := val(); ok {
			c.judgeTarget(u.val, "curl")
			if r.remoteName {
				r.outs = append(r.outs, arg{val: urlBase(u.val)})
			}
		}
	}
}

// curlConnection judges the options choosing what curl connects to and how.
func (c *call) curlConnection(r *curlRequest, name string, val func() (arg, bool)) {
	switch name {
	case "-K", "--config":
		if f, ok := val(); ok {
			c.checkArg(f, accRead)
		}
	case "--resolve", "--connect-to":
		// host:port:address and host:port:host2:port2 name the address
		// really connected to.
		if spec, ok := val(); ok {
			f := strings.Split(strings.TrimPrefix(spec.val, "+"), ":")
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
			r.method = strings.ToUpper(m.val)
		}
	}
}

// curlURL judges a URL operand of curl.
func (c *call) curlURL(r *curlRequest, a arg) {
	v := a.val
	if a.subst {
		c.deny("exfiltration", "puts command output into a request URL")
	}
	if strings.HasPrefix(strings.ToLower(v), "file://") {
		c.scanOne(a, accRead)
	}
	c.judgeTarget(v, "curl")
	r.targets = append(r.targets, v)
	if r.remoteName {
		r.outs = append(r.outs, arg{val: urlBase(v)})
	}
}

// curlDone judges the request as a whole: a DELETE, and the files and
// output a download taints.
func (c *call) curlDone(r *curlRequest) {
	if r.method == "DELETE" {
		c.httpDelete(r.targets)
	}
	for _, o := range r.outs {
		if c.checkArg(o, accWrite) == "" {
			if p, ok := c.j.resolve(o, c.sc); ok {
				c.sc.tainted[p] = "download_exec"
			}
		}
	}
	if r.toStdout {
		c.ci.fetch = true
		if c.stdout != "" {
			c.sc.tainted[c.stdout] = "download_exec"
		}
	}
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

func urlBase(u string) string {
	u, _, _ = strings.Cut(u, "?")
	u, _, _ = strings.Cut(u, "#")
	b := baseName(strings.TrimRight(u, "/"))
	if b == "" || strings.Contains(b, ":") {
		return "index.html"
	}
	return b
}

func (c *call) wget() outcome {
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
			return judgedArgs
		}
		if c.checkArg(out, accWrite) == "" {
			if p, ok := c.j.resolve(out, c.sc); ok {
				c.sc.tainted[p] = "download_exec"
			}
		}
		return judgedArgs
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
	return judgedArgs
}

func (c *call) fetcher() outcome {
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
		return judgedArgs
	}
	if !out {
		c.ci.fetch = true
	}
	return judgedArgs
}
