package safety

import (
	"strings"
)

func registerSystemHandlers(reg func(func(*call), ...string)) {
	reg((*call).power, "shutdown", "reboot", "halt", "poweroff", "telinit", "kexec", "pm-suspend", "pm-hibernate",
		"pm-powerdown", "rtcwake", "systemd-halt", "systemd-reboot", "systemd-poweroff")
	reg((*call).initCmd, "init")
	reg((*call).systemctl, "systemctl")
	reg((*call).service, "service", "rc-service", "sv", "supervisorctl", "pm2", "launchctl", "initctl", "rc-update",
		"update-rc.d", "chkconfig", "openrc")
	reg((*call).loginctl, "loginctl")
	reg((*call).kill, "kill")
	reg((*call).killall, "pkill", "killall", "killall5", "skill", "slay")
	reg((*call).sysConfig, "sysctl", "hostnamectl", "timedatectl", "localectl", "modprobe", "insmod", "rmmod",
		"iptables", "ip6tables", "iptables-legacy", "iptables-restore", "ip6tables-restore", "nft", "ufw", "firewall-cmd",
		"ip", "ifconfig", "route", "nmcli", "resolvectl", "tc", "ethtool", "brctl", "update-alternatives", "grub-install",
		"update-grub", "grub-mkconfig", "grub2-mkconfig", "efibootmgr", "update-initramfs", "mkinitcpio", "dracut",
		"ldconfig", "setenforce", "aa-disable", "aa-complain", "apparmor_parser", "locale-gen", "dpkg-reconfigure",
		"hostname", "date", "hwclock", "ifdown", "ifup", "netplan", "wg", "wg-quick", "iwconfig", "rfkill", "sysrq", "update-ca-certificates")
	reg((*call).crontab, "crontab")
	reg((*call).atCmd, "at", "batch")
	reg((*call).accounts, "passwd", "chpasswd", "usermod", "useradd", "userdel", "adduser", "deluser", "groupadd",
		"groupdel", "groupmod", "gpasswd", "vipw", "vigr", "visudo", "newusers", "chsh", "chfn", "chage", "newgrp",
		"setcap", "capsh", "sudoedit", "pwconv", "grpconv", "addgroup", "delgroup")
	reg((*call).journalctl, "journalctl")
	reg((*call).dmesg, "dmesg")
	reg((*call).auditctl, "auditctl", "auditd", "wevtutil", "logrotate")
	reg((*call).docker, "docker", "podman", "nerdctl", "docker-compose", "podman-compose")
	reg((*call).kubectl, "kubectl", "oc", "k3s", "microk8s")
	reg((*call).helm, "helm", "minikube", "kind", "k3d")
	reg((*call).lxc, "lxc", "incus")
	reg((*call).git, "git")
	reg((*call).gh, "gh", "glab")
	reg((*call).secretTool, "gpg", "gpg2", "security", "secret-tool", "pass", "keyctl", "vault", "op", "bw",
		"getent", "unshadow", "john", "hashcat", "mimipenguin", "lazagne", "gcore", "tcpdump", "tshark", "dumpcap",
		"docker-credential-desktop", "docker-credential-pass", "docker-credential-secretservice", "aws", "gcloud", "az",
		"gsutil", "rclone", "s3cmd")
	reg((*call).tunnel, "ngrok", "cloudflared", "lt", "localtunnel", "bore", "frpc", "chisel", "serveo", "pagekite", "tailscale", "zrok")
	reg((*call).listener, "iperf", "iperf3", "http-server", "httpd", "jupyter", "jupyter-notebook", "jupyter-lab")
	reg((*call).gtfo, "xterm")
}

func (c *call) power() {
	if c.name == "shutdown" && len(c.argv) > 1 && c.argv[1].val == "-k" {
		return
	}
	c.deny("power", c.name+" stops or restarts the machine")
}

func (c *call) initCmd() {
	if len(c.argv) > 1 {
		c.deny("power", "init changes the run level")
	}
}

func (c *call) verb(spec optSpec) (string, []arg, []opt) {
	opts, ops := c.split(spec)
	if len(ops) == 0 {
		return "", nil, opts
	}
	return ops[0].val, ops[1:], opts
}

