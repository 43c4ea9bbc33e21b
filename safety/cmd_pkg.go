package safety

import (
	"strings"
)

func registerPackageHandlers(reg func(handler, ...string)) {
	reg((*call).apt, "apt", "apt-get", "aptitude", "apt-key", "add-apt-repository")
	reg((*call).dpkg, "dpkg", "rpm")
	reg((*call).sysPkg, "yum", "dnf", "microdnf", "zypper", "apk", "snap", "flatpak", "brew", "port", "emerge",
		"xbps-install", "pkg", "nix-env", "opkg", "eopkg", "swupd", "pacman", "yay", "paru", "pamac")
	reg((*call).pip, "pip", "pip3", "pip2", "pipx", "uv", "conda", "mamba", "micromamba", "easy_install")
	reg((*call).npm, "npm", "pnpm", "yarn", "bun-pm", "cnpm", "npx", "pnpx", "bunx")
	reg((*call).langPkg, "gem", "cargo", "rustup", "go", "composer", "luarocks", "cpan", "cpanm", "opam", "stack", "cabal",
		"dotnet", "asdf", "sdk", "nvm", "pyenv", "rbenv", "volta", "mise", "twine", "poetry", "flit", "hatch", "bundle",
		"deno-install", "corepack", "nix", "guix", "gradle", "mvn")
}

func (c *call) apt() outcome {
	if c.name == "add-apt-repository" {
		c.ask("package_install", "adds a system package repository")
		return judgedArgs
	}
	if c.name == "apt-key" {
		v, _, _ := c.verb(optSpec{})
		if v == "list" || v == "finger" || v == "export" {
			return judgedArgs
		}
		c.deny("system_config", "apt-key changes trusted package signing keys")
		return judgedArgs
	}
	v, _, _ := c.verb(optSpec{short: "ocqtS", long: []string{"option", "config-file", "target-release", "default-release"}})
	switch v {
	case "", "list", "show", "search", "policy", "depends", "rdepends", "changelog", "download", "showsrc", "madison",
		"help", "moo", "--version", "-v", "why", "why-not", "versions":
		return judgedArgs
	}
	c.ask("package_install", c.name+" "+v+" changes system packages")
	return judgedArgs
}

func (c *call) dpkg() outcome {
	for _, a := range c.argv[1:] {
		v := a.val
		if c.name == "rpm" {
			if strings.HasPrefix(v, "-q") || strings.HasPrefix(v, "--query") || v == "-V" || v == "--verify" || strings.HasPrefix(v, "--eval") || v == "--version" {
				return judgedArgs
			}
			if strings.HasPrefix(v, "-i") || strings.HasPrefix(v, "-U") || strings.HasPrefix(v, "-F") || strings.HasPrefix(v, "-e") ||
				v == "--install" || v == "--upgrade" || v == "--erase" || v == "--import" || v == "--freshen" {
				c.ask("package_install", "rpm changes system packages")
				return judgedArgs
			}
			continue
		}
		switch v {
		case "-i", "--install", "-r", "--remove", "-P", "--purge", "--configure", "-a", "--unpack", "--set-selections", "--force-all", "--add-architecture", "--remove-architecture", "--clear-selections":
			c.ask("package_install", "dpkg changes system packages")
			return judgedArgs
		}
	}
	return judgedArgs
}

func (c *call) sysPkg() outcome {
	args := argTexts(c.argv[1:])
	if len(args) == 0 {
		return judgedArgs
	}
	switch c.name {
	case "pacman", "yay", "paru", "pamac":
		for _, a := range args {
			if strings.HasPrefix(a, "-Q") || strings.HasPrefix(a, "-F") || strings.HasPrefix(a, "-T") || a == "-h" || a == "--help" || a == "--version" || a == "-V" {
				return judgedArgs
			}
			if strings.HasPrefix(a, "-S") && !strings.ContainsAny(a[2:], "yu") && strings.ContainsAny(a[2:], "sigl") {
				return judgedArgs
			}
			if c.name == "pamac" && (a == "search" || a == "info" || a == "list") {
				return judgedArgs
			}
		}
		if c.name == "yay" || c.name == "paru" {
			if len(args) == 1 && !strings.HasPrefix(args[0], "-") {
				c.ask("package_install", c.name+" installs packages")
				return judgedArgs
			}
		}
		c.ask("package_install", c.name+" changes system packages")
		return judgedArgs
	}
	v := ""
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			v = a
			break
		}
	}
	switch v {
	case "", "list", "info", "search", "se", "provides", "repolist", "check-update", "lr", "repos", "show", "find",
		"doctor", "config", "outdated", "deps", "uses", "leaves", "desc", "home", "--version", "help", "-s", "query",
		"history", "repoquery", "whatprovides", "status", "version", "policy", "audit", "which":
		if c.name == "nix-env" && (strings.Contains(strings.Join(args, " "), "-i") || strings.Contains(strings.Join(args, " "), "-e") || strings.Contains(strings.Join(args, " "), "-u")) {
			break
		}
		if c.name == "emerge" && v == "" && !strings.Contains(strings.Join(args, " "), "-s") && !strings.Contains(strings.Join(args, " "), "--search") && !strings.Contains(strings.Join(args, " "), "-p") {
			break
		}
		return judgedArgs
	}
	if c.name == "brew" && v == "services" {
		c.deny("services", "brew services changes running services")
		return judgedArgs
	}
	c.ask("package_install", c.name+" "+v+" changes system packages")
	return judgedArgs
}

