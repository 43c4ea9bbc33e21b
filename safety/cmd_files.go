package safety

import (
	"strconv"
	"strings"
)

// hugeSize is the size from which creating a file counts as filling the disk.
const hugeSize = 10 << 30

func registerFileHandlers(reg func(handler, ...string)) {
	reg((*call).rm, "rm", "unlink", "shred", "srm", "wipe")
	reg((*call).rmdir, "rmdir")
	reg((*call).cp, "cp")
	reg((*call).mv, "mv")
	reg((*call).ln, "ln")
	reg((*call).install, "install")
	reg((*call).tee, "tee")
	reg((*call).touch, "touch")
	reg((*call).mkdir, "mkdir")
	reg((*call).truncate, "truncate")
	reg((*call).fallocate, "fallocate")
	reg((*call).yes, "yes")
	reg((*call).catLike, "cat", "head", "tail", "tac", "pv")
	reg((*call).editor, "nano", "pico", "joe", "mcedit", "micro", "kak", "hx", "mg", "jed")
	reg((*call).stress, "stress", "stress-ng")
}

func (c *call) rm() outcome {
	spec := optSpec{}
	if c.name != "rm" && c.name != "unlink" {
		spec = optSpec{short: "ns", long: []string{"iterations", "random-source", "size"}}
	}
	opts, ops := c.split(spec)
	if has(opts, "no-preserve-root") {
		c.deny("destroy_data", "rm --no-preserve-root")
	}
	if c.name == "shred" || c.name == "srm" || c.name == "wipe" {
		for _, o := range ops {
			if p, ok := c.j.resolve(o, c.sc); ok && isRawDevice(p) {
				c.deny("raw_device", "overwrites a raw device: "+p)
			}
		}
	}
	for _, o := range ops {
		c.checkArg(o, accDelete)
	}
	return judgedArgs
}

func (c *call) rmdir() outcome {
	_, ops := c.split(optSpec{})
	for _, o := range ops {
		if p, ok := c.j.resolve(o, c.sc); ok && c.j.isProtected(p, true) {
			c.deny("self_tamper", "removes nanobot's own directory: "+p)
		}
	}
	return judgedArgs
}

func (c *call) cp() outcome {
	opts, ops := c.split(optSpec{short: "tS", long: []string{"target-directory", "suffix", "backup", "reflink", "sparse", "preserve", "no-preserve"}})
	tree := has(opts, "r", "R", "a", "recursive", "archive")
	srcAcc := accRead
	if tree {
		srcAcc = accReadTree
	}
	dest, ops := destination(opts, ops, 1)
	for _, o := range ops {
		c.scanOne(o, srcAcc)
	}
	if dest.val != "" {
		c.checkArg(dest, accWrite)
	}
	return judgedArgs
}

func (c *call) mv() outcome {
	opts, ops := c.split(optSpec{short: "tS", long: []string{"target-directory", "suffix", "backup"}})
	dest, ops := destination(opts, ops, 2)
	for _, o := range ops {
		c.checkArg(o, accDelete)
	}
	if dest.val != "" {
		c.checkArg(dest, accWrite)
	}
	return judgedArgs
}

func (c *call) ln() outcome {
	opts, ops := c.split(optSpec{short: "tS", long: []string{"target-directory", "suffix", "backup"}})
	if len(ops) == 0 {
		return judgedArgs
	}
	target := ops[0]
	var name arg
	if t, ok := hasOpt(opts, "t", "target-directory"); ok {
		name = arg{val: t.val + "/" + baseName(target.val)}
	} else if len(ops) > 1 {
		name = ops[len(ops)-1]
	} else {
		name = arg{val: baseName(target.val)}
	}
	acc := accCreate
	if has(opts, "f", "force") {
		acc = accWrite
	}
	c.scanOne(target, accRead)
	c.checkArg(name, acc)
	tp, ok1 := c.j.resolve(target, c.sc)
	if !has(opts, "s", "symbolic") && ok1 {
		// A hard link to a file outside the workspace lets later edits reach it.
		if !c.j.inWorkspace(tp) && !isTemp(tp) {
			if cat, reason := c.j.classify(tp, accWrite); cat != "" {
				c.deny(cat, "hard link to "+reason)
			}
		}
	}
	np, ok2 := c.j.resolve(name, c.sc)
	if ok1 && ok2 {
		if !has(opts, "s", "symbolic") || strings.HasPrefix(target.val, "/") || strings.HasPrefix(target.val, "~") {
			c.sc.links[np] = tp
		} else if p, ok := c.j.resolve(arg{val: dirOf(np) + "/" + target.val}, c.sc); ok {
			c.sc.links[np] = p
		}
	} else if ok2 && !ok1 {
		c.sc.links[np] = "/" + unknownMark
	}
	return judgedArgs
}

func dirOf(p string) string {
	if i := strings.LastIndexByte(p, '/'); i > 0 {
		return p[:i]
	}
	return "/"
}

func (c *call) install() outcome {
	opts, ops := c.split(optSpec{short: "mogtSTZ", long: []string{"mode", "owner", "group", "target-directory", "suffix"}})
	if m, ok := hasOpt(opts, "m", "mode"); ok && setuidMode(m.val) {
		c.deny("privilege", "installs a setuid or setgid program")
	}
	if has(opts, "d", "directory") {
		for _, o := range ops {
			c.checkArg(o, accCreate)
		}
		return judgedArgs
	}
	dest, ops := destination(opts, ops, 2)
	for _, o := range ops {
		c.scanOne(o, accRead)
	}
	if dest.val != "" {
		c.checkArg(dest, accWrite)
	}
	return judgedArgs
}

