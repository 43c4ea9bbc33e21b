package safety

import "strings"

func registerArchiveHandlers(reg func(handler, ...string)) {
	reg((*call).tar, "tar", "bsdtar")
	reg((*call).zip, "zip", "7z", "7za", "rar")
	reg((*call).unzip, "unzip")
}

// tar judges archives created from sensitive trees, extraction outside the
// workspace and the options that run commands.
func (c *call) tar() outcome {
	t := c.tarArgs(c.argv[1:])
	switch {
	case strings.ContainsAny(t.mode, "cru"):
		c.tarCreate(t)
	case strings.Contains(t.mode, "x"):
		if t.file.val != "" && t.file.val != "-" {
			c.checkArg(t.file, accRead)
		}
		c.taintUnpacked(t.file, t.dir)
		if t.dir.val != "" {
			c.unpackTarget(t.dir)
		}
	default:
		if t.file.val != "" {
			c.checkArg(t.file, accRead)
		}
	}
	return judgedArgs
}

// tarLine is what tar's arguments say.
type tarLine struct {
	mode      string // the operation letters: c, x, t, r, u and modifiers
	dir, file arg    // -C and -f
	ops       []arg  // the files to archive or extract
}

// tarArgs reads tar's arguments, judging the commands that options run.
func (c *call) tarArgs(args []arg) tarLine {
	var t tarLine
	for k := 0; k < len(args); k++ {
		v := args[k].val
		switch {
		case k == 0 && !strings.HasPrefix(v, "-") && strings.Trim(v, "cxtrudvzjJafpPkmOSwW") == "":
			t.mode = v
			if strings.Contains(v, "f") && k+1 < len(args) {
				t.file = args[k+1]
				k++
			}
		case strings.HasPrefix(v, "--checkpoint-action=") || strings.HasPrefix(v, "--to-command=") ||
			strings.HasPrefix(v, "--use-compress-program=") || strings.HasPrefix(v, "--info-script=") ||
			strings.HasPrefix(v, "--new-volume-script=") || strings.HasPrefix(v, "--rsh-command="):
			_, cmd, _ := strings.Cut(v, "=")
			cmd = strings.TrimPrefix(cmd, "exec=")
			c.j.nested(c.owner, arg{val: cmd}, c.sc, "tar")
		case v == "-I" || v == "-F" || v == "--to-command" || v == "--use-compress-program":
			if k+1 < len(args) {
				c.j.nested(c.owner, args[k+1], c.sc, "tar")
				k++
			}
		case v == "-C" || v == "--directory":
			if k+1 < len(args) {
				t.dir = args[k+1]
				k++
			}
		case strings.HasPrefix(v, "--directory="):
			t.dir = arg{val: strings.TrimPrefix(v, "--directory=")}
		case v == "-f" || v == "--file":
			if k+1 < len(args) {
				t.file = args[k+1]
				k++
			}
		case strings.HasPrefix(v, "--file="):
			t.file = arg{val: strings.TrimPrefix(v, "--file=")}
		case strings.HasPrefix(v, "--"):
			switch v {
			case "--create", "--extract", "--get", "--list", "--append":
				t.mode += map[string]string{"--create": "c", "--extract": "x", "--get": "x", "--list": "t", "--append": "r"}[v]
			}
		case strings.HasPrefix(v, "-"):
			t.mode += v[1:]
			if strings.HasSuffix(v, "f") && k+1 < len(args) {
				t.file = args[k+1]
				k++
			}
		default:
			t.ops = append(t.ops, args[k])
		}
	}
	return t
}

// tarCreate judges creating or adding to an archive: it reads the files
// archived, may delete them, and writes the archive.
func (c *call) tarCreate(t tarLine) {
	if t.file.val != "" && t.file.val != "-" {
		c.checkArg(t.file, accWrite)
	}
	remove := hasWord(c.argv, "--remove-files")
	for _, o := range t.ops {
		if t.dir.val != "" && !strings.HasPrefix(o.val, "/") {
			o = arg{val: t.dir.val + "/" + o.val}
		}
		c.scanOne(o, accReadTree)
		if remove {
			c.checkArg(o, accDelete) // archived, then deleted
		}
	}
	for _, o := range t.ops {
		if p, ok := c.j.resolve(o, c.sc); ok && !c.j.inWorkspace(p) && !isTemp(p) {
			c.ci.sensitive = true
		}
	}
}

func (c *call) zip() outcome {
	opts, ops := c.split(optSpec{short: "TtnbxiPZO", long: []string{"unzip-command", "password"}})
	if t, ok := hasOpt(opts, "TT", "unzip-command"); ok {
		c.j.nested(c.owner, t, c.sc, "zip")
	}
	for k, a := range c.argv {
		if a.val == "-TT" && k+1 < len(c.argv) {
			c.j.nested(c.owner, c.argv[k+1], c.sc, "zip")
		}
	}
	if len(ops) == 0 {
		return judgedArgs
	}
	archive := ops[0]
	ops = ops[1:]
	if c.name == "7z" || c.name == "7za" || c.name == "rar" {
		if len(ops) == 0 {
			return judgedArgs
		}
		archive, ops = ops[0], ops[1:]
		if !strings.HasPrefix(c.argv[1].val, "a") {
			c.checkArg(archive, accRead)
			out := arg{}
			for _, a := range c.argv[2:] {
				if strings.HasPrefix(a.val, "-o") {
					out = part(a, a.val[2:])
				}
			}
			c.taintUnpacked(archive, out)
			return judgedArgs
		}
	}
	c.checkArg(archive, accWrite)
	for _, o := range ops {
		c.scanOne(o, accReadTree)
		if p, ok := c.j.resolve(o, c.sc); ok && !c.j.inWorkspace(p) && !isTemp(p) {
			c.ci.sensitive = true
		}
	}
	return judgedArgs
}

func (c *call) unzip() outcome {
	opts, ops := c.split(optSpec{short: "dxP", long: []string{}})
	d, _ := hasOpt(opts, "d")
	if d.val != "" {
		c.unpackTarget(d)
	}
	if len(ops) > 0 {
		c.checkArg(ops[0], accRead)
		c.taintUnpacked(ops[0], d)
	}
	return judgedArgs
}