// inVenv reports whether a Python package tool acts on a virtual
// environment or directory inside the workspace.
func (c *call) inVenv(opts []opt) bool {
	if c.sc.venv {
		return true
	}
	for _, l := range c.layers {
		if len(l.argv) > 0 && strings.Contains(l.argv[0], "/") {
			if p, ok := c.j.resolve(arg{val: l.argv[0]}, c.sc); ok && c.j.inWorkspace(p) {
				return true
			}
		}
	}
	if strings.Contains(c.argv[0].val, "/") {
		if p, ok := c.j.resolve(c.argv[0], c.sc); ok && c.j.inWorkspace(p) {
			return true
		}
	}
	for _, name := range []string{"t", "target", "prefix", "root", "p"} {
		if d, ok := hasOpt(opts, name); ok {
			if p, ok := c.j.resolve(d, c.sc); ok && c.j.inWorkspace(p) {
				return true
			}
		}
	}
	return false
}

// projectInstall reports whether pip installs only what the workspace's
// project declares: requirement files, editable and local paths in it.
func (c *call) projectInstall(opts []opt, targets []arg) bool {
	n := 0
	for _, o := range opts {
		switch o.name {
		case "r", "requirement", "c", "constraint", "e", "editable":
			if p, ok := c.j.resolve(o.val, c.sc); !ok || !c.j.inWorkspace(p) {
				return false
			}
			n++
		}
	}
	for _, t := range targets {
		if !(strings.HasPrefix(t.val, ".") || strings.HasPrefix(t.val, "/") || strings.Contains(t.val, "/")) {
			return false // a package of the index
		}
		if p, ok := c.j.resolve(t, c.sc); !ok || !c.j.inWorkspace(p) {
			return false
		}
		n++
	}
	return n > 0
}

func (c *call) pip() outcome {
	opts, ops := c.split(optSpec{short: "rcetipn", long: []string{"requirement", "constraint", "editable", "target", "prefix",
		"root", "index-url", "extra-index-url", "find-links", "python", "src", "upgrade-strategy", "platform", "python-version",
		"implementation", "abi", "cache-dir", "log", "proxy", "retries", "timeout", "exists-action", "trusted-host", "cert",
		"client-cert", "progress-bar", "config-settings", "global-option", "name", "prefix", "channel", "file", "index", "default-index"}})
	if len(ops) == 0 {
		return judgedArgs
	}
	if len(ops) > 1 && c.name == "uv" && ops[0].val == "pip" {
		if c.packageSources(ops[1:]) {
			return judgedArgs
		}
	} else if c.packageSources(ops) {
		return judgedArgs
	}
	v := ops[0].val
	switch c.name {
	case "uv":
		if v == "pip" && len(ops) > 1 {
			if has(opts, "system", "break-system-packages") {
				c.ask("package_install", "uv pip installs into the system Python")
			}
			return judgedArgs
		}
		if v == "tool" && len(ops) > 1 && (ops[1].val == "install" || ops[1].val == "upgrade" || ops[1].val == "uninstall") {
			c.ask("package_install", "uv tool installs a global command")
		}
		if v == "python" && len(ops) > 1 && ops[1].val == "install" {
			c.ask("package_install", "uv python install")
		}
		return judgedArgs
	case "pipx":
		switch v {
		case "install", "uninstall", "upgrade", "upgrade-all", "reinstall", "reinstall-all", "uninstall-all", "inject", "ensurepath":
			c.ask("package_install", "pipx "+v+" changes user-wide tools")
		}
		return judgedArgs
	case "conda", "mamba", "micromamba":
		switch v {
		case "install", "remove", "uninstall", "update", "upgrade", "create":
			if c.inVenv(opts) {
				return judgedArgs
			}
			c.ask("package_install", c.name+" "+v+" changes a shared environment")
		}
		return judgedArgs
	}
	switch v {
	case "install", "uninstall", "easy_install":
		if has(opts, "break-system-packages") || has(opts, "user") {
			c.ask("package_install", "pip "+v+" outside a virtual environment")
			return judgedArgs
		}
		if c.inVenv(opts) || v == "install" && c.projectInstall(opts, ops[1:]) {
			return judgedArgs
		}
		c.ask("package_install", "pip "+v+" outside a workspace virtual environment")
	}
	if c.name == "easy_install" {
		c.ask("package_install", "easy_install installs packages globally")
	}
	return judgedArgs
}