func (c *call) systemctl() {
	v, _, _ := c.verb(optSpec{short: "HMtpsnoT", long: []string{"host", "machine", "type", "property", "signal", "lines", "output", "state", "kill-whom", "kill-who", "job-mode", "root", "what", "timestamp", "boot-loader-entry", "boot-loader-menu"}})
	switch v {
	case "", "status", "show", "cat", "list-units", "list-unit-files", "list-timers", "list-sockets", "list-dependencies",
		"list-jobs", "list-machines", "list-automounts", "list-paths", "is-active", "is-enabled", "is-failed",
		"is-system-running", "help", "get-default", "show-environment", "--version", "whoami":
		return
	case "poweroff", "reboot", "halt", "kexec", "suspend", "hibernate", "hybrid-sleep", "suspend-then-hibernate",
		"emergency", "rescue", "default", "soft-reboot", "exit":
		c.deny("power", "systemctl "+v+" stops or restarts the machine")
	case "enable", "reenable", "link", "preset", "preset-all", "add-wants", "add-requires", "edit":
		c.deny("persistence", "systemctl "+v+" makes a unit start automatically")
	case "set-default", "set-property", "set-environment", "unset-environment", "import-environment":
		c.deny("system_config", "systemctl "+v+" changes system configuration")
	default:
		c.deny("services", "systemctl "+v+" changes running services")
	}
}

func (c *call) service() {
	args := argTexts(c.argv[1:])
	joined := " " + strings.Join(args, " ") + " "
	switch c.name {
	case "service", "rc-service", "sv":
		if len(args) == 0 || strings.Contains(joined, " status ") || strings.Contains(joined, "--status-all") {
			return
		}
	case "supervisorctl", "initctl":
		if len(args) == 0 || strings.HasPrefix(joined, " status") || strings.HasPrefix(joined, " avail") || strings.HasPrefix(joined, " list") {
			return
		}
	case "pm2":
		if len(args) == 0 || strings.HasPrefix(joined, " list ") || strings.HasPrefix(joined, " ls ") || strings.HasPrefix(joined, " logs") || strings.HasPrefix(joined, " status") || strings.HasPrefix(joined, " show") || strings.HasPrefix(joined, " start ") || strings.HasPrefix(joined, " monit") {
			return
		}
		if strings.HasPrefix(joined, " startup") || strings.HasPrefix(joined, " save") {
			c.deny("persistence", "pm2 "+args[0]+" starts processes at boot")
			return
		}
	case "launchctl":
		if len(args) == 0 || args[0] == "list" || args[0] == "print" {
			return
		}
		if args[0] == "load" || args[0] == "bootstrap" || args[0] == "enable" {
			c.deny("persistence", "launchctl "+args[0]+" installs a service")
			return
		}
	case "rc-update", "update-rc.d", "chkconfig":
		if len(args) == 0 || args[0] == "show" || args[0] == "--list" {
			return
		}
		c.deny("persistence", c.name+" changes which services start at boot")
		return
	}
	c.deny("services", c.name+" changes running services")
}

func (c *call) loginctl() {
	v, _, _ := c.verb(optSpec{short: "HMps", long: []string{"host", "machine", "property", "signal"}})
	switch v {
	case "poweroff", "reboot", "suspend", "hibernate", "halt":
		c.deny("power", "loginctl "+v)
	case "terminate-session", "terminate-user", "kill-session", "kill-user", "terminate-seat", "disable-linger", "enable-linger":
		if v == "enable-linger" {
			c.deny("persistence", "loginctl enable-linger keeps user services running")
			return
		}
		c.deny("services", "loginctl "+v+" ends sessions")
	}
}

