package safety

import (
	"strings"
)

// Desktop and session settings changed through their own tools, and the
// system bus driven directly: the same effects as editing the files or
// running the commands they stand for.

func registerSettingsHandlers(reg func(handler, ...string)) {
	reg((*call).gsettings, "gsettings", "dconf", "defaults", "kwriteconfig5", "kwriteconfig6", "xfconf-query")
	reg((*call).dbus, "dbus-send", "gdbus", "busctl", "qdbus")
}

func (c *call) gsettings() outcome {
	_, ops := c.split(optSpec{short: "cpt", long: []string{"schemadir", "file", "group", "key", "channel", "property", "type"}})
	verb := ""
	if len(ops) > 0 {
		verb = ops[0].val
	}
	switch c.name {
	case "gsettings":
		if verb != "set" && verb != "reset" && verb != "reset-recursively" {
			return genericScan
		}
	case "dconf":
		if verb != "write" && verb != "reset" && verb != "load" && verb != "update" {
			return genericScan
		}
	case "defaults":
		if verb != "write" && verb != "delete" && verb != "import" {
			return genericScan
		}
	case "xfconf-query":
		if !c.hasAnyOpt("-s", "--set", "-r", "--reset", "-n", "--create") {
			return genericScan
		}
	}
	c.deny("system_config", c.name+" changes desktop or session settings")
	return genericScan
}

// dbus judges method calls on the system and session buses: power,
// services, accounts and the like are what the corresponding commands do.
func (c *call) dbus() outcome {
	joined := strings.ToLower(strings.Join(argTexts(c.argv[1:]), " "))
	switch {
	case c.name == "busctl" && (strings.HasPrefix(joined, "list") || strings.HasPrefix(joined, "status") || strings.HasPrefix(joined, "tree") || strings.HasPrefix(joined, "introspect") || strings.HasPrefix(joined, "get-property")):
		return genericScan
	case containsAny(joined, "poweroff", "reboot", "halt", "suspend", "hibernate", "hybridsleep", "kexec"):
		c.deny("power", c.name+" asks the system to power off, reboot or suspend")
	case containsAny(joined, "stopunit", "restartunit", "killunit", "startunit", "reloadunit", "tryrestartunit", "disableunitfiles", "maskunitfiles", "enableunitfiles"):
		c.deny("services", c.name+" controls system services over D-Bus")
	case containsAny(joined, "org.freedesktop.accounts", "createuser", "setpassword", "deleteuser", "polkit"):
		c.deny("privilege", c.name+" changes user accounts or authorisations over D-Bus")
	case containsAny(joined, "setstaticalhostname", "settimezone", "settime", "setlocale", "org.freedesktop.hostname1", "org.freedesktop.timedate1"):
		c.deny("system_config", c.name+" changes system settings over D-Bus")
	}
	return genericScan
}

func containsAny(s string, words ...string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}
