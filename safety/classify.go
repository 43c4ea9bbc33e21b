package safety

import (
	"path"
	"strings"
)

// access is how a command touches a path.
type access int

const (
	accRead     access = iota // reads a file
	accReadTree               // reads a whole directory tree
	accCreate                 // creates or appends
	accWrite                  // overwrites or truncates
	accDelete                 // removes
	accPerm                   // changes owner or mode
)

// Paths under the home directory that hold credentials.
var homeSecrets = []string{
	".ssh", ".aws", ".azure", ".config/gcloud", ".kube", ".docker/config.json", ".gnupg",
	".netrc", ".pgpass", ".git-credentials", ".npmrc", ".pypirc", ".config/gh", ".config/hub",
	".password-store", ".vault-token", ".terraform.d/credentials.tfrc.json", ".cargo/credentials",
	".cargo/credentials.toml", ".local/share/keyrings", ".mozilla", ".config/google-chrome",
	".config/chromium", ".cache/google-chrome", ".cache/chromium", ".cache/mozilla", ".config/BraveSoftware", ".my.cnf", ".s3cfg", ".boto", ".oci", ".config/rclone", ".config/op",
	".env", ".gem/credentials", ".config/containers/auth.json", ".config/pip/pip.conf",
	".bash_history", ".zsh_history", ".history", ".python_history", ".psql_history",
	".mysql_history", ".node_repl_history", ".sqlite_history", ".local/share/fish/fish_history",
	".lesshst", ".viminfo",
}

// Absolute paths that hold credentials.
var systemSecrets = []string{
	"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers", "/etc/sudoers.d",
	"/etc/ssl/private", "/root", "/proc/self/environ", "/proc/*/environ", "/proc/*/mem",
	"/proc/self/mem", "/proc/kcore", "/etc/kubernetes/admin.conf", "/var/run/secrets", "/run/secrets",
	"/etc/ssh/ssh_host_rsa_key", "/etc/ssh/ssh_host_ecdsa_key", "/etc/ssh/ssh_host_ed25519_key",
	"/etc/ssh/ssh_host_dsa_key", "/etc/security/opasswd", "/var/lib/sss", "/etc/krb5.keytab",
}

var homeHistory = []string{
	".bash_history", ".zsh_history", ".history", ".python_history", ".psql_history",
	".mysql_history", ".node_repl_history", ".sqlite_history", ".local/share/fish/fish_history",
	".lesshst", ".viminfo",
}

// Files that run code at login, at boot or on schedule.
var homePersistence = []string{
	".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc", ".zprofile",
	".zshenv", ".zlogin", ".zlogout", ".config/fish", ".ssh", ".config/autostart", ".config/systemd",
	".local/share/systemd", ".xinitrc", ".xprofile", ".xsession", ".config/environment.d",
	".pam_environment", ".vimrc", ".inputrc", ".gitconfig", ".config/git/config",
	".local/share/applications", ".config/upstart", ".tmux.conf", ".screenrc",
	// Other shells' and the X session's start-up files, and files sourced by them.
	".bash_aliases", ".bash_functions", ".kshrc", ".mkshrc", ".cshrc", ".tcshrc", ".login", ".logout", ".xsessionrc",
	".xinputrc", ".Xsession", ".xserverrc", ".xbindkeysrc", ".config/plasma-workspace/env",
	".config/plasma-workspace/shutdown", ".config/openbox/autostart", ".config/lxsession", ".config/i3/config",
	".config/sway/config", ".config/hypr", ".config/labwc/autostart",
	// Editors' and interpreters' start-up files, which run code when they start.
	".config/nvim", ".vim", ".gvimrc", ".exrc", ".emacs", ".emacs.d", ".config/emacs", ".config/doom",
	".gdbinit", ".config/gdb", ".lldbinit", ".pythonrc", ".pythonrc.py", ".ipython/profile_default/startup",
	".jupyter", ".irbrc", ".pryrc", ".Rprofile", ".perldb", ".psqlrc", ".sqliterc", ".config/direnv", ".envrc",
	".config/mpv/scripts", ".config/git/hooks", ".git-templates", ".config/Code/User/tasks.json", ".wgetrc", ".curlrc",
}