func (c *call) kill() {
	c.noPathScan = true
	args := c.argv[1:]
	for k := 0; k < len(args); k++ {
		v := args[k].val
		if v == "-l" || v == "-L" || v == "--list" || v == "--table" {
			return
		}
		if v == "-s" || v == "-n" || v == "--signal" {
			k++
			continue
		}
		if v == "--" {
			continue
		}
		if strings.HasPrefix(v, "-") && k == 0 && v != "-1" {
			continue // signal
		}
		if strings.Contains(v, "%ppid") {
			c.deny("self_tamper", "kills the process that runs nanobot")
			return
		}
		if strings.HasPrefix(args[k].text(), "%") {
			continue
		}
		switch {
		case !args[k].known():
			if strings.Contains(v, "%ppid") {
				c.deny("self_tamper", "kills the process that runs nanobot")
				return
			}
			c.deny("services", "kills processes only known at run time")
		case v == "%ppid":
			c.deny("self_tamper", "kills the process that runs nanobot")
		case v == "1":
			c.deny("services", "kills init (pid 1)")
		case v == "-1":
			c.deny("services", "kills every process")
		case v == "0":
			c.deny("services", "kills the whole process group")
		}
	}
}

func (c *call) killall() {
	c.noPathScan = true
	for _, a := range c.argv[1:] {
		if a.val == "-l" || a.val == "--list" || a.val == "-V" || a.val == "--version" {
			return
		}
	}
	if c.stopsOwnScript() {
		return
	}
	c.deny("services", c.name+" kills processes by name")
}

func (c *call) sysConfig() {
	args := argTexts(c.argv[1:])
	joined := " " + strings.Join(args, " ") + " "
	ro := false
	switch c.name {
	case "sysctl":
		ro = !strings.Contains(joined, " -w ") && !strings.Contains(joined, "=") && !strings.Contains(joined, " -p") && !strings.Contains(joined, " --system ") && !strings.Contains(joined, " --load")
	case "hostnamectl", "timedatectl", "localectl":
		ro = len(args) == 0 || args[0] == "status" || strings.HasPrefix(args[0], "list") || args[0] == "show" || args[0] == "timesync-status"
	case "iptables", "ip6tables", "iptables-legacy":
		ro = strings.Contains(joined, " -L") || strings.Contains(joined, " -S") || strings.Contains(joined, " --list") || strings.Contains(joined, " -nL") || strings.Contains(joined, " -nvL") || strings.Contains(joined, " -vnL")
	case "nft":
		ro = len(args) > 0 && (args[0] == "list" || args[0] == "-a" && len(args) > 1 && args[1] == "list")
	case "ufw":
		ro = len(args) > 0 && (args[0] == "status" || args[0] == "app" && len(args) > 1 && args[1] == "list")
	case "firewall-cmd":
		ro = strings.Contains(joined, "--list") || strings.Contains(joined, "--state") || strings.Contains(joined, "--get-") || strings.Contains(joined, "--query")
	case "ip":
		ro = true
		for _, a := range args {
			switch a {
			case "add", "del", "delete", "set", "flush", "replace", "change", "append", "down", "up", "attach", "detach", "exec":
				ro = false
			}
		}
	case "ifconfig":
		ro = len(args) <= 1 || args[0] == "-a"
	case "route":
		ro = !strings.Contains(joined, " add ") && !strings.Contains(joined, " del ")
	case "nmcli", "resolvectl", "tc", "ethtool", "brctl", "wg", "iwconfig", "rfkill", "netplan":
		ro = len(args) == 0
		for _, w := range []string{"show", "status", "list", "-S", "-i", "-k", "query", "statistics", "get", "dump", "help", "monitor", "stats", "showconfs"} {
			if strings.Contains(joined, " "+w+" ") {
				ro = true
			}
		}
		for _, w := range []string{" down ", " delete ", " modify ", " add ", " off ", " disconnect ", " set ", " del ", " block ", " apply ", " revert ", " dns ", " domain ", " up "} {
			if strings.Contains(joined, w) {
				ro = false
			}
		}
	case "update-alternatives":
		ro = strings.Contains(joined, "--display") || strings.Contains(joined, "--list") || strings.Contains(joined, "--query") || strings.Contains(joined, "--get-selections")
	case "efibootmgr":
		ro = len(args) == 0 || joined == " -v "
	case "ldconfig":
		ro = strings.Contains(joined, " -p ") || strings.Contains(joined, "--print-cache")
	case "hostname":
		ro = len(args) == 0 || strings.HasPrefix(args[0], "-")
	case "date":
		ro = !strings.Contains(joined, " -s ") && !strings.Contains(joined, "--set")
		for _, a := range c.argv[1:] {
			c.scanOne(a, accRead)
		}
	case "hwclock":
		ro = !strings.Contains(joined, "--set") && !strings.Contains(joined, "-w") && !strings.Contains(joined, "--systohc") && !strings.Contains(joined, "--hctosys")
	case "modprobe":
		ro = strings.Contains(joined, " -n ") || strings.Contains(joined, "--dry-run") || strings.Contains(joined, " -c ") || strings.Contains(joined, "--show")
	}
	if ro {
		return
	}
	c.deny("system_config", c.name+" changes system configuration")
}

