package safety

import (
	"strings"
)

func registerSystemHandlers(reg func(handler, ...string)) {
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
}

func (c *call) power() outcome {
	if c.name == "shutdown" && len(c.argv) > 1 && c.argv[1].val == "-k" {
		return genericScan
	}
	c.deny("power", c.name+" stops or restarts the machine")
	return genericScan
}

func (c *call) initCmd() outcome {
	if len(c.argv) > 1 {
		c.deny("power", "init changes the run level")
	}
	return genericScan
}

func (c *call) verb(spec optSpec) (string, []arg, []opt) {
	opts, ops := c.split(spec)
	if len(ops) == 0 {
		return "", nil, opts
	}
	return ops[0].val, ops[1:], opts
}

func (c *call) systemctl() outcome {
	v, _, _ := c.verb(optSpec{short: "HMtpsnoT", long: []string{"host", "machine", "type", "property", "signal", "lines", "output", "state", "kill-whom", "kill-who", "job-mode", "root", "what", "timestamp", "boot-loader-entry", "boot-loader-menu"}})
	switch v {
	case "", "status", "show", "cat", "list-units", "list-unit-files", "list-timers", "list-sockets", "list-dependencies",
		"list-jobs", "list-machines", "list-automounts", "list-paths", "is-active", "is-enabled", "is-failed",
		"is-system-running", "help", "get-default", "show-environment", "--version", "whoami":
		return genericScan
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
	return genericScan
}

func (c *call) service() outcome {
	args := argTexts(c.argv[1:])
	joined := " " + strings.Join(args, " ") + " "
	switch c.name {
	case "service", "rc-service", "sv":
		if len(args) == 0 || strings.Contains(joined, " status ") || strings.Contains(joined, "--status-all") {
			return genericScan
		}
	case "supervisorctl", "initctl":
		if len(args) == 0 || strings.HasPrefix(joined, " status") || strings.HasPrefix(joined, " avail") || strings.HasPrefix(joined, " list") {
			return genericScan
		}
	case "pm2":
		if len(args) == 0 || strings.HasPrefix(joined, " list ") || strings.HasPrefix(joined, " ls ") || strings.HasPrefix(joined, " logs") || strings.HasPrefix(joined, " status") || strings.HasPrefix(joined, " show") || strings.HasPrefix(joined, " start ") || strings.HasPrefix(joined, " monit") {
			return genericScan
		}
		if strings.HasPrefix(joined, " startup") || strings.HasPrefix(joined, " save") {
			c.deny("persistence", "pm2 "+args[0]+" starts processes at boot")
			return genericScan
		}
	case "launchctl":
		if len(args) == 0 || args[0] == "list" || args[0] == "print" {
			return genericScan
		}
		if args[0] == "load" || args[0] == "bootstrap" || args[0] == "enable" {
			c.deny("persistence", "launchctl "+args[0]+" installs a service")
			return genericScan
		}
	case "rc-update", "update-rc.d", "chkconfig":
		if len(args) == 0 || args[0] == "show" || args[0] == "--list" {
			return genericScan
		}
		c.deny("persistence", c.name+" changes which services start at boot")
		return genericScan
	}
	c.deny("services", c.name+" changes running services")
	return genericScan
}

func (c *call) loginctl() outcome {
	v, _, _ := c.verb(optSpec{short: "HMps", long: []string{"host", "machine", "property", "signal"}})
	switch v {
	case "poweroff", "reboot", "suspend", "hibernate", "halt":
		c.deny("power", "loginctl "+v)
	case "terminate-session", "terminate-user", "kill-session", "kill-user", "terminate-seat", "disable-linger", "enable-linger":
		if v == "enable-linger" {
			c.deny("persistence", "loginctl enable-linger keeps user services running")
			return genericScan
		}
		c.deny("services", "loginctl "+v+" ends sessions")
	}
	return genericScan
}

func (c *call) kill() outcome {
	args := c.argv[1:]
	for k := 0; k < len(args); k++ {
		v := args[k].val
		if v == "-l" || v == "-L" || v == "--list" || v == "--table" {
			return judgedArgs
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
			return judgedArgs
		}
		if strings.HasPrefix(args[k].text(), "%") {
			continue
		}
		switch {
		case !args[k].known():
			if strings.Contains(v, "%ppid") {
				c.deny("self_tamper", "kills the process that runs nanobot")
				return judgedArgs
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
	return judgedArgs
}

func (c *call) killall() outcome {
	for _, a := range c.argv[1:] {
		if a.val == "-l" || a.val == "--list" || a.val == "-V" || a.val == "--version" {
			return judgedArgs
		}
	}
	if c.stopsOwnScript() {
		return judgedArgs
	}
	c.deny("services", c.name+" kills processes by name")
	return judgedArgs
}

func (c *call) sysConfig() outcome {
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
		return genericScan
	}
	c.deny("system_config", c.name+" changes system configuration")
	return genericScan
}

func (c *call) crontab() outcome {
	opts, ops := c.split(optSpec{short: "u", long: []string{"user"}})
	switch {
	case has(opts, "l"):
		return judgedArgs
	case has(opts, "r"):
		c.deny("system_config", "crontab -r removes scheduled jobs")
	default:
		c.deny("persistence", "crontab installs scheduled jobs")
	}
	for _, o := range ops {
		c.scanOne(o, accRead)
	}
	return judgedArgs
}

func (c *call) atCmd() outcome {
	for _, a := range c.argv[1:] {
		if a.val == "-l" || a.val == "-c" {
			return genericScan
		}
	}
	c.deny("persistence", c.name+" schedules a command to run later")
	if c.stdinText != nil {
		c.j.nested(c.owner, *c.stdinText, c.sc, c.name)
	}
	return genericScan
}

func (c *call) accounts() outcome {
	if c.name == "chage" && len(c.argv) > 1 && c.argv[1].val == "-l" {
		return genericScan
	}
	if c.name == "sudoedit" || c.name == "visudo" {
		if len(c.argv) > 1 && (c.argv[1].val == "-c" || c.argv[1].val == "--check") {
			return genericScan
		}
	}
	c.deny("privilege", c.name+" changes users, groups, passwords or capabilities")
	return genericScan
}

func (c *call) journalctl() outcome {
	for _, a := range c.argv[1:] {
		if strings.HasPrefix(a.val, "--vacuum") || a.val == "--rotate" || a.val == "--flush" || a.val == "--relinquish-var" {
			c.deny("anti_forensics", "journalctl "+a.val+" discards system logs")
			return genericScan
		}
	}
	return genericScan
}

func (c *call) dmesg() outcome {
	for _, a := range c.argv[1:] {
		if a.val == "-c" || a.val == "-C" || a.val == "--clear" || a.val == "--read-clear" || (strings.HasPrefix(a.val, "-") && !strings.HasPrefix(a.val, "--") && strings.ContainsAny(a.val, "cC")) {
			c.deny("anti_forensics", "dmesg clears the kernel log")
			return genericScan
		}
	}
	return genericScan
}

func (c *call) auditctl() outcome {
	args := " " + strings.Join(argTexts(c.argv[1:]), " ") + " "
	switch c.name {
	case "auditctl":
		if args == "  " || strings.Contains(args, " -l ") || strings.Contains(args, " -s ") {
			return genericScan
		}
		if strings.Contains(args, " -D ") || strings.Contains(args, " -e 0 ") || strings.Contains(args, " -e0 ") {
			c.deny("anti_forensics", "auditctl disables or clears audit rules")
			return genericScan
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
	return genericScan
}
