package config

import (
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/nanobot-go/nanobot/internal/lazyre"
)

// The checks of the tools section: exec, its environment and MCP servers.

func (c *Config) checkTools(k *checker) {
	e := c.Tools.Exec
	k.positive("tools.exec.timeout", e.Timeout)
	k.atLeast("tools.exec.max_output", int64(e.MaxOutput), 100)
	for _, list := range []struct {
		key   string
		rules []string
	}{{"tools.exec.deny", e.Deny}, {"tools.exec.allow", e.Allow}} {
		for i, r := range list.rules {
			key := fmt.Sprintf("%s[%d]", list.key, i)
			re, isRe := strings.CutPrefix(r, "re:")
			switch {
			case strings.TrimSpace(r) == "":
				k.fail(key, "must not be empty")
			case isRe:
				if _, err := regexp.Compile(re); err != nil {
					k.fail(key, "invalid regular expression: %v", err)
				}
			}
		}
	}
	k.oneOf("tools.exec.approval", e.Approval, ApprovalDeny, ApprovalOwner, ApprovalAllow)
	if e.Approver != "" && !isUserID(e.Approver) {
		k.fail("tools.exec.approver", "must be a numeric Telegram user id, not %s", c.quote("tools.exec.approver", e.Approver))
	}
	if e.Approval == ApprovalOwner && c.Owner() == "" {
		k.fail("tools.exec.approval", noOwner)
	}
	k.positive("tools.exec.approval_timeout", e.ApprovalTimeout)
	k.oneOf("tools.exec.sandbox", e.Sandbox, SandboxAuto, SandboxLandlock, SandboxOff)
	k.oneOf("tools.exec.network", e.Network, NetworkAny, NetworkWeb, NetworkNone)
	for _, sz := range []struct {
		key string
		val Size
	}{{"tools.exec.limits.memory", e.Limits.Memory}, {"tools.exec.limits.file_size", e.Limits.FileSize},
		{"tools.exec.limits.disk_written", e.Limits.DiskWritten}} {
		if n, err := sz.val.Bytes(); err != nil {
			k.fail(sz.key, "%v", err)
		} else if n != 0 && n < 1<<20 {
			k.fail(sz.key, "must be 0 (unlimited) or at least 1MiB")
		}
	}
	k.atLeast("tools.exec.limits.processes", int64(e.Limits.Processes), 0)
	if e.Limits.Processes > 0 && e.Limits.Processes < 16 {
		k.fail("tools.exec.limits.processes", "must be 0 (unlimited) or at least 16")
	}
	if e.Limits.CPUTime < 0 {
		k.fail("tools.exec.limits.cpu_time", "must not be negative")
	}
	c.checkExecEnv(k)
	for _, name := range slices.Sorted(maps.Keys(e.Categories)) {
		key := "tools.exec.categories." + name
		if !categoryName.MatchString(name) {
			k.fail(key, "category names are lower_case_words")
			continue
		}
		k.oneOf(key, e.Categories[name], "allow", "ask", "deny")
	}

	w := c.Tools.Web
	k.positive("tools.web.timeout", w.Timeout)
	k.atLeast("tools.web.max_bytes", int64(w.MaxBytes), 1024)
	if !slices.Contains([]string{"", SearchBrave, SearchSearXNG, SearchTavily}, w.Search.Provider) {
		k.fail("tools.web.search.provider", `must be brave, searxng, tavily or "" (no search tool), not %s`, c.quote("tools.web.search.provider", w.Search.Provider))
	}
	switch {
	case w.Search.URL != "":
		k.httpURL("tools.web.search.url", w.Search.URL)
	case w.Search.Provider == SearchSearXNG:
		k.fail("tools.web.search.url", "searxng needs the URL of the instance, like https://searx.example.org")
	}
	k.positive("tools.web.search.timeout", w.Search.Timeout)
	c.checkMCP(k)
}