func (c *call) crontab() {
	c.noPathScan = true
	opts, ops := c.split(optSpec{short: "u", long: []string{"user"}})
	switch {
	case has(opts, "l"):
		return
	case has(opts, "r"):
		c.deny("system_config", "crontab -r removes scheduled jobs")
	default:
		c.deny("persistence", "crontab installs scheduled jobs")
	}
	for _, o := range ops {
		c.scanOne(o, accRead)
	}
}

func (c *call) atCmd() {
	for _, a := range c.argv[1:] {
		if a.val == "-l" || a.val == "-c" {
			return
		}
	}
	c.deny("persistence", c.name+" schedules a command to run later")
	if c.stdinText != nil {
		c.j.nested(c.owner, *c.stdinText, c.sc, c.name)
	}
}

func (c *call) accounts() {
	if c.name == "chage" && len(c.argv) > 1 && c.argv[1].val == "-l" {
		return
	}
	if c.name == "sudoedit" || c.name == "visudo" {
		if len(c.argv) > 1 && (c.argv[1].val == "-c" || c.argv[1].val == "--check") {
			return
		}
	}
	c.deny("privilege", c.name+" changes users, groups, passwords or capabilities")
}

func (c *call) journalctl() {
	for _, a := range c.argv[1:] {
		if strings.HasPrefix(a.val, "--vacuum") || a.val == "--rotate" || a.val == "--flush" || a.val == "--relinquish-var" {
			c.deny("anti_forensics", "journalctl "+a.val+" discards system logs")
			return
		}
	}
}

func (c *call) dmesg() {
	for _, a := range c.argv[1:] {
		if a.val == "-c" || a.val == "-C" || a.val == "--clear" || a.val == "--read-clear" || (strings.HasPrefix(a.val, "-") && !strings.HasPrefix(a.val, "--") && strings.ContainsAny(a.val, "cC")) {
			c.deny("anti_forensics", "dmesg clears the kernel log")
			return
		}
	}
}

func (c *call) auditctl() {
	args := " " + strings.Join(argTexts(c.argv[1:]), " ") + " "
	switch c.name {
	case "auditctl":
		if args == "  " || strings.Contains(args, " -l ") || strings.Contains(args, " -s ") {
			return
		}
		if strings.Contains(args, " -D ") || strings.Contains(args, " -e 0 ") || strings.Contains(args, " -e0 ") {
			c.deny("anti_forensics", "auditctl disables or clears audit rules")
			return
		}
		c.deny("system_config", "auditctl changes audit rules")
	case "wevtutil":
		c.deny("anti_forensics", "wevtutil clears event logs")
	case "logrotate":
		if strings.Contains(args, " -f ") || strings.Contains(args, "--force") {
			c.deny("anti_forensics", "forces log rotation")
		}
	default:
		c.deny("services", c.name+" controls the audit daemon")
	}
}