func (c *call) npm() outcome {
	opts, ops := c.split(optSpec{short: "wC", long: []string{"prefix", "workspace", "registry", "tag", "otp", "cache", "userconfig", "location", "dir", "filter", "cwd"}})
	global := has(opts, "g", "global")
	if loc, ok := hasOpt(opts, "location"); ok && loc.val == "global" {
		global = true
	}
	if p, ok := hasOpt(opts, "prefix", "dir"); ok {
		if rp, ok := c.j.resolve(p, c.sc); !ok || !c.j.inWorkspace(rp) {
			global = true
		}
	}
	if c.packageSources(ops) || len(ops) == 0 {
		return judgedArgs
	}
	c.scriptServer(ops)
	v := ops[0].val
	if c.name == "yarn" && v == "global" {
		global = true
		if len(ops) > 1 {
			v = ops[1].val
		}
	}
	if (c.name == "pnpm" || c.name == "yarn") && (v == "dlx") {
		return judgedArgs
	}
	switch v {
	case "publish", "unpublish", "deprecate", "dist-tag", "owner", "access", "team":
		c.ask("publish", c.name+" "+v+" changes a package registry")
		return judgedArgs
	case "token", "login", "adduser", "logout":
		c.ask("publish", c.name+" "+v+" manages registry credentials")
		return judgedArgs
	case "install", "i", "in", "ins", "inst", "insta", "instal", "isnt", "isnta", "isntal", "isntall", "add",
		"uninstall", "un", "unlink", "remove", "rm", "r", "update", "up", "upgrade", "udpate", "link", "ln", "rebuild":
		if global {
			c.ask("package_install", c.name+" "+v+" changes global packages")
		}
	case "config":
		if len(ops) > 1 && (ops[1].val == "set" || ops[1].val == "delete" || ops[1].val == "edit") && global {
			c.ask("package_install", c.name+" config changes global settings")
		}
	}
	return judgedArgs
}

// langPkg judges the package managers and toolchain managers of
// languages: installing outside the workspace and publishing are asked.
func (c *call) langPkg() outcome {
	opts, ops := c.split(optSpec{short: "iC", long: []string{"install-dir", "root", "path", "tree", "bindir", "target", "version", "features", "git", "branch", "tag", "rev", "registry", "index", "manifest-path", "profile", "mode", "source"}})
	if c.packageSources(ops) || len(ops) == 0 {
		return judgedArgs
	}
	v := ops[0].val
	var global, settled bool
	switch c.name {
	case "gem", "cargo", "luarocks", "cpanm":
		global, settled = c.pkgInstallDir(v, opts)
	case "rustup", "go":
		global, settled = c.toolchainPkg(v, opts, ops)
	case "dotnet", "twine", "flit", "poetry", "hatch", "gradle", "mvn":
		global, settled = c.publishingPkg(v, opts, ops)
	default:
		global = otherPkgGlobal(c.name, v, opts, ops)
	}
	if global && !settled {
		c.ask("package_install", c.name+" "+v+" installs outside the workspace")
	}
	return judgedArgs
}

// dirInWorkspace reports whether the option named names gives a directory
// in the workspace.
func (c *call) dirInWorkspace(opts []opt, names ...string) bool {
	if d, ok := hasOpt(opts, names...); ok {
		if p, ok := c.j.resolve(d, c.sc); ok && c.j.inWorkspace(p) {
			return true
		}
	}
	return false
}

