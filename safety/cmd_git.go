package safety

import "strings"

func registerGitHandlers(reg func(handler, ...string)) {
	reg((*call).git, "git")
	reg((*call).gh, "gh", "glab")
}

// git allows local work and asks for pushes; force pushes and remote
// deletions are refused.
func (c *call) git() outcome {
	g := parseGit(c.argv[1:])
	for _, kv := range g.configs {
		c.gitConfigValue(kv.val)
	}
	args, dir := g.args, g.dir
	if len(args) == 0 {
		return judgedArgs
	}
	verb := args[0].val
	rest := args[1:]
	if len(rest) > 0 && rest[0].val == "--help" {
		return judgedArgs // git turns "git VERB --help" into "git help VERB"
	}
	if verb == "diff" && hasWord(rest, "--no-index") {
		// Compares any two files, not only those of a repository.
		for _, a := range rest {
			c.scanOne(a, accRead)
		}
	}
	wd, wdOK := c.sc.cwd, c.sc.cwd != ""
	if dir.val != "" || !dir.known() {
		wd, wdOK = c.j.resolve(dir, c.sc)
	}
	inside := wdOK && c.j.inWorkspace(wd)
	switch verb {
	case "log", "show", "diff", "grep", "blame", "cat-file", "archive", "format-patch", "shortlog", "reflog":
		c.ci.outside = !inside
	}
	switch verb {
	case "push":
		c.gitPush(rest)
		return judgedArgs
	case "status", "log", "diff", "show", "blame", "grep", "rev-parse", "describe", "shortlog", "branch", "tag",
		"remote", "fetch", "ls-remote", "reflog", "cat-file", "ls-tree", "whatchanged", "version", "help", "count-objects",
		"for-each-ref", "merge-base", "name-rev", "rev-list", "show-ref", "var", "check-ignore", "worktree", "bisect",
		"range-diff", "cherry", "notes", "format-patch", "archive", "bundle", "fsck", "verify-commit", "verify-tag", "lfs":
		return judgedArgs
	case "ls-files", "diff-files", "diff-index":
		if inside {
			c.ci.lister = wd
		}
		return judgedArgs
	case "clone", "submodule":
		c.gitClone(verb, rest)
		return judgedArgs
	case "config":
		c.gitConfig(rest)
		return judgedArgs
	case "credential", "credential-store", "credential-cache":
		c.deny("secrets", "git "+verb+" reveals stored credentials")
		return judgedArgs
	case "daemon", "instaweb":
		c.ask("network_listener", "git "+verb+" serves repositories on the network")
		return judgedArgs
	case "send-email", "request-pull":
		c.ask("git_remote", "git "+verb+" sends changes out")
		return judgedArgs
	}
	if !inside {
		if !wdOK {
			c.deny("destroy_data", "git "+verb+" in a directory only known at run time")
			return judgedArgs
		}
		switch verb {
		case "clean", "reset", "checkout", "restore", "rm", "stash", "switch", "merge", "rebase", "pull", "am", "apply", "mv", "gc", "prune", "filter-branch", "filter-repo", "commit", "init", "add", "update-ref", "cherry-pick", "revert":
			c.deny("destroy_data", "git "+verb+" changes a repository outside the workspace: "+wd)
		}
	}
	return judgedArgs
}

// gitClone judges git clone and git submodule: the clone's directory is
// created, its scripts come from the network, and some options and
// transports run commands.
func (c *call) gitClone(verb string, rest []arg) {
	_, ops := splitArgs(rest, optSpec{short: "bocju", long: []string{"branch", "origin", "config", "depth", "jobs", "reference", "template", "upload-pack", "separate-git-dir", "filter"}})
	if verb == "clone" && len(ops) > 1 {
		c.checkArg(ops[1], accCreate)
	}
	if verb == "clone" && len(ops) > 0 {
		dest := arg{val: strings.TrimSuffix(urlBase(ops[0].val), ".git")}
		if len(ops) > 1 {
			dest = ops[1]
		}
		if p, ok := c.j.resolve(dest, c.sc); ok {
			c.sc.tainted[p+"/"] = "download_exec" // its scripts came from the network
		}
	}
	for _, a := range rest {
		if strings.HasPrefix(a.val, "--upload-pack") || strings.HasPrefix(a.val, "-u") {
			c.deny("obfuscation", "git clone with a custom upload-pack command")
		}
		if strings.HasPrefix(a.val, "ext::") {
			c.deny("obfuscation", "git clone over the ext:: transport runs a command")
		}
	}
}

func splitArgs(args []arg, spec optSpec) ([]opt, []arg) {
	c := &call{invocation: invocation{argv: append([]arg{litArg("x")}, args...)}}
	return c.split(spec)
}

func (c *call) gitPush(rest []arg) {
	opts, ops := splitArgs(rest, optSpec{short: "o", long: []string{"repo", "receive-pack", "exec", "push-option", "signed", "force-with-lease"}})
	if has(opts, "f", "force", "force-with-lease", "force-if-includes", "mirror", "delete", "d", "prune") {
		c.deny("git_remote", "force push or remote deletion")
		return
	}
	if has(opts, "receive-pack", "exec") {
		c.deny("obfuscation", "git push with a custom receive-pack command")
		return
	}
	for k, o := range ops {
		if k == 0 {
			continue
		}
		if strings.HasPrefix(o.val, "+") || strings.HasPrefix(o.val, ":") || strings.HasSuffix(o.val, ":") && len(o.val) > 1 {
			c.deny("git_remote", "force push or remote deletion: "+o.text())
			return
		}
	}
	c.ask("git_remote", "pushes to a remote repository")
}