// docker judges container engines: read-only commands and builds are
// allowed, starting or removing containers is asked, breaking out of the
// container onto the host is refused.
func (c *call) docker() {
	c.noPathScan = true
	i, _ := parseOpts(c.argv, 1, optSpec{short: "Hcl", long: []string{"host", "context", "config", "log-level", "tlscacert", "tlscert", "tlskey"}})
	args := c.argv[i:]
	if c.name == "docker-compose" || c.name == "podman-compose" {
		args = append([]arg{litArg("compose")}, args...)
	}
	if len(args) == 0 {
		return
	}
	verb := args[0].val
	rest := args[1:]
	switch verb {
	case "container", "image", "volume", "network", "system", "compose", "buildx", "builder", "context", "plugin", "swarm", "service", "stack", "secret", "config", "node", "trust", "manifest", "machine":
		sub := ""
		k, _ := parseOpts(args, 1, optSpec{short: "fp", long: []string{"file", "project-name", "profile", "env-file", "project-directory"}})
		if k < len(args) {
			sub = args[k].val
			rest = args[k+1:]
		}
		verb = verb + " " + sub
	}
	switch verb {
	case "ps", "images", "logs", "inspect", "version", "info", "build", "top", "stats", "port", "diff", "history",
		"search", "events", "tag", "save", "help", "--version", "-v", "buildx build", "buildx ls", "builder ls",
		"container ls", "container list", "container inspect", "container logs", "container top", "container stats",
		"container port", "container diff", "image ls", "image list", "image inspect", "image history", "image build",
		"image save", "image tag", "volume ls", "volume list", "volume inspect", "network ls", "network list",
		"network inspect", "system df", "system info", "system events", "context ls", "context list", "context show",
		"context inspect", "compose ps", "compose logs", "compose config", "compose build", "compose ls", "compose images",
		"compose top", "compose version", "compose convert", "plugin ls", "manifest inspect", "buildx version", "compose ",
		"container ", "image ", "volume ", "network ", "system ":
		return
	case "run", "create", "exec", "container run", "container create", "container exec", "compose run", "compose exec",
		"compose up", "compose create", "service create":
		c.dockerRunFlags(rest)
		c.ask("containers", "starts a container")
		return
	case "login", "logout":
		c.ask("containers", "docker "+verb+" stores or removes registry credentials")
		return
	case "push", "image push", "compose push":
		c.ask("publish", "pushes an image to a registry")
		return
	}
	if strings.HasPrefix(verb, "secret ") {
		c.deny("secrets", "docker "+verb+" manages secrets")
		return
	}
	c.ask("containers", "docker "+verb+" changes containers, images or volumes")
}

// dockerRunFlags refuses the options that hand the host to a container.
func (c *call) dockerRunFlags(rest []arg) {
	for k := 0; k < len(rest); k++ {
		v := rest[k].val
		next := func() string {
			if _, val, ok := strings.Cut(v, "="); ok {
				return val
			}
			if k+1 < len(rest) {
				return rest[k+1].val
			}
			return ""
		}
		name, _, _ := strings.Cut(v, "=")
		switch name {
		case "--privileged":
			c.deny("privilege", "runs a privileged container")
		case "--pid", "--ipc", "--userns", "--uts", "--cgroupns":
			if next() == "host" {
				c.deny("privilege", "shares the host "+strings.TrimPrefix(name, "--")+" namespace with a container")
			}
		case "--cap-add":
			switch strings.ToUpper(strings.TrimPrefix(strings.ToUpper(next()), "CAP_")) {
			case "ALL", "SYS_ADMIN", "SYS_PTRACE", "SYS_MODULE", "DAC_READ_SEARCH", "SYS_RAWIO", "DAC_OVERRIDE":
				c.deny("privilege", "gives a container dangerous capabilities")
			}
		case "--security-opt":
			if strings.Contains(next(), "unconfined") || strings.Contains(next(), "no-new-privileges=false") {
				c.deny("privilege", "disables container confinement")
			}
		case "--device":
			c.deny("raw_device", "passes a host device into a container: "+next())
		case "-v", "--volume", "--mount":
			c.dockerMount(name, next())
		}
		if strings.HasPrefix(v, "-v") && len(v) > 2 && v != "-v" {
			c.dockerMount("-v", v[2:])
		}
		if !strings.HasPrefix(v, "-") && k > 0 && !strings.HasPrefix(rest[k-1].val, "-") {
			break // image name reached; the rest is the container's command
		}
	}
}

