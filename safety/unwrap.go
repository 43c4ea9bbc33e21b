package safety

import (
	"strings"
)

// opt is one parsed command-line option.
type opt struct {
	name string // letter or long name without dashes
	val  arg
}

// optSpec says which options of a command take a value.
type optSpec struct {
	short   string   // short letters taking a value
	long    []string // long names taking a value
	numeric bool     // "-10" style numbers are options
}

func (s optSpec) longTakes(name string) bool {
	for _, l := range s.long {
		if l == name {
			return true
		}
	}
	return false
}

// parseOpts reads options from argv[i:] up to the first operand (or "--")
// and returns the index of that operand.
func parseOpts(argv []arg, i int, spec optSpec) (int, []opt) {
	var opts []opt
	for i < len(argv) {
		v := argv[i].val
		if v == "--" {
			return i + 1, opts
		}
		if len(v) < 2 || v[0] != '-' {
			return i, opts
		}
		if spec.numeric && isNumber(strings.TrimLeft(v, "-")) {
			opts = append(opts, opt{name: "#", val: litArg(v)})
			i++
			continue
		}
		if strings.HasPrefix(v, "--") {
			name, val, has := strings.Cut(v[2:], "=")
			switch {
			case has:
				opts = append(opts, opt{name: name, val: part(argv[i], val)})
			case spec.longTakes(name) && i+1 < len(argv):
				opts = append(opts, opt{name: name, val: argv[i+1]})
				i++
			default:
				opts = append(opts, opt{name: name})
			}
			i++
			continue
		}
		for k := 1; k < len(v); k++ {
			ch := v[k : k+1]
			if strings.Contains(spec.short, ch) {
				if k+1 < len(v) {
					opts = append(opts, opt{name: ch, val: part(argv[i], v[k+1:])})
				} else if i+1 < len(argv) {
					opts = append(opts, opt{name: ch, val: argv[i+1]})
					i++
				} else {
					opts = append(opts, opt{name: ch})
				}
				break
			}
			opts = append(opts, opt{name: ch})
		}
		i++
	}
	return i, opts
}

// part returns a piece of an argument, keeping what is known about its
// substitutions.
func part(a arg, val string) arg {
	return arg{val: val, subst: a.subst, fetch: a.fetch, decode: a.decode}
}