var systemPersistence = []string{
	"/etc/cron.d", "/etc/cron.daily", "/etc/cron.hourly", "/etc/cron.weekly", "/etc/cron.monthly",
	"/etc/crontab", "/var/spool/cron", "/etc/anacrontab", "/etc/systemd", "/lib/systemd/system",
	"/usr/lib/systemd", "/etc/init.d", "/etc/init", "/etc/rc.local", "/etc/profile", "/etc/profile.d",
	"/etc/bash.bashrc", "/etc/bashrc", "/etc/zsh", "/etc/ld.so.preload", "/etc/update-motd.d",
	"/etc/xdg/autostart", "/etc/rc.d", "/var/spool/at", "/etc/udev/rules.d",
	"/root/.ssh", "/root/.bashrc", "/root/.profile", "/root/.bash_profile", "/root/.zshrc",
}

var systemDirs = []string{
	"/etc", "/boot", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/var",
	"/sys", "/proc", "/root", "/srv", "/snap", "/efi", "/selinux", "/run",
}

var logPaths = []string{
	"/var/log", "/var/run/utmp", "/run/utmp", "/var/adm", "/var/account", "/var/spool/mail",
	"/var/mail", "/var/lib/systemd/catalog",
}

var tempDirs = []string{"/tmp", "/var/tmp", "/dev/shm"}

// softwareDirs hold installed programs and their data, readable by all.
var softwareDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib64", "/opt", "/snap", "/nix/store", "/proc", "/sys"}

var benignDevices = []string{
	"/dev/null", "/dev/zero", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/fd",
	"/dev/pts", "/dev/random", "/dev/urandom", "/dev/full", "/dev/ptmx", "/dev/console",
}

// under reports whether p equals or lies under dir. A glob element of p
// counts when it could match the corresponding element of dir.
func under(p, dir string) bool {
	if dir == "/" {
		return strings.HasPrefix(p, "/")
	}
	if !strings.ContainsAny(p, "*?[") && !strings.ContainsAny(dir, "*?[") {
		return p == dir || strings.HasPrefix(p, dir+"/")
	}
	pe := strings.Split(strings.Trim(p, "/"), "/")
	de := strings.Split(strings.Trim(dir, "/"), "/")
	if len(pe) < len(de) {
		if len(pe) > 0 && strings.Contains(pe[len(pe)-1], "**") {
			return prefixMatch(pe[:len(pe)-1], de)
		}
		return false
	}
	return prefixMatch(pe, de)
}

func prefixMatch(pe, de []string) bool {
	for i, d := range de {
		if i >= len(pe) {
			return false
		}
		if !elemMatch(pe[i], d) {
			return false
		}
	}
	return true
}

// elemMatch reports whether one path element pattern may name d.
func elemMatch(pat, d string) bool {
	if strings.Contains(d, "*") {
		// d itself is a pattern (a list entry like /proc/*/environ).
		ok, _ := path.Match(d, pat)
		return ok || pat == d
	}
	if !strings.ContainsAny(pat, "*?[") {
		return pat == d
	}
	// As in bash, a leading dot must be matched explicitly.
	if strings.HasPrefix(d, ".") && !strings.HasPrefix(pat, ".") {
		return false
	}
	ok, err := path.Match(pat, d)
	return ok || err != nil
}

// strictlyUnder reports whether p lies under dir with every element of dir
// spelled literally, which is what "inside the workspace" must mean.
func strictlyUnder(p, dir string) bool {
	if !(p == dir || strings.HasPrefix(p, dir+"/") || dir == "/") {
		return false
	}
	return !strings.ContainsAny(dir, "*?[") && !strings.ContainsAny(p[:min(len(p), len(dir))], "*?[")
}

// ancestorOf reports whether p is dir or one of its parents (glob-aware).
func ancestorOf(p, dir string) bool {
	if p == "/" {
		return true
	}
	return under(dir, p) || (strings.ContainsAny(p, "*?[") && globAncestor(p, dir))
}

func globAncestor(p, dir string) bool {
	pe := strings.Split(strings.Trim(p, "/"), "/")
	de := strings.Split(strings.Trim(dir, "/"), "/")
	if len(pe) > len(de) {
		return false
	}
	for i := range pe {
		if !elemMatch(pe[i], de[i]) {
			return false
		}
	}
	return true
}

