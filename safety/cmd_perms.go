package safety

import (
	"strings"

	"github.com/nanobot-go/nanobot/internal/lazyre"
)

func registerPermHandlers(reg func(handler, ...string)) {
	reg((*call).chmod, "chmod")
	reg((*call).chown, "chown", "chgrp")
	reg((*call).setfacl, "setfacl", "chattr")
}

var octalMode = lazyre.New(`^[0-7]{3,4}$`)

func setuidMode(m string) bool {
	if octalMode.MatchString(m) {
		if len(m) == 4 {
			d := m[0] - '0'
			return d&6 != 0
		}
		return false
	}
	for _, clause := range strings.Split(m, ",") {
		if i := strings.IndexAny(clause, "+="); i >= 0 && strings.ContainsAny(clause[i:], "s") {
			return true
		}
	}
	return false
}

func worldWritable(m string) bool {
	if octalMode.MatchString(m) {
		last := m[len(m)-1] - '0'
		return last&2 != 0
	}
	for _, clause := range strings.Split(m, ",") {
		i := strings.IndexAny(clause, "+=")
		if i < 0 {
			continue
		}
		who := clause[:i]
		if (who == "" || strings.ContainsAny(who, "ao")) && strings.Contains(clause[i:], "w") {
			return true
		}
	}
	return false
}

func (c *call) chmod() outcome {
	args := c.argv[1:]
	recursive := false
	var ops []arg
	ref := false
	for k, a := range args {
		v := a.val
		switch {
		case v == "--":
			ops = append(ops, args[k+1:]...)
		case v == "-R" || v == "--recursive" || (strings.HasPrefix(v, "-") && !strings.HasPrefix(v, "--") && strings.Contains(v, "R")):
			recursive = true
			continue
		case strings.HasPrefix(v, "--reference"):
			ref = true
			continue
		case strings.HasPrefix(v, "-") && !strings.ContainsAny(v[1:], "rwxXst0123456789"):
			continue
		default:
			ops = append(ops, a)
			continue
		}
		break
	}
	if len(ops) == 0 {
		return judgedArgs
	}
	mode := ""
	if !ref {
		mode = ops[0].val
		ops = ops[1:]
	}
	if setuidMode(mode) {
		c.deny("privilege", "sets the setuid or setgid bit")
	}
	for _, o := range ops {
		if c.checkArg(o, accPerm) != "" {
			continue
		}
		if recursive && worldWritable(mode) {
			c.deny("permissions", "makes a tree world-writable: "+o.text())
		}
		if recursive {
			if p, ok := c.j.resolve(o, c.sc); ok && p == c.j.p.workspace && (mode == "000" || mode == "0") {
				c.deny("permissions", "removes all permissions from the workspace")
			}
		}
	}
	return judgedArgs
}

func (c *call) chown() outcome {
	opts, ops := c.split(optSpec{long: []string{"from"}})
	if len(ops) == 0 {
		return judgedArgs
	}
	if !has(opts, "reference") {
		ops = ops[1:]
	}
	for _, o := range ops {
		c.checkArg(o, accPerm)
	}
	return judgedArgs
}

func (c *call) setfacl() outcome {
	var ops []arg
	if c.name == "chattr" {
		for _, a := range c.argv[1:] {
			if strings.HasPrefix(a.val, "+") || strings.HasPrefix(a.val, "-") || strings.HasPrefix(a.val, "=") {
				continue
			}
			ops = append(ops, a)
		}
	} else {
		_, ops = c.split(optSpec{short: "mMxX", long: []string{"modify", "modify-file", "remove", "remove-file", "set", "set-file"}})
	}
	for _, o := range ops {
		c.checkArg(o, accPerm)
	}
	return judgedArgs
}