// pkgInstallDir judges the package managers that install into a directory
// an option can put in the workspace. It reports whether the verb installs
// globally and whether the command is settled already.
func (c *call) pkgInstallDir(v string, opts []opt) (global, settled bool) {
	switch c.name {
	case "gem":
		switch v {
		case "install", "uninstall", "update", "cleanup", "pristine":
			if c.dirInWorkspace(opts, "i", "install-dir") {
				return false, true
			}
			return true, false
		case "push", "yank", "owner", "signin":
			c.ask("publish", "gem "+v+" changes a package registry")
			return false, true
		}
	case "cargo":
		switch v {
		case "install", "uninstall":
			if c.dirInWorkspace(opts, "root") {
				return false, true
			}
			return true, false
		case "publish", "yank", "owner", "login", "logout":
			c.ask("publish", "cargo "+v+" changes a package registry")
			return false, true
		}
	case "luarocks":
		if v == "install" || v == "remove" {
			if c.dirInWorkspace(opts, "tree") {
				return false, true
			}
			global = !has(opts, "local")
		}
		if v == "upload" {
			c.ask("publish", "luarocks upload")
			return false, true
		}
	case "cpanm":
		if c.dirInWorkspace(opts, "l", "local-lib") {
			return false, true
		}
		return true, false
	}
	return global, false
}

// toolchainPkg judges rustup and the go command.
func (c *call) toolchainPkg(v string, opts []opt, ops []arg) (global, settled bool) {
	switch c.name {
	case "rustup":
		switch v {
		case "install", "update", "toolchain", "component", "target", "default", "self", "uninstall", "override":
			if v == "toolchain" || v == "component" || v == "target" {
				if len(ops) > 1 && (ops[1].val == "list") {
					return false, true
				}
			}
			if v == "override" && len(ops) > 1 && ops[1].val == "list" {
				return false, true
			}
			global = true
		}
	case "go":
		switch v {
		case "install":
			for _, o := range ops[1:] {
				if strings.Contains(o.val, "@") || !strings.HasPrefix(o.val, ".") && !strings.HasPrefix(o.val, "/") {
					global = true // a module from the network, not one of the workspace
				}
			}
		case "run":
			for _, o := range ops[1:] {
				if strings.Contains(o.val, "@") && !strings.HasPrefix(o.val, "-") {
					c.ask("package_install", "go run downloads and runs a module: "+o.text())
					return false, true
				}
			}
		case "env":
			if has(opts, "w") || has(opts, "u") {
				global = true
			}
		}
	}
	return global, false
}

// publishingPkg judges the build and packaging tools whose concern is
// mostly publishing.
func (c *call) publishingPkg(v string, opts []opt, ops []arg) (global, settled bool) {
	switch c.name {
	case "dotnet":
		global = v == "tool" && has(opts, "g", "global") || v == "workload" || v == "new" && len(ops) > 1 && ops[1].val == "install"
		if v == "nuget" && len(ops) > 1 && ops[1].val == "push" {
			c.ask("publish", "dotnet nuget push")
			return false, true
		}
	case "twine", "flit":
		if v == "upload" || v == "publish" {
			c.ask("publish", c.name+" "+v+" publishes a package")
		}
		return false, true
	case "poetry", "hatch":
		if v == "publish" {
			c.ask("publish", c.name+" publish publishes a package")
			return false, true
		}
		if v == "self" {
			global = true
		}
	case "gradle", "mvn":
		for _, o := range ops {
			if o.val == "publish" || o.val == "deploy" || strings.HasPrefix(o.val, "publish") {
				c.ask("publish", c.name+" publishes artifacts")
				return false, true
			}
		}
	}
	return global, false
}

// otherPkgGlobal reports whether the verb v of the other language package
// managers installs or changes something outside the workspace.
func otherPkgGlobal(name, v string, opts []opt, ops []arg) bool {
	switch name {
	case "composer":
		return v == "global"
	case "cpan":
		return true
	case "opam", "stack", "cabal":
		return v == "install" || v == "switch" || v == "upgrade" || v == "uninstall" || v == "remove"
	case "asdf", "sdk", "nvm", "pyenv", "rbenv", "volta", "mise":
		return v == "install" || v == "uninstall" || v == "global" || v == "plugin" || v == "use" && has(opts, "global") || v == "alias"
	case "bundle":
		return has(opts, "system")
	case "corepack":
		return v == "enable" || v == "disable" || v == "install"
	case "nix":
		return v == "profile" && len(ops) > 1 && (ops[1].val == "install" || ops[1].val == "remove" || ops[1].val == "upgrade")
	case "guix":
		return v == "install" || v == "remove" || v == "upgrade" || v == "pull"
	}
	return false
}
