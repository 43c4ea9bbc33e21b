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

// unwrap turns the words of a simple command into an invocation: the
// command name, and the wrappers (sudo, env, nice, timeout, xargs, ...)
// peeled off it, outermost first, each saying what it is and what it
// does to the command. in describes what feeds the command's standard
// input (xargs reads its items there). It judges nothing: layerRules does,
// afterwards.
func (j *judge) unwrap(argv []arg, in []*callInfo) invocation {
	inv := invocation{argv: argv}
	if len(argv) == 0 || !inv.enter(argv) {
		return inv
	}
	specs := j.p.wrappers
	var pkg *pkgRun // a package runner examined, for the next layer
	for range 16 {
		pr, inner, ok := runPackage(inv.name, inv.argv)
		if pr != nil {
			pkg = pr
		}
		if ok {
			inv.layers = append(inv.layers, layer{argv: argTexts(inv.argv), wrapper: inv.name, pkg: pkg})
			if !inv.enter(inner) {
				return inv
			}
			pkg = nil
			continue
		}
		spec, ok := specs[inv.name]
		if !ok {
			if isProjectRunner(inv.argv) {
				inv.layers = append(inv.layers, layer{argv: argTexts(inv.argv), wrapper: inv.name, pkg: pkg})
				if !inv.enter(inv.argv[2:]) {
					return inv
				}
				pkg = nil
				continue
			}
			inv.pkg = pkg
			return inv
		}
		l := inv.unwrapOne(spec, in)
		l.pkg = pkg
		pkg = nil
		inv.layers = append(inv.layers, l)
		if l.stopped {
			return inv
		}
		if len(l.inner) == 0 {
			inv.argv = inv.argv[:1]
			inv.name = "" // nothing more to judge
			return inv
		}
		if !inv.enter(l.inner) {
			return inv
		}
	}
	inv.tooDeep = true
	inv.name = ""
	return inv
}

// isProjectRunner reports whether argv runs a command in a project's
// environment (uv run, poetry run, bundle exec ...).
func isProjectRunner(argv []arg) bool {
	switch baseName(argv[0].val) {
	case "uv", "poetry", "pipenv", "bundle", "pdm", "hatch":
		return len(argv) > 2 && (argv[1].val == "run" || argv[1].val == "exec")
	}
	return false
}

// enter makes argv the command of the invocation. It reports false, with
// no name left to judge, when argv[0] cannot be read as a command name.
func (inv *invocation) enter(argv []arg) bool {
	inv.argv = argv
	inv.fault = nameFaultOf(argv[0])
	if inv.fault != nameOK {
		inv.name = ""
		return false
	}
	inv.name = baseName(argv[0].val)
	return true
}

// nameFaultOf says why a word cannot be read as a command name.
func nameFaultOf(a arg) nameFault {
	switch {
	case !a.known() && a.fetch:
		return nameFetched
	case !a.known():
		return nameRunTime
	case a.glob:
		return nameGlob
	case a.val == "":
		return nameEmpty
	case strings.ContainsAny(baseName(a.val), " \t\n;|&<>"):
		return nameSyntax
	}
	return nameOK
}

// unwrapOne reads the wrapper the invocation is at: its options, operands
// and the command it runs.
func (inv *invocation) unwrapOne(spec optSpec, in []*callInfo) layer {
	i, opts := parseOpts(inv.argv, 1, spec)
	l := layer{argv: argTexts(inv.argv), wrapper: inv.name, opts: opts, operands: inv.argv[i:]}
	switch inv.name {
	case "sudo", "doas", "pkexec", "chroot", "unshare", "nsenter", "systemd-run", "setpriv", "run0":
		l.unwrapPrivileged()
	case "cpulimit", "prlimit", "choom", "start-stop-daemon", "chrt", "taskset", "ionice", "strace", "ltrace":
		l.unwrapProcessTool(inv.argv)
	default:
		l.unwrapRunner(in)
	}
	return l
}

// unwrapPrivileged reads the commands that run another with other
// privileges, root directory or namespaces.
func (l *layer) unwrapPrivileged() {
	rest := l.operands
	l.privileged = true
	switch l.wrapper {
	case "sudo", "doas", "pkexec":
		l.assigns, rest = skipAssigns(rest)
	case "chroot":
		if len(rest) > 0 {
			l.root = &rest[0]
			rest = rest[1:]
		}
	case "setpriv":
		l.privileged = false
		for _, o := range l.opts {
			switch o.name {
			case "reuid", "regid", "ruid", "euid", "rgid", "egid", "groups", "init-groups", "inh-caps", "ambient-caps", "bounding-set", "securebits":
				l.privileged = true
			}
		}
	}
	l.inner = rest
}