var mcpName = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$`)

// checkExecEnv checks tools.exec.env: variable names, each once, none of them the variable a
// configured secret was read from (it would never reach a command: its value is a secret).
func (c *Config) checkExecEnv(k *checker) {
	seen := map[string]bool{}
	secretVars := c.secretVars()
	secrets := c.Secrets()
	for i, entry := range c.Tools.Exec.Env {
		key := fmt.Sprintf("tools.exec.env[%d]", i)
		name, value, fixed := strings.Cut(entry, "=")
		switch {
		case !envName.MatchString(name):
			k.fail(key, "must be a variable name (letters, digits, _) or NAME=value, not %s", c.quote(key, name))
		case seen[name]:
			k.fail(key, "%s is listed twice", name)
		case !fixed && secretVars[name] != "":
			k.fail(key, "%s holds %s, a secret, which never reaches commands: remove it from the list", name, secretVars[name])
		case fixed && slices.ContainsFunc(secrets, func(s string) bool { return len(s) >= 4 && strings.Contains(value, s) }):
			k.fail(key, "the value of %s holds a configured secret, which never reaches commands", name)
		}
		seen[name] = true
	}
}

// secretVars maps the environment variables the configured secrets were read from (with ${VAR}) to
// the key of the secret.
func (c *Config) secretVars() map[string]string {
	out := map[string]string{}
	if c.src == nil {
		return out
	}
	secrets := c.Secrets()
	for _, key := range slices.Sorted(maps.Keys(c.src.refs)) {
		if !c.secretKey(key, secrets) {
			continue
		}
		for _, v := range c.src.refs[key] {
			if out[v] == "" {
				out[v] = key
			}
		}
	}
	return out
}

// secretKey reports whether the value at key is a credential, or a URL with a password in it.
func (c *Config) secretKey(key string, secrets []string) bool {
	switch {
	case key == "provider.api_key", key == "channels.telegram.token", key == "channels.telegram.webhook.secret_token",
		key == "tools.web.search.api_key",
		strings.HasPrefix(key, "provider.fallbacks[") && strings.HasSuffix(key, "].api_key"),
		strings.HasPrefix(key, "api.keys[") && strings.HasSuffix(key, "].key"),
		strings.HasPrefix(key, "tools.mcp_servers.") && (strings.Contains(key, ".headers.") || strings.Contains(key, ".env.")):
		return true
	}
	var raw string
	switch {
	case key == "provider.base_url":
		raw = c.Provider.BaseURL
	case key == "channels.telegram.api_url":
		raw = c.Channels.Telegram.APIURL
	case key == "channels.telegram.webhook.url":
		raw = c.Channels.Telegram.Webhook.URL
	case key == "tools.web.search.url":
		raw = c.Tools.Web.Search.URL
	default:
		return false
	}
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return false
	}
	p, ok := u.User.Password()
	return ok && slices.Contains(secrets, p)
}

func (c *Config) checkMCP(k *checker) {
	for _, name := range slices.Sorted(maps.Keys(c.Tools.MCPServers)) {
		s := c.Tools.MCPServers[name]
		key := "tools.mcp_servers." + name
		if !mcpName.MatchString(name) {
			k.fail(key, "server names are 1 to 32 letters, digits, _ or -, starting with a letter or digit")
			continue
		}
		switch {
		case s.Command == "" && s.URL == "":
			k.fail(key, "needs a command (a server spoken to over stdio) or a url (streamable HTTP)")
		case s.Command != "" && s.URL != "":
			k.fail(key+".url", "a server has a command or a url, not both")
		case s.URL != "":
			k.httpURL(key+".url", s.URL)
			if len(s.Args) > 0 || len(s.Env) > 0 {
				k.fail(key+".args", "args and env are for servers started with a command")
			}
		case len(s.Headers) > 0:
			k.fail(key+".headers", "headers are for servers reached over HTTP (url)")
		}
		for _, env := range slices.Sorted(maps.Keys(s.Env)) {
			if !validVarName(env) {
				k.fail(key+".env."+env, "is not a valid environment variable name")
			}
		}
		k.positive(key+".timeout", s.Timeout)
		for i, t := range s.Tools {
			if strings.TrimSpace(t) == "" {
				k.fail(fmt.Sprintf("%s.tools[%d]", key, i), "must not be empty")
			}
		}
		k.oneOf(key+".approval", s.Approval, ApprovalDeny, ApprovalOwner, ApprovalAllow)
		if s.Approval == ApprovalOwner && c.Owner() == "" {
			k.fail(key+".approval", noOwner)
		}
	}
}

var quietHours = lazyre.New(`^([01]\d|2[0-3]):([0-5]\d)-([01]\d|2[0-3]):([0-5]\d)$`)
