package safety

import (
	"slices"
	"strings"
)

// baseEnv are the variables every command gets from the daemon's
// environment, besides the LC_* ones: where programs are, whose home and
// login they run under, language, time zone and terminal, the temporary
// directory and where the TLS certificates are. None of them names or
// holds a credential; everything else has to be named by the owner.
var baseEnv = []string{
	"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TERM", "TMPDIR",
	"SSL_CERT_FILE", "SSL_CERT_DIR",
}

// BaseEnv returns the names of the variables CommandEnv always passes on
// ("LC_*" stands for every locale category).
func BaseEnv() []string { return append(slices.Clone(baseEnv), "LC_*") }

// CommandEnv returns the environment of a command run for the model: of env
// ("NAME=value" entries, the daemon's own) only the variables of BaseEnv and
// those named in pass; an entry of pass written "NAME=value" sets NAME to
// that value instead. A variable whose value contains one of secrets (those
// of at least four characters) is left out whatever its name, so a
// configured credential never reaches a command even when its variable is
// listed. Other credentials stay out because they are not listed: the
// environment is allowed, not scrubbed.
func CommandEnv(env, pass, secrets []string) []string {
	named := map[string]bool{}
	fixed := map[string]string{}
	var order []string
	for _, p := range pass {
		if name, value, ok := strings.Cut(p, "="); ok {
			if _, seen := fixed[name]; !seen {
				order = append(order, name)
			}
			fixed[name] = value
			continue
		}
		named[p] = true
	}
	out := make([]string, 0, len(baseEnv)+len(pass))
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		if _, ok := fixed[name]; ok || !(named[name] || passedByDefault(name)) || containsSecret(value, secrets) {
			continue
		}
		out = append(out, kv)
	}
	for _, name := range order {
		if v := fixed[name]; !containsSecret(v, secrets) {
			out = append(out, name+"="+v)
		}
	}
	return out
}

func passedByDefault(name string) bool {
	return slices.Contains(baseEnv, name) || strings.HasPrefix(name, "LC_")
}

// ScrubEnv returns a copy of env ("NAME=value" entries) without the
// variables a child process must not see: names ending in _TOKEN, _KEY or
// _SECRET, names containing PASSWORD, SECRET or CREDENTIAL, and any variable
// whose value contains one of secrets (those of at least four characters).
// A deny list misses credentials under other names (GH_PAT, DATABASE_URL);
// commands the model runs get CommandEnv instead.
func ScrubEnv(env []string, secrets []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		if sensitiveName(name) || containsSecret(value, secrets) {
			continue
		}
		out = append(out, kv)
	}
	return out
}

func sensitiveName(name string) bool {
	n := strings.ToUpper(name)
	switch {
	case strings.HasSuffix(n, "_TOKEN"), strings.HasSuffix(n, "_KEY"), strings.HasSuffix(n, "_SECRET"),
		n == "TOKEN", n == "KEY", n == "SECRET",
		strings.Contains(n, "PASSWORD"), strings.Contains(n, "PASSWD"), strings.Contains(n, "SECRET"),
		strings.Contains(n, "CREDENTIAL"), strings.Contains(n, "_TOKEN_"), strings.HasSuffix(n, "_KEY_ID"):
		return true
	}
	return false
}

func containsSecret(value string, secrets []string) bool {
	for _, s := range secrets {
		if len(s) >= minSecretLen && strings.Contains(value, s) {
			return true
		}
	}
	return false
}