// wildAll reports whether an element matches (nearly) every name.
func wildAll(elem string) bool {
	return strings.ContainsAny(elem, "*?") && strings.Trim(elem, "*?.") == ""
}

// mayEscape reports whether a glob element could match "..".
func mayEscape(p string) bool {
	for _, e := range strings.Split(p, "/") {
		// Like bash, a glob matches a leading dot only when spelled out.
		if strings.ContainsAny(e, "*?[") && (strings.HasPrefix(e, ".") || strings.HasPrefix(e, "[")) {
			if ok, _ := path.Match(e, ".."); ok {
				return true
			}
		}
	}
	return false
}

// homePaths returns the absolute forms of one of the home-relative lists,
// computed once per Policy.
func (j *judge) homePaths(rel []string) []string {
	if len(rel) == 0 {
		return nil
	}
	return j.p.homeLists[rel[0]]
}

// homeLists computes the absolute forms of the home-relative lists.
func homeLists(home string) map[string][]string {
	m := map[string][]string{}
	if home == "" {
		return m
	}
	for _, rel := range [][]string{homeSecrets, homeHistory, homePersistence} {
		out := make([]string, 0, len(rel))
		for _, r := range rel {
			out = append(out, home+"/"+r)
		}
		m[rel[0]] = out
	}
	return m
}

func anyUnder(p string, dirs []string) bool {
	for _, d := range dirs {
		if under(p, d) {
			return true
		}
	}
	return false
}

func anyAncestor(p string, dirs []string) bool {
	for _, d := range dirs {
		if ancestorOf(p, d) {
			return true
		}
	}
	return false
}

func (j *judge) isProtected(p string, tree bool) bool {
	for _, pr := range j.p.protected {
		if under(p, pr) || (tree && ancestorOf(p, pr)) {
			return true
		}
	}
	return false
}

// holdsProtected reports whether p is the directory right above a
// protected file, or that file's own directory tree.
func (j *judge) holdsProtected(p string) bool {
	for _, pr := range j.p.protected {
		if under(p, pr) || path.Dir(pr) == p || (strings.ContainsAny(p, "*?[") && elemMatch(path.Base(p), path.Base(path.Dir(pr))) && path.Dir(p) == path.Dir(path.Dir(pr))) {
			return true
		}
	}
	return false
}

func (j *judge) isSecret(p string) bool {
	if anyUnder(p, systemSecrets) {
		return true
	}
	base := path.Base(p)
	switch base {
	case "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "id_ecdsa_sk", "id_ed25519_sk":
		return true
	}
	if (base == ".env" || strings.HasPrefix(base, ".env.")) && !j.inWorkspace(p) {
		return true
	}
	if j.p.home == "" {
		return false
	}
	for _, s := range j.homePaths(homeSecrets) {
		if under(p, s) {
			if strings.HasSuffix(p, ".pub") || strings.HasSuffix(p, "/known_hosts") {
				return false
			}
			if strings.HasSuffix(s, "/.env") && strictlyUnder(p, j.p.workspace) {
				return false
			}
			return true
		}
	}
	return false
}

func (j *judge) inWorkspace(p string) bool { return strictlyUnder(p, j.p.workspace) && !mayEscape(p) }

func isTemp(p string) bool {
	for _, t := range tempDirs {
		if strictlyUnder(p, t) && p != t && !mayEscape(p) {
			return true
		}
	}
	return false
}

func isRawDevice(p string) bool {
	if !strings.HasPrefix(p, "/dev/") || anyUnder(p, benignDevices) {
		return false
	}
	return !strings.HasPrefix(p, "/dev/tcp/") && !strings.HasPrefix(p, "/dev/udp/")
}

func isNetDevice(p string) bool {
	return strings.HasPrefix(p, "/dev/tcp/") || strings.HasPrefix(p, "/dev/udp/")
}

// classify decides what touching p in the given way means; an empty
// category means the access is fine.
func (j *judge) classify(p string, acc access) (cat, reason string) {
	switch acc {
	case accRead, accReadTree:
		return j.classifyRead(p, acc == accReadTree)
	case accPerm:
		switch {
		case j.isProtected(p, false) || (j.isProtected(p, true) && !(j.p.home != "" && ancestorOf(p, j.p.home))):
			return "self_tamper", "changes permissions of nanobot's own files: " + p
		case j.inWorkspace(p) || isTemp(p):
			return "", ""
		}
		return "permissions", "changes permissions outside the workspace: " + p
	case accDelete:
		return j.classifyDelete(p)
	}
	return j.classifyWrite(p, acc == accWrite)
}