func isNumber(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func hasOpt(opts []opt, names ...string) (arg, bool) {
	for _, o := range opts {
		for _, n := range names {
			if o.name == n {
				return o.val, true
			}
		}
	}
	return arg{}, false
}

// wrapperSpecs lists commands that run the rest of their arguments as a
// command, with the options they accept.
func wrapperSpecs() map[string]optSpec {
	m := map[string]optSpec{
		"nohup":      {},
		"builtin":    {},
		"caffeinate": {short: "tw"},
		"unbuffer":   {},
		"chronic":    {},
		"eatmydata":  {},
		"fakeroot":   {short: "isl"},
		"nocache":    {},
		"catchsegv":  {},
		"torsocks":   {short: "uapP"},
		"tsocks":     {},
		"time":       {short: "fo", long: []string{"format", "output"}},
		"stdbuf":     {short: "ioe", long: []string{"input", "output", "error"}},
		"setsid":     {},
		"ionice":     {short: "cnp"},
		"nice":       {short: "n", long: []string{"adjustment"}, numeric: true},
		"firejail":   {},
		"xvfb-run":   {short: "nsfep", long: []string{"server-num", "server-args", "auth-file", "error-file"}},
		"numactl":    {short: "CNmpiP"},
		"sshpass":    {short: "pfdP"},
		"strace":     {short: "oepsuEIabXP"},
		"ltrace":     {short: "oepsuEnaAD"},
		"valgrind":   {},
		"exec":       {short: "a"},
		"command":    {},
		"doas":       {short: "uC"},
		"sudo":       {short: "ugCDhprtTU", long: []string{"user", "group", "chdir", "host", "prompt", "role", "type", "command-timeout", "other-user", "close-from"}},
		"pkexec":     {long: []string{"user"}},
		"chroot":     {long: []string{"userspec", "groups"}},
		"unshare":    {short: "S", long: []string{"setuid", "setgid", "root", "wd", "map-user", "map-group", "propagation"}},
		"nsenter":    {short: "tSGwr", long: []string{"target", "setuid", "setgid", "wd", "root"}},
		"timeout":    {short: "sk", long: []string{"signal", "kill-after"}},
		"busybox":    {},
		"toybox":     {},
		"env":        {short: "uCSP", long: []string{"unset", "chdir", "split-string", "default-signal", "block-signal", "ignore-signal"}},
		"flock":      {short: "wEc", long: []string{"timeout", "conflict-exit-code", "command"}},
		"chrt":       {},
		"taskset":    {},
		"xargs":      {short: "adEILnPs", long: []string{"arg-file", "delimiter", "eof", "replace", "max-lines", "max-args", "max-procs", "max-chars", "process-slot-var"}},
	}
	m["rlwrap"] = optSpec{short: "aAbcCfFgHlmoOpPsStwz", long: []string{"break-chars", "file", "history-filename", "logfile", "prompt-colour", "histsize", "filter"}}
	m["setarch"] = optSpec{}
	m["cpulimit"] = optSpec{short: "lpe", long: []string{"limit", "pid", "exe", "path"}}
	m["ssh-agent"] = optSpec{short: "aEtPO"}
	m["dbus-run-session"] = optSpec{long: []string{"config-file", "dbus-daemon"}}
	m["dbus-launch"] = optSpec{long: []string{"config-file", "autolaunch"}}
	m["faketime"] = optSpec{short: "fm"}
	m["systemd-inhibit"] = optSpec{long: []string{"what", "who", "why", "mode"}}
	m["prlimit"] = optSpec{short: "p", long: []string{"pid", "output"}}
	m["choom"] = optSpec{short: "np", long: []string{"adjust", "pid"}}
	m["spawn"] = optSpec{}
	m["run0"] = optSpec{short: "uDg", long: []string{"user", "chdir", "group", "unit", "property", "description", "slice", "setenv", "nice", "machine"}}
	m["start-stop-daemon"] = optSpec{short: "xanpuUgcrdNPkmKSTvCoqRb", long: []string{"exec", "startas", "name", "pidfile", "user", "chuid", "group", "chroot", "chdir", "nicelevel", "signal", "retry", "umask", "output"}}
	m["setpriv"] = optSpec{long: []string{"reuid", "regid", "ruid", "euid", "rgid", "egid", "groups", "inh-caps", "ambient-caps",
		"bounding-set", "securebits", "selinux-label", "apparmor-profile", "landlock-access", "landlock-rule", "pdeathsig"}}
	m["proxychains"] = optSpec{short: "f"}
	m["proxychains4"] = optSpec{short: "f"}
	m["systemd-run"] = optSpec{short: "pEuM", long: []string{"property", "setenv", "unit", "on-calendar", "on-active",
		"on-boot", "description", "slice", "machine", "uid", "gid", "working-directory"}}
	return m
}

// unwrapAll peels wrappers (sudo, env, nice, timeout, xargs, ...) off the
// command, recording each layer for the configured rules.
func (c *call) unwrapAll() {
	specs := c.j.p.wrappers
	for range 16 {
		if inner, ok := c.runPackage(); ok {
			c.layers = append(c.layers, layer{argv: argTexts(c.argv)})
			c.argv = inner
			if !c.checkName() {
				c.name = ""
				return
			}
			continue
		}
		spec, ok := specs[c.name]
		if !ok {
			if c.name == "uv" || c.name == "poetry" || c.name == "pipenv" || c.name == "bundle" || c.name == "pdm" || c.name == "hatch" {
				if len(c.argv) > 2 && (c.argv[1].val == "run" || c.argv[1].val == "exec") {
					c.layers = append(c.layers, layer{argv: argTexts(c.argv)})
					c.argv = c.argv[2:]
					if !c.checkName() {
						c.name = ""
						return
					}
					continue
				}
			}
			return
		}
		inner, privileged, cont := c.unwrapOne(spec)
		c.layers = append(c.layers, layer{argv: argTexts(c.argv), privileged: privileged})
		if !cont {
			return
		}
		if len(inner) == 0 {
			c.argv = c.argv[:1]
			c.name = "" // nothing more to judge
			return
		}
		c.argv = inner
		if !c.checkName() {
			c.name = ""
			return
		}
	}
	c.deny("obfuscation", "too many nested wrappers")
	c.name = ""
}

// unwrapOne returns the wrapped command. cont is false when the wrapper
// was fully handled here (the command is then not judged further).
func (c *call) unwrapOne(spec optSpec) (inner []arg, privileged, cont bool) {
	i, opts := parseOpts(c.argv, 1, spec)
	rest := c.argv[i:]
	switch c.name {
	case "sudo", "doas", "pkexec", "chroot", "unshare", "nsenter", "systemd-run", "setpriv", "run0":
		return c.unwrapPrivileged(opts, rest)
	case "cpulimit", "prlimit", "choom", "start-stop-daemon", "chrt", "taskset", "ionice", "strace", "ltrace":
		return c.unwrapProcessTool(opts, rest)
	}
	return c.unwrapRunner(opts, rest)
}

// unwrapPrivileged unwraps the commands that run another with other
// privileges, root directory or namespaces.
func (c *call) unwrapPrivileged(opts []opt, rest []arg) (inner []arg, privileged, cont bool) {
	switch c.name {
	case "sudo", "doas", "pkexec":
		c.deny("privilege", "runs a command as another user ("+c.name+")")
		rest = c.skipAssigns(rest)
		return rest, true, true
	case "chroot", "unshare", "nsenter":
		c.deny("privilege", "changes root or namespaces ("+c.name+")")
		if c.name == "chroot" && len(rest) > 0 {
			c.scanOne(rest[0], accRead)
			rest = rest[1:]
		}
		return rest, true, true
	case "systemd-run":
		c.deny("services", "starts a system service unit (systemd-run)")
		return rest, true, true
	case "setpriv":
		for _, o := range opts {
			switch o.name {
			case "reuid", "regid", "ruid", "euid", "rgid", "egid", "groups", "init-groups", "inh-caps", "ambient-caps", "bounding-set", "securebits":
				c.deny("privilege", "runs a command with other user ids or capabilities (setpriv)")
				return rest, true, true
			}
		}
		return rest, false, true
	case "run0":
		c.deny("privilege", "runs a command as another user (run0)")
		return rest, true, true
	}
	return rest, false, true
}

// unwrapProcessTool unwraps the tools that run a command under limits or
// a tracer, unless they act on a running process instead.
func (c *call) unwrapProcessTool(opts []opt, rest []arg) (inner []arg, privileged, cont bool) {
	switch c.name {
	case "cpulimit", "prlimit", "choom":
		if _, ok := hasOpt(opts, "p", "pid", "e", "exe", "path"); ok {
			return nil, false, false // acts on a running process
		}
		return rest, false, true
	case "start-stop-daemon":
		if _, ok := hasOpt(opts, "K", "stop"); ok {
			c.deny("services", "start-stop-daemon stops a service")
			return nil, false, false
		}
		if x, ok := hasOpt(opts, "x", "exec", "a", "startas"); ok {
			return append([]arg{x}, rest...), false, true
		}
		return rest, false, true
	case "chrt":
		i, opts := parseOpts(c.argv, 1, optSpec{})
		if _, ok := hasOpt(opts, "p", "pid"); ok {
			return nil, false, false
		}
		rest = c.argv[i:]
		if len(rest) > 0 {
			rest = rest[1:]
		}
		return rest, false, true
	case "taskset":
		if _, ok := hasOpt(opts, "p", "pid"); ok {
			return nil, false, false
		}
		if len(rest) > 0 {
			rest = rest[1:]
		}
		return rest, false, true
	case "ionice":
		if _, ok := hasOpt(opts, "p"); ok {
			return nil, false, false
		}
		return rest, false, true
	case "strace", "ltrace":
		if _, ok := hasOpt(opts, "p"); ok && len(rest) == 0 {
			c.deny("secrets", "attaches to a running process ("+c.name+")")
			return nil, false, false
		}
		return rest, false, true
	}
	return rest, false, true
}

// unwrapRunner unwraps the other wrappers: env, exec, command, timeout,
// flock, xargs and the like.
func (c *call) unwrapRunner(opts []opt, rest []arg) (inner []arg, privileged, cont bool) {
	switch c.name {
	case "setarch", "faketime":
		if len(rest) > 0 {
			rest = rest[1:] // the architecture, the fake time
		}
		return rest, false, true
	case "command":
		if _, ok := hasOpt(opts, "v", "V"); ok {
			return nil, false, false // only looks the name up
		}
		return rest, false, true
	case "exec":
		if len(rest) == 0 {
			return nil, false, false
		}
		return rest, false, true
	case "env":
		if s, ok := hasOpt(opts, "S", "split-string"); ok {
			rest = append(splitWords(s), rest...)
		}
		rest = c.skipAssigns(rest)
		if len(rest) == 0 {
			if _, ok := hasOpt(opts, "i", "ignore-environment", "0"); !ok {
				c.deny("secrets", "prints the process environment")
			}
			return nil, false, false
		}
		return rest, false, true
	case "timeout":
		if len(rest) > 0 {
			rest = rest[1:]
		}
		return rest, false, true
	case "flock":
		if cmd, ok := hasOpt(opts, "c", "command"); ok {
			c.j.nested(c.owner, cmd, c.sc, "flock -c")
			return nil, false, false
		}
		if len(rest) > 0 {
			rest = rest[1:]
		}
		if len(rest) >= 2 && (rest[0].val == "-c" || rest[0].val == "--command") {
			c.j.nested(c.owner, rest[1], c.sc, "flock -c")
			return nil, false, false
		}
		return rest, false, true
	case "xargs":
		inner := c.xargsInner(opts, rest)
		c.countedXargs(opts, inner)
		for _, p := range c.in {
			if p.endless {
				c.deny("resource_exhaustion", "xargs runs a command for every line of an endless stream")
			}
			if p.secretList {
				c.secretHunt(inner)
			}
		}
		return inner, false, true
	}
	return rest, false, true
}

// skipAssigns drops NAME=value words (env, sudo), judging the dangerous ones.
func (c *call) skipAssigns(rest []arg) []arg {
	for len(rest) > 0 {
		name, val, ok := strings.Cut(rest[0].val, "=")
		if !ok || !isName(name) {
			break
		}
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
		c.envCommand(name, part(rest[0], val))
		rest = rest[1:]
	}
	return rest
}

func isName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		if !(b == '_' || (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (i > 0 && b >= '0' && b <= '9')) {
			return false
		}
	}
	return true
}