// unwrapProcessTool reads the tools that run a command under limits or a
// tracer; it stops when they act on a running process instead.
func (l *layer) unwrapProcessTool(argv []arg) {
	rest := l.operands
	switch l.wrapper {
	case "cpulimit", "prlimit", "choom":
		_, l.stopped = hasOpt(l.opts, "p", "pid", "e", "exe", "path")
	case "start-stop-daemon":
		if _, ok := hasOpt(l.opts, "K", "stop"); ok {
			l.stopped = true
		} else if x, ok := hasOpt(l.opts, "x", "exec", "a", "startas"); ok {
			rest = append([]arg{x}, rest...)
		}
	case "chrt":
		i, opts := parseOpts(argv, 1, optSpec{})
		_, l.stopped = hasOpt(opts, "p", "pid")
		rest = argv[i:]
		if len(rest) > 0 {
			rest = rest[1:]
		}
	case "taskset":
		_, l.stopped = hasOpt(l.opts, "p", "pid")
		if len(rest) > 0 {
			rest = rest[1:]
		}
	case "ionice":
		_, l.stopped = hasOpt(l.opts, "p")
	case "strace", "ltrace":
		_, ok := hasOpt(l.opts, "p")
		l.stopped = ok && len(rest) == 0 // attaches to a running process
	}
	if !l.stopped {
		l.inner = rest
	}
}

// unwrapRunner reads the other wrappers: env, exec, command, timeout,
// flock, xargs and the like.
func (l *layer) unwrapRunner(in []*callInfo) {
	rest := l.operands
	switch l.wrapper {
	case "setarch", "faketime", "timeout":
		if len(rest) > 0 {
			rest = rest[1:] // the architecture, the fake time, the duration
		}
	case "command":
		_, l.stopped = hasOpt(l.opts, "v", "V") // only looks the name up
	case "exec":
		l.stopped = len(rest) == 0
	case "env":
		if s, ok := hasOpt(l.opts, "S", "split-string"); ok {
			rest = append(splitWords(s), rest...)
		}
		l.assigns, rest = skipAssigns(rest)
		l.stopped = len(rest) == 0 // prints the environment
	case "flock":
		if cmd, ok := hasOpt(l.opts, "c", "command"); ok {
			l.nested = &cmd
			break
		}
		if len(rest) > 0 {
			rest = rest[1:]
		}
		if len(rest) >= 2 && (rest[0].val == "-c" || rest[0].val == "--command") {
			l.nested = &rest[1]
		}
	case "xargs":
		rest, l.extras = xargsInner(l.opts, rest, in)
	}
	l.stopped = l.stopped || l.nested != nil
	if !l.stopped {
		l.inner = rest
	}
}

// skipAssigns splits the NAME=value words (env, sudo) off the front of
// rest.
func skipAssigns(rest []arg) (assigns, after []arg) {
	for len(rest) > 0 {
		name, _, ok := strings.Cut(rest[0].val, "=")
		if !ok || !isName(name) {
			break
		}
		assigns = append(assigns, rest[0])
		rest = rest[1:]
	}
	return assigns, rest
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
// reads: names under a listed workspace directory, or unknown text. When
// echo or printf spell the items out and -I places each in the command,
// extras are the commands run for the items after the first.
func xargsInner(opts []opt, rest []arg, in []*callInfo) (inner []arg, extras [][]arg) {
	item := arg{val: unknownMark}
	for _, p := range in {
		if p.lister != "" {
			item = arg{val: p.lister + "/__item__"}
		}
	}
	// Items that echo or printf spell out are known.
	var items []arg
	literal := len(in) > 0
	for _, p := range in {
		literal = literal && p.literal
		for _, f := range strings.FieldsFunc(p.text, func(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == 0 }) {
			items = append(items, arg{val: f, glob: strings.ContainsAny(f, "*?[")})
		}
	}
	if literal && len(items) > 0 && !has(opts, "a", "arg-file") {
		item = items[0]
		if _, ok := hasOpt(opts, "I", "replace", "i"); !ok {
			return append(append([]arg(nil), rest...), items...), nil
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
			extras = append(extras, inner)
		}
	}
	for _, p := range in {
		item.fetch = item.fetch || p.fetch
		item.decode = item.decode || p.decode
	}
	if _, ok := hasOpt(opts, "a", "arg-file"); ok {
		item = arg{val: unknownMark}
	}
	inner = append([]arg(nil), rest...)
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
		return inner, extras
	}
	return append(inner, item), extras
}