func (c *call) dockerMount(opt, spec string) {
	src := spec
	if opt == "--mount" {
		src = ""
		for _, f := range strings.Split(spec, ",") {
			if k, v, ok := strings.Cut(f, "="); ok && (k == "source" || k == "src") {
				src = v
			}
		}
	} else if s, _, ok := strings.Cut(spec, ":"); ok {
		src = s
	} else {
		return // anonymous volume
	}
	if src == "" || !(strings.HasPrefix(src, "/") || strings.HasPrefix(src, ".") || strings.HasPrefix(src, "~") || strings.Contains(src, unknownMark)) {
		return // named volume
	}
	p, ok := c.j.resolve(arg{val: src}, c.sc)
	switch {
	case !ok:
		c.deny("privilege", "mounts a host path only known at run time into a container")
	case p == "/" || strings.Contains(p, "docker.sock") || strings.Contains(p, "containerd.sock") || strings.Contains(p, "podman.sock"):
		c.deny("privilege", "mounts the host root or the container engine socket: "+p)
	case c.j.isProtected(p, true):
		c.deny("self_tamper", "mounts nanobot's own files into a container: "+p)
	case c.j.isSecret(p) || (c.j.p.home != "" && ancestorOf(p, c.j.p.home)) || anyAncestor(p, c.j.homePaths(homeSecrets)):
		c.deny("secrets", "mounts credentials or the home directory into a container: "+p)
	case c.j.inWorkspace(p) || isTemp(p):
	case anyUnder(p, systemDirs) || isRawDevice(p):
		c.deny("privilege", "mounts system directories into a container: "+p)
	}
}

func (c *call) kubectl() {
	c.noPathScan = true
	_, ops := c.split(optSpec{short: "nolcfLsx", long: []string{"namespace", "output", "selector", "context", "cluster", "user", "kubeconfig", "filename", "server", "token", "template", "container", "field-selector", "sort-by", "type", "from-literal", "from-file", "image", "replicas", "port"}})
	if len(ops) == 0 {
		return
	}
	verb := ops[0].val
	joined := " " + strings.Join(argTexts(c.argv[1:]), " ") + " "
	switch verb {
	case "get", "describe":
		if strings.Contains(joined, " secret") {
			c.deny("secrets", "reads cluster secrets")
		}
		return
	case "config":
		if strings.Contains(joined, "--raw") {
			c.deny("secrets", "prints cluster credentials")
		}
		if strings.Contains(joined, " view ") || strings.Contains(joined, " get-") || strings.Contains(joined, " current-context ") {
			return
		}
	case "logs", "top", "explain", "version", "api-resources", "api-versions", "cluster-info", "auth", "diff", "wait", "events", "completion", "plugin", "kustomize":
		return
	}
	c.ask("containers", "kubectl "+verb+" changes the cluster")
}

// lxc judges LXD and Incus: privileged containers and host disks handed
// to a container are root on the host; other changes are asked about.
func (c *call) lxc() {
	c.noPathScan = true
	joined := " " + strings.Join(argTexts(c.argv[1:]), " ") + " "
	switch {
	case strings.Contains(joined, "security.privileged=true") || strings.Contains(joined, "security.privileged true") ||
		strings.Contains(joined, " source=/ ") || strings.Contains(joined, "raw.lxc") || strings.Contains(joined, "security.nesting=true"):
		c.deny("privilege", c.name+" gives a container the host")
	case len(c.argv) < 2:
	default:
		switch c.argv[1].val {
		case "list", "ls", "info", "version", "remote", "image", "profile", "config", "storage", "network", "query", "monitor", "help":
			if c.argv[1].val != "config" || strings.Contains(joined, " show ") || strings.Contains(joined, " get ") {
				return
			}
		}
		c.ask("containers", c.name+" "+c.argv[1].val+" changes containers")
	}
}

func (c *call) helm() {
	c.noPathScan = true
	_, ops := c.split(optSpec{short: "nfo", long: []string{"namespace", "values", "set", "output", "kube-context", "version"}})
	if len(ops) == 0 {
		return
	}
	if ops[0].val == "repo" && len(ops) > 1 && ops[1].val == "add" {
		c.ask("package_install", c.name+" repo add adds a chart repository")
		return
	}
	switch ops[0].val {
	case "list", "ls", "status", "template", "lint", "show", "search", "history", "get", "version", "env", "repo", "dependency", "package", "verify":
		return
	}
	c.ask("containers", c.name+" "+ops[0].val+" changes the cluster")
}