// parseSize reads sizes such as 512, 4k, 1M, 100G, 2TiB.
func parseSize(s string) int64 {
	s = strings.TrimSpace(strings.TrimPrefix(s, "+"))
	if s == "" {
		return 0
	}
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	f, err := strconv.ParseFloat(s[:i], 64)
	if err != nil {
		return 0
	}
	mult := float64(1)
	switch strings.ToUpper(strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(s[i:], "iB"), "B"), "b")) {
	case "K":
		mult = 1 << 10
	case "M":
		mult = 1 << 20
	case "G":
		mult = 1 << 30
	case "T":
		mult = 1 << 40
	case "P", "E", "Z", "Y":
		mult = 1 << 50
	}
	v := f * mult
	if v > 1<<62 {
		return 1 << 62
	}
	return int64(v)
}

func (c *call) tee() outcome {
	opts, ops := c.split(optSpec{long: []string{"output-error"}})
	acc := accWrite
	if has(opts, "a", "append") {
		acc = accCreate
	}
	for _, o := range ops {
		if p, ok := c.j.resolve(o, c.sc); ok && acc == accCreate && c.keyscanAppend(p) {
			continue
		}
		c.checkArg(o, acc)
	}
	return judgedArgs
}

// keyscanAppend reports whether appending to p is ssh-keyscan adding the
// keys it fetched to known_hosts, the usual way to trust a server once.
func (c *call) keyscanAppend(p string) bool {
	if c.j.p.home == "" || p != c.j.p.home+"/.ssh/known_hosts" {
		return false
	}
	if c.name == "ssh-keyscan" {
		return true
	}
	for _, in := range c.in {
		if in.name != "ssh-keyscan" {
			return false
		}
	}
	return len(c.in) > 0
}

func (c *call) touch() outcome {
	opts, ops := c.split(optSpec{short: "drt", long: []string{"date", "reference", "time"}})
	stamp := has(opts, "d", "r", "t", "date", "reference")
	for _, o := range ops {
		if p, ok := c.j.resolve(o, c.sc); ok && stamp && !c.j.inWorkspace(p) && !isTemp(p) && !c.j.isProtected(p, false) {
			c.deny("anti_forensics", "forges file timestamps outside the workspace: "+p)
			continue
		}
		c.checkArg(o, accCreate)
	}
	return judgedArgs
}

func (c *call) mkdir() outcome {
	_, ops := c.split(optSpec{short: "mZ", long: []string{"mode", "context"}})
	for _, o := range ops {
		c.checkArg(o, accCreate)
	}
	return judgedArgs
}

func (c *call) truncate() outcome {
	opts, ops := c.split(optSpec{short: "sro", long: []string{"size", "reference", "io-blocks"}})
	if s, ok := hasOpt(opts, "s", "size"); ok && parseSize(s.val) >= hugeSize {
		c.deny("resource_exhaustion", "creates a huge file")
	}
	for _, o := range ops {
		c.checkArg(o, accWrite)
	}
	return judgedArgs
}

func (c *call) fallocate() outcome {
	opts, ops := c.split(optSpec{short: "lo", long: []string{"length", "offset"}})
	if s, ok := hasOpt(opts, "l", "length"); ok && parseSize(s.val) >= hugeSize {
		c.deny("resource_exhaustion", "allocates a huge file")
	}
	for _, o := range ops {
		c.checkArg(o, accWrite)
	}
	return judgedArgs
}

func (c *call) yes() outcome {
	if c.stdout != "" && !anyUnder(c.stdout, benignDevices) {
		c.deny("resource_exhaustion", "fills a file with endless output")
	}
	return genericScan
}

func (c *call) catLike() outcome {
	if c.stdout == "" || anyUnder(c.stdout, benignDevices) {
		return genericScan
	}
	limited := false
	for _, a := range c.argv[1:] {
		if c.name != "cat" && c.name != "tac" && (strings.HasPrefix(a.val, "-c") || strings.HasPrefix(a.val, "-n") || strings.HasPrefix(a.val, "--bytes") || strings.HasPrefix(a.val, "--lines") || strings.HasPrefix(a.val, "-") && isNumber(a.val[1:])) {
			limited = true
			if strings.HasPrefix(a.val, "-c") || strings.HasPrefix(a.val, "--bytes") {
				v := strings.TrimLeft(strings.TrimPrefix(strings.TrimPrefix(a.val, "--bytes"), "-c"), "=")
				if v == "" {
					for k, x := range c.argv {
						if x.val == a.val && k+1 < len(c.argv) {
							v = c.argv[k+1].val
						}
					}
				}
				if parseSize(v) >= hugeSize {
					limited = false
				}
			}
		}
	}
	if limited {
		return genericScan
	}
	for _, a := range c.argv[1:] {
		switch a.val {
		case "/dev/zero", "/dev/urandom", "/dev/random":
			c.deny("resource_exhaustion", "copies an endless stream into a file")
			return genericScan
		}
	}
	return genericScan
}

func (c *call) editor() outcome {
	_, ops := c.split(optSpec{short: "cSutTwWiU", long: []string{"cmd"}})
	for _, o := range ops {
		if strings.HasPrefix(o.val, "+") {
			continue
		}
		c.checkArg(o, accCreate)
	}
	return judgedArgs
}

func (c *call) stress() outcome {
	c.deny("resource_exhaustion", c.name+" loads the machine on purpose")
	return genericScan
}

// destination splits the operands of cp, mv and install: the -t directory,
// or else the last operand when there are at least min of them.
func destination(opts []opt, ops []arg, min int) (arg, []arg) {
	if t, ok := hasOpt(opts, "t", "target-directory"); ok {
		return t, ops
	}
	if len(ops) >= min {
		return ops[len(ops)-1], ops[:len(ops)-1]
	}
	return arg{}, ops
}
