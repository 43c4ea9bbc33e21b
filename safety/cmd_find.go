package safety

import "strings"

// find judges -delete, -exec and friends.
func (c *call) find() outcome {
	roots, expr := findRoots(c.argv[1:])
	filtered, hunt := findFilters(expr)
	outside := false
	for _, r := range roots {
		outside = outside || c.outsideWorkspace(r)
	}
	hunt = hunt && outside
	if hunt {
		c.ci.secretList = true
	}
	var items []arg
	for _, r := range roots {
		c.scanOne(r, accRead)
		if p, ok := c.j.resolve(r, c.sc); ok && c.j.inWorkspace(p) {
			c.ci.lister = p
		}
		if filtered {
			items = append(items, arg{val: strings.TrimSuffix(r.val, "/") + "/__found__"})
		} else {
			items = append(items, r)
		}
	}
	for k := 0; k < len(expr); k++ {
		switch expr[k].val {
		case "-delete":
			for _, it := range items {
				c.checkArg(it, accDelete)
			}
		case "-exec", "-execdir", "-ok", "-okdir":
			end := k + 1
			for end < len(expr) && expr[end].val != ";" && expr[end].val != "+" {
				end++
			}
			c.findExec(expr, expr[k+1:min(end, len(expr))], items, hunt, outside)
			k = end
		case "-fprint", "-fprint0", "-fprintf", "-fls":
			if k+1 < len(expr) {
				c.checkArg(expr[k+1], accWrite)
			}
		}
	}
	return judgedArgs
}

// findRoots splits find's arguments after its leading options into the
// starting points (the current directory when none is given) and the
// expression.
func findRoots(args []arg) (roots, expr []arg) {
	i := 0
	for i < len(args) && (args[i].val == "-H" || args[i].val == "-L" || args[i].val == "-P" || args[i].val == "-D" || args[i].val == "-O" || strings.HasPrefix(args[i].val, "-O")) {
		if args[i].val == "-D" {
			i++
		}
		i++
	}
	for i < len(args) {
		v := args[i].val
		if strings.HasPrefix(v, "-") || v == "(" || v == "!" || v == "," || v == "\\(" {
			break
		}
		roots = append(roots, args[i])
		i++
	}
	if len(roots) == 0 {
		roots = []arg{litArg(".")}
	}
	return roots, args[i:]
}

// findFilters reports whether a find expression selects only some files,
// and whether it looks for files named like credentials.
func findFilters(expr []arg) (filtered, hunt bool) {
	for k, e := range expr {
		if (e.val == "-name" || e.val == "-iname" || e.val == "-path" || e.val == "-ipath" || e.val == "-regex" ||
			e.val == "-iregex" || e.val == "-wholename") && k+1 < len(expr) && secretName(expr[k+1].val) {
			hunt = true
		}
		switch e.val {
		case "-name", "-iname", "-path", "-ipath", "-regex", "-iregex", "-wholename", "-iwholename", "-newer",
			"-mtime", "-mmin", "-atime", "-amin", "-ctime", "-cmin", "-size", "-empty", "-user", "-group",
			"-perm", "-inum", "-samefile", "-links", "-lname", "-ilname", "-used", "-nouser", "-nogroup":
			filtered = true
		}
		if strings.HasPrefix(e.val, "-newer") {
			filtered = true
		}
	}
	return filtered, hunt
}

// findExec judges the command of -exec (inner) once for each item found.
func (c *call) findExec(expr, inner, items []arg, hunt, outside bool) {
	if len(inner) > 0 && strings.Contains(inner[0].val, "{}") {
		c.runsFound(expr, outside)
	}
	if !hunt && outside && len(inner) > 1 && (baseName(inner[0].val) == "grep" || baseName(inner[0].val) == "egrep") {
		for _, a := range inner[1:] {
			if !strings.HasPrefix(a.val, "-") && secretText(a.val) {
				c.deny("secrets", "searches the files it finds outside the workspace for credentials")
			}
		}
	}
	if hunt {
		c.secretHunt(inner)
	}
	for _, it := range items {
		argv := make([]arg, 0, len(inner))
		for _, a := range inner {
			if strings.Contains(a.val, "{}") {
				a.val = strings.ReplaceAll(a.val, "{}", it.val)
			}
			argv = append(argv, a)
		}
		c.j.judgeArgv(c.owner, argv, c.sc)
	}
}

// judgeArgv judges a command given as an argument vector (find -exec).
func (j *judge) judgeArgv(owner int, argv []arg, sc *scope) {
	if len(argv) == 0 {
		return
	}
	c := &call{invocation: j.unwrap(argv, nil), j: j, sc: sc, ci: &callInfo{owner: owner}, owner: owner}
	if c.name == "" && len(c.layers) == 0 {
		c.nameRule()
		return
	}
	c.layerRules()
	c.applyRules()
	var o outcome
	if c.name != "" {
		o = c.dispatch()
	}
	if !o.argsJudged {
		c.scanArgs()
	}
}