// splitWords splits a string the way env -S does, roughly: on blanks,
// honouring quotes.
func splitWords(a arg) []arg {
	var out []arg
	var cur strings.Builder
	var q byte
	has := false
	for i := 0; i < len(a.val); i++ {
		ch := a.val[i]
		switch {
		case q != 0:
			if ch == q {
				q = 0
			} else {
				cur.WriteByte(ch)
			}
		case ch == '\'' || ch == '"':
			q = ch
			has = true
		case ch == ' ' || ch == '\t' || ch == '\n':
			if cur.Len() > 0 || has {
				out = append(out, arg{val: cur.String()})
				cur.Reset()
				has = false
			}
		case ch == '\\' && i+1 < len(a.val):
			i++
			cur.WriteByte(a.val[i])
		default:
			cur.WriteByte(ch)
		}
	}
	if cur.Len() > 0 || has {
		out = append(out, arg{val: cur.String()})
	}
	return out
}

// xargsInner builds the command xargs runs, standing in for the items it
// reads: names under a listed workspace directory, or unknown text.
func (c *call) xargsInner(opts []opt, rest []arg) []arg {
	item := arg{val: unknownMark}
	for _, p := range c.in {
		if p.lister != "" {
			item = arg{val: p.lister + "/__item__"}
		}
	}
	// Items that echo or printf spell out are known.
	var items []arg
	literal := len(c.in) > 0
	for _, p := range c.in {
		literal = literal && p.literal
		for _, f := range strings.FieldsFunc(p.text, func(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == 0 }) {
			items = append(items, arg{val: f, glob: strings.ContainsAny(f, "*?[")})
		}
	}
	if literal && len(items) > 0 && !has(opts, "a", "arg-file") {
		item = items[0]
		if _, ok := hasOpt(opts, "I", "replace", "i"); !ok {
			return append(append([]arg(nil), rest...), items...)
		}
		for _, extra := range items[1:] {
			inner := append([]arg(nil), rest...)
			repl, _ := hasOpt(opts, "I", "replace", "i")
			r := repl.val
			if r == "" {
				r = "{}"
			}
			for k := range inner {
				inner[k].val = strings.ReplaceAll(inner[k].val, r, extra.val)
			}
			c.j.judgeArgv(c.owner, inner, c.sc)
		}
	}
	for _, p := range c.in {
		item.fetch = item.fetch || p.fetch
		item.decode = item.decode || p.decode
	}
	if a, ok := hasOpt(opts, "a", "arg-file"); ok {
		c.scanOne(a, accRead)
		item = arg{val: unknownMark}
	}
	inner := append([]arg(nil), rest...)
	if len(inner) == 0 {
		inner = []arg{litArg("echo")}
	}
	repl, ok := hasOpt(opts, "I", "replace", "i")
	if ok {
		r := repl.val
		if r == "" {
			r = "{}"
		}
		for k := range inner {
			if strings.Contains(inner[k].val, r) {
				inner[k].val = strings.ReplaceAll(inner[k].val, r, item.val)
				inner[k].fetch = inner[k].fetch || item.fetch
				inner[k].decode = inner[k].decode || item.decode
			}
		}
		return inner
	}
	return append(inner, item)
}
