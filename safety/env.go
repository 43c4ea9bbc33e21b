package safety

import (
	"strings"
)

// ScrubEnv returns a copy of env ("NAME=value" entries) without the
// variables a child process must not see: names ending in _TOKEN, _KEY or
// _SECRET, names containing PASSWORD, SECRET or CREDENTIAL, and any variable
// whose value contains one of secrets (those of at least four characters).
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