func (j *judge) classifyRead(p string, tree bool) (string, string) {
	switch {
	case j.isProtected(p, false):
		return "self_tamper", "reads nanobot's own config, database or binary: " + p
	case j.isSecret(p):
		return "secrets", "reads credentials or private data: " + p
	case isRawDevice(p) && p != "/dev/dri":
		return "raw_device", "reads a raw device: " + p
	case tree && (p == "/" || (j.p.home != "" && ancestorOf(p, j.p.home))):
		return "secrets", "reads a whole home directory tree: " + p
	case tree && j.holdsProtected(p):
		return "self_tamper", "reads the directory holding nanobot's own files: " + p
	case tree && (anyAncestor(p, j.homePaths(homeSecrets)) || anyAncestor(p, systemSecrets)):
		return "secrets", "reads a directory tree holding credentials: " + p
	}
	return "", ""
}

func (j *judge) classifyWrite(p string, overwrite bool) (string, string) {
	switch {
	case j.isProtected(p, false):
		return "self_tamper", "modifies nanobot's own config, database or binary: " + p
	case j.isSelfUnit(p):
		return "self_tamper", "changes nanobot's service unit: " + p
	case isNetDevice(p):
		return "exfiltration", "writes to a network socket: " + p
	case p == "/proc/sysrq-trigger":
		return "power", "writes to the kernel's sysrq trigger"
	case anyUnder(p, benignDevices):
		return "", ""
	case isRawDevice(p):
		return "raw_device", "writes to a raw device: " + p
	case j.inWorkspace(p) || isTemp(p):
		return "", ""
	case anyUnder(p, j.homePaths(homeHistory)) || anyUnder(p, logPaths):
		return "anti_forensics", "tampers with logs or shell history: " + p
	case under(p, "/etc/sudoers") || under(p, "/etc/sudoers.d"):
		return "system_config", "modifies sudo rules: " + p
	case j.p.home != "" && (under(p, j.p.home+"/.ssh/known_hosts") || under(p, j.p.home+"/.ssh/known_hosts2")):
		return "persistence", "changes which SSH servers this machine trusts: " + p
	case j.p.home != "" && under(p, j.p.home+"/.ssh/config"):
		return "persistence", "changes the SSH client's configuration, which can run commands: " + p
	case anyUnder(p, j.homePaths(homePersistence)) || anyUnder(p, systemPersistence):
		return "persistence", "modifies a file that runs code at login, boot or on schedule: " + p
	case j.isSecret(p):
		return "secrets", "modifies credentials: " + p
	case anyUnder(p, systemDirs) || p == "/":
		return "system_config", "modifies system files: " + p
	case overwrite:
		return "destroy_data", "overwrites a file outside the workspace: " + p
	case isDatabaseFile(p):
		return "destroy_data", "writes into another program's database outside the workspace: " + p
	}
	return "", ""
}

// unitDirs hold systemd units.
var unitDirs = []string{"/etc/systemd", "/lib/systemd", "/usr/lib/systemd", "/run/systemd"}

// isSelfUnit reports whether p is a service unit named after nanobot.
func (j *judge) isSelfUnit(p string) bool {
	dirs := unitDirs
	if j.p.home != "" {
		dirs = append(dirs, j.p.home+"/.config/systemd", j.p.home+"/.local/share/systemd")
	}
	if !anyUnder(p, dirs) {
		return false
	}
	for _, n := range j.p.selfNames {
		if containsWord(path.Base(p), n) {
			return true
		}
	}
	return false
}

