package safety

import (
	"strings"
)

// Package runners (npx, pnpm dlx, bunx, uvx, pipx run) fetch a package
// and run one of its commands. What runs is that command, so the filter
// judges it as if it had been written directly: "npx http-server /" serves
// the root like "http-server /" does. A package named with an explicit
// version or tag cannot be a dependency the project already has: it is
// fetched from the registry and run on the spot, which is asked about.

// runnerSpecs are the options of each package runner that take a value.
var runnerSpecs = map[string]optSpec{
	"npx":  {short: "pc", long: []string{"package", "call", "node-options", "registry", "cache", "userconfig", "prefix"}},
	"npm":  {short: "pc", long: []string{"package", "call", "node-options", "registry", "cache", "userconfig", "prefix", "workspace"}},
	"pnpm": {short: "pc", long: []string{"package", "dir", "filter", "call"}},
	"yarn": {short: "p", long: []string{"package", "cwd"}},
	"bunx": {short: "p", long: []string{"package", "bun"}},
	"uvx":  {short: "wp", long: []string{"from", "with", "with-requirements", "with-editable", "python", "index", "index-url", "extra-index-url", "default-index", "find-links", "directory", "project", "cache-dir", "constraints", "overrides"}},
	"pipx": {short: "", long: []string{"spec", "python", "pip-args", "index-url"}},
}

// runnerFamily names the option table of a package runner invocation and
// the index where its options start, or "" when argv is not one.
func runnerFamily(argv []arg) (string, int) {
	if len(argv) == 0 {
		return "", 0
	}
	name := baseName(argv[0].val)
	sub := ""
	if len(argv) > 1 {
		sub = argv[1].val
	}
	switch {
	case name == "npx" || name == "pnpx":
		return "npx", 1
	case name == "bunx" || name == "bun" && sub == "x":
		if name == "bun" {
			return "bunx", 2
		}
		return "bunx", 1
	case name == "npm" && (sub == "exec" || sub == "x"):
		return "npm", 2
	case name == "pnpm" && sub == "dlx", name == "yarn" && sub == "dlx":
		return name, 2
	case name == "uvx":
		return "uvx", 1
	case name == "uv" && sub == "tool" && len(argv) > 2 && (argv[2].val == "run" || argv[2].val == "x"):
		return "uvx", 3
	case name == "pipx" && sub == "run":
		return "pipx", 2
	}
	return "", 0
}

// pkgRun is what unwrapping found out about a package runner: the
// command string it was given to run (--call), or the package it fetches
// from an arbitrary URL, or from the registry at a pinned version or tag.
type pkgRun struct {
	name   string // the runner as named (npx, pnpm, uvx ...)
	call   *arg
	url    *arg
	pinned *arg
}

// runPackage returns the command a package runner runs, with the package's
// name as its command name. pr is nil when argv is not a package runner;
// ok is false when it runs no command to judge as written.
func runPackage(name string, argv []arg) (pr *pkgRun, inner []arg, ok bool) {
	fam, start := runnerFamily(argv)
	if fam == "" {
		return nil, nil, false
	}
	pr = &pkgRun{name: name}
	spec := runnerSpecs[fam]
	i, opts := parseOpts(argv, start, spec)
	for _, o := range opts {
		if o.name == "c" || o.name == "call" {
			pr.call = &o.val
			return pr, nil, false
		}
		if isPackageURL(o.val.val) || (o.name == "p" || o.name == "package") && fam != "uvx" && isGitHubShorthand(o.val.val) {
			pr.url = &o.val
			return pr, nil, false
		}
	}
	rest := argv[i:]
	if len(rest) == 0 {
		return pr, nil, false
	}
	pkgSpec := rest[0]
	if _, named := hasOpt(opts, "p", "package", "from", "spec"); !named || fam == "pipx" {
		if isPackageURL(pkgSpec.val) || fam != "uvx" && fam != "pipx" && isGitHubShorthand(pkgSpec.val) {
			pr.url = &pkgSpec
			return pr, nil, false
		}
		if cmd, pinned := packageCommand(pkgSpec.val, fam); cmd != "" {
			if pinned {
				a := pkgSpec
				pr.pinned = &a
			}
			pkgSpec = part(pkgSpec, cmd)
		}
	}
	return pr, append([]arg{pkgSpec}, rest[1:]...), true
}

// pkgRule judges what unwrapping found out about a package runner.
func (c *call) pkgRule(pr *pkgRun) {
	switch {
	case pr.call != nil:
		c.j.nested(c.owner, *pr.call, c.sc, pr.name+" --call")
	case pr.url != nil:
		c.ask("package_install", pr.name+" runs a package from an arbitrary URL: "+pr.url.text())
	case pr.pinned != nil:
		c.ask("package_install", pr.name+" fetches "+pr.pinned.text()+" from the registry and runs it")
	}
}

// packageCommand turns a package spec ("@scope/tool@1.2", "tool==2.0")
// into the command it most likely provides, and reports whether the spec
// names a version or tag.
func packageCommand(spec, fam string) (string, bool) {
	if fam == "uvx" || fam == "pipx" {
		for _, sep := range []string{"==", ">=", "<=", "~=", "@", "["} {
			if k := strings.Index(spec, sep); k > 0 {
				return spec[:k], sep != "["
			}
		}
		return spec, false
	}
	scoped := strings.HasPrefix(spec, "@")
	body := strings.TrimPrefix(spec, "@")
	pinned := false
	if k := strings.LastIndex(body, "@"); k > 0 {
		body, pinned = body[:k], true
	}
	if scoped {
		_, body, _ = strings.Cut(body, "/")
	}
	return body, pinned
}