var gitDangerKeys = []string{"core.hookspath", "core.sshcommand", "core.pager", "core.editor", "core.fsmonitor",
	"core.gitproxy", "core.askpass", "credential.helper", "sequence.editor", "diff.external", "gpg.program", "pager.", "filter.", "merge.", "diff."}

// gitTrustKey reports whether setting key weakens git's checks (TLS, the
// repository owner) or silently redirects remotes.
func gitTrustKey(key, val string) bool {
	v := strings.ToLower(val)
	switch {
	case key == "http.sslverify" && (v == "false" || v == "0" || v == "no" || v == "off"),
		strings.HasPrefix(key, "url.") && (strings.HasSuffix(key, ".insteadof") || strings.HasSuffix(key, ".pushinsteadof")),
		key == "safe.directory" && v == "*",
		key == "http.proxy" || key == "https.proxy",
		key == "include.path" || strings.HasPrefix(key, "includeif."),
		key == "transfer.fsckobjects" && (v == "false" || v == "0"),
		key == "protocol.ext.allow" || key == "protocol.file.allow" && v == "always":
		return true
	}
	return false
}

func (c *call) gitConfig(rest []arg) {
	global := false
	var ops []arg
	for _, a := range rest {
		switch {
		case a.val == "--global" || a.val == "--system" || a.val == "--file" || a.val == "-f":
			global = true
			if a.val == "--system" {
				c.deny("system_config", "git config --system changes the system git configuration")
				return
			}
		case strings.HasPrefix(a.val, "--get") || a.val == "-l" || a.val == "--list":
			if gitConfigReadsSecret(rest) {
				c.deny("secrets", "git config prints the keys that hold credentials")
			}
			return
		case strings.HasPrefix(a.val, "-"):
		default:
			ops = append(ops, a)
		}
	}
	if len(ops) < 2 {
		return
	}
	key := strings.ToLower(ops[0].val)
	val := ops[1]
	if strings.HasPrefix(key, "alias.") && strings.HasPrefix(val.val, "!") {
		if global {
			c.deny("persistence", "git config "+key+" makes git run a shell command")
			return
		}
		c.j.nested(c.owner, arg{val: val.val[1:]}, c.sc, "git alias")
	}
	if global && gitTrustKey(key, val.val) {
		c.deny("system_config", "git config "+key+" weakens how git checks or where it fetches from")
		return
	}
	for _, k := range gitDangerKeys {
		if strings.HasPrefix(key, k) {
			if global {
				c.deny("persistence", "git config "+key+" makes git run a command")
			} else {
				c.j.nested(c.owner, val, c.sc, "git config "+key)
			}
			return
		}
	}
}

// gitConfigValue judges "git -c key=value".
func (c *call) gitConfigValue(kv string) {
	k, v, _ := strings.Cut(kv, "=")
	k = strings.ToLower(k)
	if strings.HasPrefix(k, "alias.") && strings.HasPrefix(v, "!") {
		c.j.nested(c.owner, arg{val: v[1:]}, c.sc, "git alias")
		return
	}
	for _, d := range gitDangerKeys {
		if strings.HasPrefix(k, d) {
			c.j.nested(c.owner, arg{val: v}, c.sc, "git -c "+k)
			return
		}
	}
}

func (c *call) gh() outcome {
	args := argTexts(c.argv[1:])
	if len(args) == 0 {
		return judgedArgs
	}
	joined := " " + strings.Join(args, " ") + " "
	switch {
	case strings.HasPrefix(joined, " auth token") || strings.Contains(joined, " auth status") && (strings.Contains(joined, " -t ") || strings.Contains(joined, "--show-token")):
		c.deny("secrets", "prints the GitHub token")
	case strings.Contains(joined, " delete ") || strings.Contains(joined, "-X DELETE") || strings.Contains(joined, "--method DELETE") || strings.Contains(joined, "--method=DELETE") || strings.Contains(joined, " archive "):
		c.deny("git_remote", c.name+" deletes remote resources")
	case len(args) > 1 && (args[1] == "create" || args[1] == "merge" || args[1] == "close" || args[1] == "edit" || args[1] == "comment" || args[1] == "review" || args[1] == "set" || args[1] == "upload" || args[1] == "sync" || args[1] == "fork" || args[1] == "rename" || args[1] == "reopen" || args[1] == "transfer" || args[1] == "lock"):
		c.ask("git_remote", c.name+" "+args[0]+" "+args[1]+" changes the remote repository")
	case args[0] == "api" && (strings.Contains(joined, " -X ") || strings.Contains(joined, "--method") || strings.Contains(joined, " -f ") || strings.Contains(joined, " -F ")):
		c.ask("git_remote", "gh api call that may change remote resources")
	case args[0] == "secret" || args[0] == "ssh-key" || args[0] == "gpg-key":
		c.ask("git_remote", "gh "+args[0]+" manages credentials")
	}
	return judgedArgs
}