func (j *judge) classifyDelete(p string) (string, string) {
	ws := j.p.workspace
	switch {
	case j.isProtected(p, false):
		return "self_tamper", "deletes nanobot's own config, database or binary: " + p
	case j.isSelfUnit(p):
		return "self_tamper", "deletes nanobot's service unit: " + p
	case anyUnder(p, j.homePaths(homeHistory)) || anyUnder(p, logPaths):
		return "anti_forensics", "deletes logs or shell history: " + p
	case isRawDevice(p):
		return "raw_device", "deletes a device node: " + p
	case p == "/" || (strings.Count(p, "/") == 1 && wildAll(p[1:])):
		return "destroy_data", "deletes the root filesystem"
	case ancestorOf(p, ws):
		return "destroy_data", "deletes the workspace or a parent of it: " + p
	case j.p.home != "" && ancestorOf(p, j.p.home):
		return "destroy_data", "deletes the home directory: " + p
	case j.holdsProtected(p):
		return "self_tamper", "deletes the directory holding nanobot's own files: " + p
	case j.inWorkspace(p):
		rel := strings.TrimPrefix(strings.TrimPrefix(p, ws), "/")
		if rel != "" && !strings.Contains(rel, "/") && wildAll(rel) {
			return "destroy_data", "deletes everything in the workspace: " + p
		}
		return "", ""
	case isTemp(p):
		for _, t := range tempDirs {
			if rel, ok := strings.CutPrefix(p, t+"/"); ok && !strings.Contains(rel, "/") && wildAll(rel) {
				return "destroy_data", "deletes everything in a shared temporary directory: " + p
			}
		}
		return "", ""
	case j.p.home != "" && ancestorOf(p, j.p.home):
		return "destroy_data", "deletes the home directory: " + p
	}
	return "destroy_data", "deletes files outside the workspace: " + p
}

// checkPath classifies a resolved path and records a finding; it returns
// the category ("" when fine).
func (c *call) checkPath(p string, acc access) string {
	cat, reason := c.j.classify(p, acc)
	if cat != "" {
		c.deny(cat, reason)
	}
	return cat
}

// checkArg resolves an argument and checks it; unknown paths are refused
// for destructive access.
func (c *call) checkArg(a arg, acc access) string {
	p, ok := c.j.resolve(a, c.sc)
	if ok && (acc == accRead || acc == accReadTree) && !c.j.inWorkspace(p) && !isTemp(p) && !anyUnder(p, benignDevices) && !anyUnder(p, softwareDirs) {
		c.ci.outside = true
	}
	if !ok {
		switch acc {
		case accDelete, accWrite:
			c.deny("destroy_data", "target path is only known at run time: "+a.text())
			return "destroy_data"
		case accPerm:
			c.deny("permissions", "target path is only known at run time: "+a.text())
			return "permissions"
		case accCreate:
			return ""
		}
		return c.checkUnknownRead(a, acc)
	}
	if acc == accDelete || acc == accWrite || acc == accPerm {
		if c.j.inWorkspace(p) {
			if real, err := Resolve(p); err == nil && real != p {
				p = real
			}
		}
	}
	return c.checkPath(p, acc)
}

// checkUnknownRead judges a read of a path with parts only known at run
// time, such as /proc/$(pgrep x)/environ: the unknown parts may be
// anything, so the path is refused when some value would make it a secret.
// Only paths whose first element is spelled out are judged this way.
func (c *call) checkUnknownRead(a arg, acc access) string {
	if acc != accRead && acc != accReadTree || a.glob || a.inherited && !a.subst {
		return "" // the environment is not the model's to choose
	}
	v := a.val
	if strings.HasPrefix(v, "~") {
		return ""
	}
	if !strings.HasPrefix(v, "/") {
		if c.sc.cwd == "" {
			return ""
		}
		v = c.sc.cwd + "/" + v
	}
	first, _, _ := strings.Cut(strings.TrimPrefix(v, "/"), "/")
	if first == "" || strings.Contains(first, unknownMark) {
		return ""
	}
	pat := path.Clean(strings.ReplaceAll(v, unknownMark, "*"))
	if rest, ok := strings.CutPrefix(pat, "/proc/*/"); ok {
		// A process id found at run time: only the per-process files
		// that hold secrets matter, not whatever else /proc holds.
		pat = "/proc/self/" + rest
	}
	cat, reason := c.j.classify(pat, acc)
	if cat != "secrets" {
		return ""
	}
	if i := strings.LastIndex(reason, ": "); i >= 0 {
		reason = reason[:i+2] + a.text()
	}
	c.deny(cat, reason)
	return cat
}
