package safety

import (
	"strings"
)

// Installing a package runs its install scripts. From the usual registry
// inside the workspace that is ordinary work; from an arbitrary URL, a
// repository or another registry it is running code of unknown origin, so
// the filter asks. Changing which registry a package manager uses is
// asked about too.

// defaultRegistries are the registries package managers use out of the box.
var defaultRegistries = []string{"pypi.org", "pypi.python.org", "files.pythonhosted.org", "registry.npmjs.org",
	"registry.yarnpkg.com", "rubygems.org", "crates.io", "index.crates.io", "proxy.golang.org", "sum.golang.org",
	"conda.anaconda.org", "repo.anaconda.com", "repo.maven.apache.org", "repo1.maven.org", "packagist.org", "registry.npmmirror.com"}

func isDefaultRegistry(u string) bool {
	host, _ := hostOfTarget(u)
	host = strings.ToLower(host)
	for _, r := range defaultRegistries {
		if host == r {
			return true
		}
	}
	return false
}

// isPackageURL reports whether a package spec names an archive or a
// repository instead of a package of the registry.
func isPackageURL(v string) bool {
	l := strings.ToLower(v)
	if i := strings.Index(l, " @ "); i >= 0 {
		l = strings.TrimSpace(l[i+3:]) // pip's "name @ url"
	}
	for _, p := range []string{"git+", "hg+", "svn+", "bzr+", "git://", "git@", "github:", "gitlab:", "bitbucket:", "gist:"} {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	return isURL(l) && !strings.HasPrefix(l, "file:") && !isDefaultRegistry(l)
}

// registryOpts are the options of each package manager that choose where
// packages come from.
var registryOpts = map[string][]string{
	"pip": {"-i", "--index-url", "--extra-index-url", "-f", "--find-links", "--trusted-host"},
	"uv":  {"-i", "--index-url", "--extra-index-url", "-f", "--find-links", "--index", "--default-index"},
	"npm": {"--registry"}, "gem": {"--source", "-s"}, "cargo": {"--git", "--registry", "--index"},
	"conda": {"-c", "--channel", "--override-channels"}, "bundle": {"--source"},
}

func registryFamily(name string) string {
	switch name {
	case "pip", "pip3", "pip2", "pipx", "easy_install":
		return "pip"
	case "npm", "pnpm", "yarn", "bun", "bun-pm", "cnpm", "npx", "pnpx", "bunx":
		return "npm"
	case "conda", "mamba", "micromamba":
		return "conda"
	}
	return name
}

// packageSources asks about installs from arbitrary URLs and about
// registry switches; it reports whether it asked.
func (c *call) packageSources(ops []arg) bool {
	fam := registryFamily(c.name)
	for _, v := range c.optValues(registryOpts[fam]...) {
		if fam == "conda" && !isURL(v.val) {
			continue // a named channel
		}
		if !isDefaultRegistry(v.val) {
			c.ask("package_install", c.name+" installs from another package index: "+v.text())
			return true
		}
	}
	if len(ops) == 0 {
		return false
	}
	verb := ops[0].val
	sub := ""
	if len(ops) > 1 {
		sub = ops[1].val
	}
	switch {
	case (verb == "config" || verb == "c") && (sub == "set" || sub == "edit" || sub == "unset" || sub == "delete" || sub == "--add" || sub == "--set" || sub == "--append" || sub == "--prepend"),
		fam == "npm" && verb == "set" && c.name != "npx",
		fam == "gem" && verb == "sources" && len(ops) > 1,
		c.name == "gem" && verb == "sources" && c.hasAnyOpt("-a", "--add", "-r", "--remove", "-c", "--clear-all"),
		(c.name == "poetry" || c.name == "pdm") && verb == "source" && sub == "add",
		c.name == "conda" && verb == "config" && c.hasAnyOpt("--add", "--set", "--append", "--prepend"),
		c.name == "composer" && verb == "config" && (strings.HasPrefix(sub, "repo") || sub == "secure-http" || sub == "disable-tls"),
		fam == "npm" && verb == "config" && (sub == "strict-ssl" || strings.Contains(sub, "registry")):
		c.ask("package_install", c.name+" changes which package registry is used")
		return true
	}
	switch verb {
	case "install", "i", "add", "in", "ins", "download", "update", "upgrade", "exec", "x", "dlx", "run":
		if fam == "npm" && (verb == "run" || verb == "x" || verb == "exec") && c.name != "npx" {
			return false
		}
		for _, o := range ops[1:] {
			if isPackageURL(o.val) || fam == "npm" && isGitHubShorthand(o.val) {
				c.ask("package_install", c.name+" installs a package from an arbitrary URL: "+o.text())
				return true
			}
		}
	}
	if c.name == "npx" || c.name == "pnpx" || c.name == "bunx" {
		for _, o := range ops {
			if isPackageURL(o.val) || isGitHubShorthand(o.val) {
				c.ask("package_install", "npx runs a package from an arbitrary URL: "+o.text())
				return true
			}
		}
	}
	for _, a := range c.optValues("-r", "--requirement", "-c", "--constraint") {
		if fam == "pip" && isPackageURL(a.val) {
			c.ask("package_install", c.name+" installs requirements downloaded from "+a.text())
			return true
		}
	}
	return false
}

// isGitHubShorthand reports whether an npm package spec is "user/repo",
// which npm fetches from GitHub.
func isGitHubShorthand(v string) bool {
	if strings.HasPrefix(v, "@") || strings.HasPrefix(v, ".") || strings.HasPrefix(v, "/") || strings.HasPrefix(v, "-") || strings.Contains(v, ":") {
		return false
	}
	user, repo, ok := strings.Cut(v, "/")
	return ok && user != "" && repo != "" && !strings.Contains(repo, "/") && !strings.ContainsAny(v, "*?=")
}

// registryEnv are environment variables that point a package manager at
// another registry or turn its checks off.
var registryEnv = map[string]bool{"PIP_INDEX_URL": true, "PIP_EXTRA_INDEX_URL": true, "PIP_TRUSTED_HOST": true,
	"PIP_FIND_LINKS": true, "UV_INDEX_URL": true, "UV_EXTRA_INDEX_URL": true, "UV_DEFAULT_INDEX": true, "UV_INDEX": true,
	"NPM_CONFIG_REGISTRY": true, "npm_config_registry": true, "YARN_REGISTRY": true, "YARN_NPM_REGISTRY_SERVER": true,
	"GOPROXY": true, "GOSUMDB": true, "GONOSUMDB": true, "GOINSECURE": true, "GONOSUMCHECK": true, "GOFLAGS": true,
	"CARGO_REGISTRIES_CRATES_IO_PROTOCOL": true, "BUNDLE_MIRROR__ALL": true, "GEM_SOURCE": true, "CONDA_CHANNELS": true,
	"PIP_CONFIG_FILE": true, "NPM_CONFIG_USERCONFIG": true}

// registryAssign asks about an assignment that switches a registry.
func (c *call) registryAssign(name, val string) {
	if !registryEnv[name] {
		return
	}
	switch name {
	case "GOPROXY":
		if val == "" || val == "direct" || val == "off" || strings.HasPrefix(val, "https://proxy.golang.org") {
			return
		}
	case "GOFLAGS":
		if !strings.Contains(val, "insecure") {
			return
		}
	case "GOSUMDB":
		if val == "sum.golang.org" {
			return
		}
	}
	c.ask("package_install", name+" points a package manager at another registry")
}

// commandEnv are environment variables whose value is a command that
// programs run: pagers, editors, ssh and askpass helpers.
var commandEnv = map[string]bool{"PAGER": true, "GIT_PAGER": true, "MANPAGER": true, "SYSTEMD_PAGER": true,
	"EDITOR": true, "VISUAL": true, "GIT_EDITOR": true, "SUDO_EDITOR": true, "GIT_SEQUENCE_EDITOR": true,
	"GIT_SSH_COMMAND": true, "GIT_SSH": true, "SSH_ASKPASS": true, "GIT_ASKPASS": true, "SUDO_ASKPASS": true,
	"LESSOPEN": true, "LESSCLOSE": true, "BROWSER": true, "GIT_EXTERNAL_DIFF": true, "GIT_PROXY_COMMAND": true,
	"RSYNC_RSH": true, "CVS_RSH": true, "TERMINAL": true, "DIFF_VIEWER": true}

// envCommand judges the command held by such a variable.
func (c *call) envCommand(name string, v arg) {
	if !commandEnv[name] || v.val == "" {
		return
	}
	v.val = strings.TrimLeft(v.val, "|")
	c.j.nested(c.owner, v, c.sc, name)
}
