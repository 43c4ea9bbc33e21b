package safety

import (
	"path"
	"regexp"
	"strings"
)

// Remote control without a reverse shell: terminal-sharing services
// (tmate, upterm, sshx), relays that reach through NAT (gsocket), web
// terminals (wetty; ttyd and gotty are with the servers), remote desktops and generated remote-access
// payloads all hand this machine to someone elsewhere. So do helpers that
// open a root shell (machinectl shell) and container runtimes driven
// below docker (ctr, crictl), which take the same host-handing options.

func registerControlHandlers(reg func(handler, ...string)) {
	reg((*call).remoteControl, "tmate", "upterm", "sshx", "tty-share", "teleconsole", "gs-netcat", "gs-sftp", "gs-mount",
		"gsocket", "wetty", "shellinaboxd", "x11vnc", "x0vncserver", "vncserver", "tigervncserver",
		"tightvncserver", "rustdesk", "anydesk", "teamviewer", "meshagent", "screego")
	reg((*call).payload, "msfvenom", "msfconsole", "msfpc", "msf-pattern_create", "sliver-client", "sliver-server", "pwncat", "pwncat-cs", "villain", "hoaxshell")
	reg((*call).machinectl, "machinectl")
	reg((*call).ctr, "ctr", "crictl")
	reg((*call).capsh, "capsh")
	reg((*call).detacher, "dtach", "abduco")
}

// capsh runs bash with the capabilities and user ids it is given.
func (c *call) capsh() outcome {
	for k, a := range c.argv[1:] {
		name, _, _ := strings.Cut(a.val, "=")
		switch name {
		case "--user", "--uid", "--gid", "--groups", "--caps", "--addamb", "--inh", "--secbits", "--chroot":
			c.deny("privilege", "capsh changes user ids or capabilities")
		case "--":
			c.j.judgeArgv(c.owner, append([]arg{litArg("bash")}, c.argv[k+2:]...), c.sc)
			return genericScan
		}
	}
	return genericScan
}

// detacher judges the command dtach or abduco starts in a detached
// session: "dtach -n SOCKET [-e C] [-r M] CMD", "abduco -c NAME CMD".
func (c *call) detacher() outcome {
	args := c.argv[1:]
	for k := 0; k < len(args); k++ {
		switch v := args[k].val; {
		case v == "-a" || v == "-A" || v == "-c" || v == "-n" || v == "-N":
			k++ // the socket or session name
		case v == "-e" || v == "-r":
			k++
		case strings.HasPrefix(v, "-"):
		default:
			c.j.judgeArgv(c.owner, args[k:], c.sc)
			return genericScan
		}
	}
	return genericScan
}

// onlyAsksForHelp reports whether a command's arguments only ask for its
// help or version.
func (c *call) onlyAsksForHelp() bool {
	if len(c.argv) != 2 {
		return false
	}
	switch c.argv[1].val {
	case "-h", "--help", "help", "-V", "--version", "version":
		return true
	}
	return false
}

func (c *call) remoteControl() outcome {
	if c.onlyAsksForHelp() {
		return genericScan
	}
	c.deny("reverse_shell", c.name+" hands control of this machine to someone on the network")
	return genericScan
}

func (c *call) payload() outcome {
	if c.onlyAsksForHelp() {
		return genericScan
	}
	c.deny("reverse_shell", c.name+" builds or drives remote-access payloads")
	return genericScan
}

// machinectl judges the verbs that open a shell or run a command in a
// machine, the host included, as another user.
func (c *call) machinectl() outcome {
	_, ops := c.split(optSpec{short: "pMHEo", long: []string{"property", "machine", "host", "setenv", "uid", "output", "signal", "kill-whom"}})
	if len(ops) == 0 {
		return genericScan
	}
	switch ops[0].val {
	case "shell", "login":
		c.deny("privilege", "machinectl "+ops[0].val+" opens a shell as another user")
	case "poweroff", "reboot", "terminate", "kill", "stop", "remove", "clean":
		c.ask("containers", "machinectl "+ops[0].val+" stops or removes a machine")
	case "bind", "copy-to", "import-tar", "import-raw", "import-fs", "pull-tar", "pull-raw", "start", "enable", "disable":
		c.ask("containers", "machinectl "+ops[0].val+" changes a machine")
	}
	return genericScan
}