// git allows local work and asks for pushes; force pushes and remote
// deletions are refused.
func (c *call) git() {
	c.noPathScan = true
	g := parseGit(c.argv[1:])
	for _, kv := range g.configs {
		c.gitConfigValue(kv.val)
	}
	args, dir := g.args, g.dir
	if len(args) == 0 {
		return
	}
	verb := args[0].val
	rest := args[1:]
	if len(rest) > 0 && rest[0].val == "--help" {
		return // git turns "git VERB --help" into "git help VERB"
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
		return
	case "status", "log", "diff", "show", "blame", "grep", "rev-parse", "describe", "shortlog", "branch", "tag",
		"remote", "fetch", "ls-remote", "reflog", "cat-file", "ls-tree", "whatchanged", "version", "help", "count-objects",
		"for-each-ref", "merge-base", "name-rev", "rev-list", "show-ref", "var", "check-ignore", "worktree", "bisect",
		"range-diff", "cherry", "notes", "format-patch", "archive", "bundle", "fsck", "verify-commit", "verify-tag", "lfs":
		return
	case "ls-files", "diff-files", "diff-index":
		if inside {
			c.ci.lister = wd
		}
		return
	case "clone", "submodule":
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
		return
	case "config":
		c.gitConfig(rest)
		return
	case "credential", "credential-store", "credential-cache":
		c.deny("secrets", "git "+verb+" reveals stored credentials")
		return
	case "daemon", "instaweb":
		c.ask("network_listener", "git "+verb+" serves repositories on the network")
		return
	case "send-email", "request-pull":
		c.ask("git_remote", "git "+verb+" sends changes out")
		return
	}
	if !inside {
		if !wdOK {
			c.deny("destroy_data", "git "+verb+" in a directory only known at run time")
			return
		}
		switch verb {
		case "clean", "reset", "checkout", "restore", "rm", "stash", "switch", "merge", "rebase", "pull", "am", "apply", "mv", "gc", "prune", "filter-branch", "filter-repo", "commit", "init", "add", "update-ref", "cherry-pick", "revert":
			c.deny("destroy_data", "git "+verb+" changes a repository outside the workspace: "+wd)
		}
	}
}

