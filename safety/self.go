package safety

import "strings"

// selfCheck refuses stopping or changing the running bot: its processes,
// its service unit and its container, named by the bot's own names. Files
// are judged by their paths elsewhere; a name inside a path (as in
// ~/.nanobot/workspace) says nothing about what a command does.
func (c *call) selfCheck() {
	self := func(v string) bool {
		for _, n := range c.j.p.selfNames {
			if containsWord(v, n) {
				return true
			}
		}
		return false
	}
	ops := func() []string {
		var out []string
		for _, a := range c.argv[1:] {
			if !strings.HasPrefix(a.val, "-") {
				out = append(out, a.val)
			}
		}
		return out
	}
	anySelf := func(ws []string) bool {
		for _, w := range ws {
			if self(w) {
				return true
			}
		}
		return false
	}
	stop := func(what string) { c.deny("self_tamper", what+" nanobot itself") }
	switch c.name {
	case "pkill", "killall", "skill", "slay", "killall5":
		if anySelf(argTexts(c.argv[1:])) {
			stop("stops")
		}
	case "kill", "renice", "prlimit", "cpulimit", "choom", "taskset", "chrt", "ionice", "cgclassify", "gcore", "gdb",
		"strace", "ltrace", "perf", "criu", "reptyr":
		// Every command that acts on a process by its id: $(pgrep nanobot)
		// among its arguments aims it at the bot.
		for _, a := range c.argv[1:] {
			if a.self && c.name == "kill" {
				stop("kills")
				return
			} else if a.self {
				stop("acts on the process of")
				return
			}
		}
		if c.name != "kill" {
			return
		}
		for _, p := range c.in {
			if p.selfPID {
				stop("kills")
				return
			}
		}
	case "pgrep", "pidof":
		c.ci.selfPID = anySelf(ops())
	case "systemctl", "service", "rc-service", "sv", "supervisorctl", "pm2", "launchctl", "initctl", "s6-svc", "runit":
		words := ops()
		if len(words) > 0 && anySelf(words) && !readOnlyVerb(words) {
			stop("stops or changes the service unit of")
		}
	case "docker", "podman", "nerdctl", "docker-compose", "podman-compose":
		words := ops()
		if len(words) > 1 && anySelf(words[1:]) && !readOnlyVerb(words) {
			stop("stops or changes the container of")
		}
	}
}

// readOnlyVerb reports whether the words of a service or container command
// only look.
func readOnlyVerb(words []string) bool {
	for _, w := range words {
		switch w {
		case "status", "show", "cat", "is-active", "is-enabled", "is-failed", "list-units", "list-dependencies",
			"logs", "inspect", "ps", "top", "stats", "port", "list", "ls", "info", "print", "describe", "help", "jlist", "monit", "events", "diff", "history":
			return true
		}
	}
	return false
}

func containsWord(text, w string) bool {
	for i := 0; ; {
		k := strings.Index(text[i:], w)
		if k < 0 {
			return false
		}
		k += i
		before := k == 0 || !isWordByte(text[k-1])
		after := k+len(w) >= len(text) || !isWordByte(text[k+len(w)])
		if before && after {
			return true
		}
		i = k + 1
	}
}

func isWordByte(b byte) bool {
	return b == '_' || (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9')
}