// ctr judges containerd's and CRI's clients like docker: starting a
// container is asked about, the options that hand it the host are refused.
func (c *call) ctr() outcome {
	_, ops := c.split(optSpec{short: "na", long: []string{"namespace", "address", "timeout", "connect-timeout", "runtime-endpoint", "image-endpoint", "config"}})
	if len(ops) == 0 {
		return judgedArgs
	}
	verb := ops[0].val
	sub := ""
	if len(ops) > 1 {
		sub = ops[1].val
	}
	var rest []arg
	for k, a := range c.argv {
		if a.val == verb && k+1 <= len(c.argv) {
			rest = c.argv[k+1:]
			break
		}
	}
	switch {
	case verb == "run", verb == "exec", verb == "create",
		(verb == "container" || verb == "containers" || verb == "c") && sub == "create",
		(verb == "task" || verb == "tasks" || verb == "t") && (sub == "exec" || sub == "start"):
		c.dockerRunFlags(rest)
		c.ask("containers", c.name+" starts a container")
	case verb == "ps", verb == "images", verb == "version", verb == "info", verb == "inspect", verb == "inspecti", verb == "logs", verb == "stats",
		sub == "ls" || sub == "list" || sub == "info" || sub == "check":
	default:
		c.ask("containers", c.name+" "+strings.TrimSpace(verb+" "+sub)+" changes containers or images")
	}
	return judgedArgs
}

// runsFound judges find -exec {} ...: each file found is run as a program.
// Setuid programs run that way are a privilege escalation probe; programs
// found outside the workspace are of unknown origin.
func (c *call) runsFound(expr []arg, outside bool) {
	for k, e := range expr {
		if e.val == "-perm" && k+1 < len(expr) {
			m := expr[k+1].val
			if strings.Contains(m, "4000") || strings.Contains(m, "6000") || strings.Contains(m, "2000") || strings.Contains(m, "u+s") || strings.Contains(m, "g+s") || strings.Contains(m, "u=s") {
				c.deny("privilege", "runs the setuid programs a search finds")
				return
			}
		}
	}
	if outside {
		c.deny("obfuscation", "runs the programs a search finds outside the workspace")
	}
}

// scriptName matches the file name of a script: what pkill -f or killall
// is given to stop one program of the user's rather than every process of
// an interpreter or a service.
var scriptName = regexp.MustCompile(`^(?:[\w-]+/)*[\w-]+\.(?:py|sh|bash|js|mjs|cjs|ts|rb|pl|php|lua|R|jl)$`)

// stopsOwnScript reports whether pkill or killall only names scripts by
// their file names, with no selection by user, group, session or parent.
func (c *call) stopsOwnScript() bool {
	if c.name != "pkill" && c.name != "killall" {
		return false
	}
	named := false
	for _, a := range c.argv[1:] {
		v := a.val
		switch {
		case !a.known():
			return false
		case v == "-f" || v == "--full" || v == "-x" || v == "--exact" || v == "-e" || v == "--echo" || v == "-c" || v == "--count":
		case strings.HasPrefix(v, "-") && isSignalOpt(v[1:]):
		case strings.HasPrefix(v, "-"):
			return false
		case namesScript(v):
			named = true
		default:
			return false
		}
	}
	return named
}

func isSignalOpt(s string) bool {
	switch strings.TrimPrefix(strings.ToUpper(s), "SIG") {
	case "TERM", "INT", "HUP", "KILL", "QUIT", "USR1", "USR2", "15", "2", "1", "9", "3", "10", "12":
		return true
	}
	return false
}

// namesScript reports whether a pkill pattern is a script's file name,
// alone or after the interpreter that runs it ("node server.js").
func namesScript(v string) bool {
	f := strings.Fields(v)
	switch {
	case len(f) == 1:
		return scriptName.MatchString(f[0])
	case len(f) == 2:
		return (isInterpreter(f[0]) || isShellName(f[0])) && scriptName.MatchString(f[1])
	}
	return false
}

// loginHere refuses ssh into this very machine as another user: with a
// key or password at hand that is sudo by another name.
func (c *call) loginHere(dest arg, opts []opt) {
	user, host, ok := strings.Cut(strings.TrimPrefix(dest.val, "ssh://"), "@")
	if !ok {
		user, host = "", user
	}
	if l, ok := hasOpt(opts, "l"); ok {
		user = l.val
	}
	host, _, _ = strings.Cut(host, ":")
	switch strings.Trim(host, "[]") {
	case "localhost", "127.0.0.1", "::1", "0.0.0.0", "localhost.localdomain", "127.1":
	default:
		return
	}
	self := ""
	if c.j.p.home != "" {
		self = path.Base(c.j.p.home)
	}
	if user != "" && user != self {
		c.deny("privilege", c.name+" logs into this machine as "+user)
	}
}