func splitArgs(args []arg, spec optSpec) ([]opt, []arg) {
	c := &call{argv: append([]arg{litArg("x")}, args...)}
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

func (c *call) gh() {
	c.noPathScan = true
	args := argTexts(c.argv[1:])
	if len(args) == 0 {
		return
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
}

// secretTool judges tools whose purpose is to read or move credentials,
// and cloud CLIs.
func (c *call) secretTool() {
	args := argTexts(c.argv[1:])
	joined := " " + strings.Join(args, " ") + " "
	switch c.name {
	case "gpg", "gpg2":
		if strings.Contains(joined, "--export-secret") || strings.Contains(joined, "--export-ssh-key") {
			c.deny("secrets", "exports private keys")
		}
	case "security":
		if strings.Contains(joined, "find-generic-password") || strings.Contains(joined, "find-internet-password") || strings.Contains(joined, "dump-keychain") || strings.Contains(joined, "export") {
			c.deny("secrets", "reads the keychain")
		}
	case "secret-tool", "keyctl", "vault", "op", "bw", "docker-credential-desktop", "docker-credential-pass", "docker-credential-secretservice":
		if len(args) == 0 || args[0] == "--help" || args[0] == "version" || args[0] == "--version" || args[0] == "status" {
			return
		}
		c.deny("secrets", c.name+" reads stored secrets")
	case "pass":
		if len(args) > 0 && (args[0] == "ls" || args[0] == "--help" || args[0] == "version" || args[0] == "init" || args[0] == "git") {
			return
		}
		c.deny("secrets", "reads the password store")
	case "getent":
		if strings.Contains(joined, " shadow ") || strings.Contains(joined, " gshadow ") {
			c.deny("secrets", "reads password hashes")
		}
	case "unshadow", "john", "hashcat", "mimipenguin", "lazagne":
		c.deny("secrets", c.name+" extracts or cracks passwords")
	case "gcore":
		c.deny("secrets", "dumps process memory")
	case "tcpdump", "tshark", "dumpcap":
		for _, a := range args {
			if a == "-D" || a == "--list-interfaces" || a == "-h" || a == "--version" || a == "-r" {
				return
			}
		}
		c.deny("secrets", c.name+" captures network traffic")
	case "aws", "gcloud", "az", "gsutil", "rclone", "s3cmd":
		c.cloud(args, joined)
	}
}

func (c *call) cloud(args []string, joined string) {
	c.noPathScan = true
	remote := func(s string) bool {
		return strings.HasPrefix(s, "s3://") || strings.HasPrefix(s, "gs://") || strings.HasPrefix(s, "az://") ||
			strings.HasPrefix(s, "https://") || (c.name == "rclone" && strings.Contains(s, ":") && !strings.HasPrefix(s, "/"))
	}
	switch {
	case strings.Contains(joined, " configure get ") || strings.Contains(joined, " configure export-credentials") ||
		strings.Contains(joined, "get-secret-value") || strings.Contains(joined, "--with-decryption") ||
		strings.Contains(joined, "print-access-token") || strings.Contains(joined, "print-identity-token") ||
		strings.Contains(joined, "get-session-token") || strings.Contains(joined, "create-access-key") ||
		strings.Contains(joined, "keyvault secret show") || strings.Contains(joined, "get-login-password") ||
		strings.Contains(joined, " config show ") && c.name == "rclone", cloudPrintsCredentials(args):
		c.deny("secrets", c.name+" prints cloud credentials")
		return
	}
	for _, a := range args {
		if !strings.HasPrefix(a, "-") && isDestructiveWord(a) || a == "--delete" || a == "--delete-removed" || a == "--delete-after" ||
			c.name == "rclone" && (a == "sync" || a == "dedupe" || a == "cleanup") {
			c.remote(c.name + " " + a + " deletes cloud resources or data")
			break
		}
	}
	var ops []string
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			ops = append(ops, a)
		}
	}
	// Files go from the operands after the transfer verb to the last one.
	upload := false
	for k, o := range ops {
		switch o {
		case "cp", "sync", "mv", "copy", "move", "put", "upload", "upload-batch", "rsync", "copyto", "moveto", "mput":
		default:
			continue
		}
		xs := ops[k+1:]
		if len(xs) >= 2 && remote(xs[len(xs)-1]) {
			for _, s := range xs[:len(xs)-1] {
				upload = upload || !remote(s)
			}
		}
		if len(xs) == 1 && (o == "put" || o == "upload") && !remote(xs[0]) {
			upload = true
		}
		break
	}
	if upload {
		c.deny("exfiltration", c.name+" uploads local files to cloud storage")
	}
}

func (c *call) tunnel() {
	if c.name == "tailscale" {
		args := " " + strings.Join(argTexts(c.argv[1:]), " ") + " "
		if !strings.Contains(args, " funnel ") && !strings.Contains(args, " serve ") {
			return
		}
	}
	c.deny("reverse_shell", c.name+" exposes this machine to the internet through a tunnel")
}

func (c *call) listener() {
	args := " " + strings.Join(argTexts(c.argv[1:]), " ") + " "
	switch c.name {
	case "iperf", "iperf3":
		if !strings.Contains(args, " -s ") && !strings.Contains(args, " --server ") {
			return
		}
	case "jupyter", "jupyter-notebook", "jupyter-lab":
		if !strings.Contains(args, "0.0.0.0") && !strings.Contains(args, "--ip=*") && !strings.Contains(args, "::") && !listensExplicitly(c.argv[1:]) {
			return
		}
	}
	c.ask("network_listener", c.name+" listens for network connections")
}

func (c *call) gtfo() {
	for _, a := range c.argv[1:] {
		if a.val == "-display" {
			c.deny("reverse_shell", "xterm to a remote display")
		}
	}
}
