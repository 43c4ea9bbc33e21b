package config

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/internal/lazyre"
)

// Validate checks every value and the rules between them. Problems are *Error values, with lines when
// the config was loaded from a file, joined in line order.
func (c *Config) Validate() error { return joinErrors(c.problems()) }

// Owner is the Telegram user asked to approve commands: tools.exec.approver, or else the first numeric
// user id in channels.telegram.allow_from. Empty when there is none.
func (c *Config) Owner() string {
	if c.Tools.Exec.Approver != "" {
		return c.Tools.Exec.Approver
	}
	for _, u := range c.Channels.Telegram.AllowFrom {
		if isUserID(u) {
			return u
		}
	}
	return ""
}

// Missing lists, for `nanobot status`, what a user still has to set before the assistant can work, one
// "key: what to do" line each. A config can load and still miss something: an empty API key is valid
// for a local model server.
func (c *Config) Missing() []string {
	var out []string
	p := c.Provider
	if p.APIKey == "" && !isLocalURL(p.BaseURL) {
		out = append(out, fmt.Sprintf("provider.api_key: %s needs an API key: %s", hostOf(p.BaseURL),
			c.setHint("provider.api_key", "OPENAI_API_KEY", "")))
	}
	t := c.Channels.Telegram
	if t.Enabled && t.Token == "" {
		out = append(out, "channels.telegram.token: "+c.setHint("channels.telegram.token", "TELEGRAM_BOT_TOKEN", "token"))
	}
	if t.Enabled && len(t.AllowFrom) == 0 {
		out = append(out, "channels.telegram.allow_from: empty, so nobody may use the bot: add your numeric Telegram user id")
	}
	if c.Tools.Exec.Approval == ApprovalOwner && c.Owner() == "" {
		out = append(out, "tools.exec.approver: "+noOwner)
	}
	if w := c.Tools.Web; w.Enabled && w.Search.APIKey == "" && (w.Search.Provider == SearchBrave || w.Search.Provider == SearchTavily) {
		usual := strings.ToUpper(w.Search.Provider) + "_API_KEY"
		out = append(out, fmt.Sprintf("tools.web.search.api_key: %s needs an API key, so web_search is not offered: %s",
			w.Search.Provider, c.setHint("tools.web.search.api_key", usual, "api_key")))
	}
	return out
}

// SearchReady reports whether web_search is offered: a backend is chosen and has what it needs.
func (c *Config) SearchReady() bool {
	w := c.Tools.Web
	switch {
	case !w.Enabled || w.Search.Provider == "":
		return false
	case w.Search.Provider == SearchSearXNG:
		return w.Search.URL != ""
	default:
		return w.Search.APIKey != ""
	}
}

const noOwner = "owner approval needs a numeric user id in tools.exec.approver or channels.telegram.allow_from"

// setHint tells how to fill an empty secret: the variables its value referenced, or the usual one.
func (c *Config) setHint(key, usual, name string) string {
	if c.src != nil && len(c.src.refs[key]) > 0 {
		return "set " + strings.Join(c.src.refs[key], " or ")
	}
	if name == "" {
		return fmt.Sprintf("set %s", usual)
	}
	return fmt.Sprintf("set %s and write %s: ${%s}", usual, name, usual)
}

// normalize trims secrets, makes paths absolute against dir and brings allow_from to one form.
func (c *Config) normalize(dir string, env func(string) (string, bool)) []*Error {
	var errs []*Error
	fail := func(key, format string, args ...any) {
		errs = append(errs, c.errorf(key, format, args...))
	}
	for i := range c.API.Keys {
		c.API.Keys[i].Key = Secret(strings.TrimSpace(string(c.API.Keys[i].Key)))
	}
	for _, s := range []*Secret{&c.Provider.APIKey, &c.Channels.Telegram.Token, &c.Channels.Telegram.Webhook.SecretToken, &c.Tools.Web.Search.APIKey} {
		*s = Secret(strings.TrimSpace(string(*s))) // env files and secret mounts often end in a newline
	}
	for _, srv := range c.Tools.MCPServers {
		for k, v := range srv.Headers {
			srv.Headers[k] = Secret(strings.TrimSpace(string(v)))
		}
	}
	for _, p := range []struct {
		key string
		val *string
	}{{"agent.workspace", &c.Agent.Workspace}, {"storage.path", &c.Storage.Path}} {
		abs, err := absPath(*p.val, dir, env)
		if err != nil {
			fail(p.key, "%v", err)
			continue
		}
		*p.val = abs
	}
	if b := &c.Storage.Backup; strings.TrimSpace(b.Dir) != "" {
		abs, err := absPath(b.Dir, dir, env)
		if err != nil {
			fail("storage.backup.dir", "%v", err)
		} else {
			b.Dir = abs
		}
	} else {
		b.Dir = ""
	}
	for _, list := range []struct {
		key   string
		paths []string
	}{{"tools.exec.sandbox_paths.read", c.Tools.Exec.SandboxPaths.Read}, {"tools.exec.sandbox_paths.write", c.Tools.Exec.SandboxPaths.Write}} {
		for i := range list.paths {
			abs, err := absPath(list.paths[i], dir, env)
			if err != nil {
				fail(fmt.Sprintf("%s[%d]", list.key, i), "%v", err)
				continue
			}
			list.paths[i] = abs
		}
	}
	t := &c.Channels.Telegram
	for i, u := range t.AllowFrom {
		n, ok := normalizeUser(u)
		if !ok {
			fail(fmt.Sprintf("channels.telegram.allow_from[%d]", i),
				`must be a numeric user id, an @username or "*", not %s`, c.quote("channels.telegram.allow_from", u))
			continue
		}
		t.AllowFrom[i] = n
	}
	return errs
}

func absPath(p, dir string, env func(string) (string, bool)) (string, error) {
	p = strings.TrimSpace(p)
	if p == "" {
		return "", fmt.Errorf("must not be empty")
	}
	if p == "~" || strings.HasPrefix(p, "~/") {
		home, _ := env("HOME")
		if home == "" {
			return "", fmt.Errorf("cannot expand ~: HOME is not set")
		}
		p = filepath.Join(home, p[1:])
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	return filepath.Clean(p), nil
}

var username = lazyre.New(`^@?[A-Za-z][A-Za-z0-9_]{0,31}$`)

// normalizeUser returns "*", a user id in decimal, or "@username" in lower case (Telegram usernames are
// case-insensitive).
func normalizeUser(u string) (string, bool) {
	u = strings.TrimSpace(u)
	switch {
	case u == "*":
		return u, true
	case isUserID(u):
		id, _ := strconv.ParseInt(u, 10, 64)
		return strconv.FormatInt(id, 10), true
	case username.MatchString(u):
		return "@" + strings.ToLower(strings.TrimPrefix(u, "@")), true
	}
	return "", false
}

func isUserID(s string) bool {
	id, err := strconv.ParseInt(s, 10, 64)
	return err == nil && id > 0 && s[0] != '+'
}

// errorf builds an *Error for key at the line where the file set it (or its section).
func (c *Config) errorf(key, format string, args ...any) *Error {
	e := &Error{Key: key, Problem: fmt.Sprintf(format, args...)}
	if c.src != nil {
		e.File, e.Line = c.src.file, c.src.line(key)
	} else {
		e.File = "config"
	}
	return e
}

// quote shows a value in an error, unless it came from the environment (it may be a secret in the
// wrong place): then the ${VAR} it was written as stands in for it.
func (c *Config) quote(key, v string) string {
	if c.src != nil && len(c.src.refs[key]) > 0 {
		return fmt.Sprintf("the value of ${%s}", c.src.refs[key][0])
	}
	return strconv.Quote(v)
}

// checker collects the problems of one Validate run.
type checker struct {
	c    *Config
	errs []*Error
}

func (k *checker) fail(key, format string, args ...any) {
	k.errs = append(k.errs, k.c.errorf(key, format, args...))
}

func (k *checker) between(key string, v, lo, hi int64) {
	if v < lo || v > hi {
		k.fail(key, "must be between %d and %d", lo, hi)
	}
}

func (k *checker) atLeast(key string, v, lo int64) {
	if v < lo {
		k.fail(key, "must be at least %d", lo)
	}
}

func (k *checker) positive(key string, d time.Duration) {
	if d <= 0 {
		k.fail(key, "must be longer than 0s")
	}
}

func (k *checker) oneOf(key, v string, valid ...string) {
	if !slices.Contains(valid, v) {
		k.fail(key, "must be one of %s, not %s", strings.Join(valid, ", "), k.c.quote(key, v))
	}
}

func (k *checker) httpURL(key, v string) {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		k.fail(key, "must be an http:// or https:// URL")
	}
}

func (k *checker) listen(key, v string) {
	if !validListen(v) {
		k.fail(key, "must be host:port, like 127.0.0.1:8080, not %s", k.c.quote(key, v))
	}
}

func validListen(v string) bool {
	_, port, err := net.SplitHostPort(v)
	if err != nil {
		return false
	}
	p, err := strconv.ParseUint(port, 10, 16)
	return err == nil && (p > 0 || port == "0")
}

var (
	categoryName = lazyre.New(`^[a-z][a-z0-9_]*$`)
	secretToken  = lazyre.New(`^[A-Za-z0-9_-]{1,256}$`)
	envName      = lazyre.New(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

func (c *Config) problems() []*Error {
	k := &checker{c: c}

	p := c.Provider
	k.httpURL("provider.base_url", p.BaseURL)
	if strings.TrimSpace(p.Model) == "" {
		k.fail("provider.model", "must not be empty")
	}
	k.positive("provider.timeout", p.Timeout)
	k.between("provider.max_retries", int64(p.MaxRetries), 0, 10)
	k.atLeast("provider.max_tokens", int64(p.MaxTokens), 0)
	if t := p.Temperature; t != nil && !(*t >= 0 && *t <= 2) {
		k.fail("provider.temperature", "must be between 0 and 2")
	}
	for i, f := range p.Fallbacks {
		key := fmt.Sprintf("provider.fallbacks[%d]", i)
		k.httpURL(key+".base_url", f.BaseURL)
		if strings.TrimSpace(f.Model) == "" {
			k.fail(key+".model", "must not be empty")
		}
	}
	k.positive("provider.fallback_cooldown", p.FallbackCooldown)

	a := c.Agent
	k.between("agent.max_iterations", int64(a.MaxIterations), 1, 200)
	if a.Workspace == "" {
		k.fail("agent.workspace", "must not be empty")
	}
	k.between("agent.max_concurrent", int64(a.MaxConcurrent), 1, 64)
	k.oneOf("agent.steering", a.Steering, SteeringOn, SteeringOff)
	if a.ShutdownTimeout < 0 {
		k.fail("agent.shutdown_timeout", "must not be negative")
	}
	k.positive("agent.turn_timeout", a.TurnTimeout)
	k.atLeast("agent.context_tokens", int64(a.ContextTokens), 2000)
	k.atLeast("agent.daily_token_budget", int64(a.DailyTokenBudget), 0)
	k.atLeast("agent.prompt_file_max_chars", int64(a.PromptFileMaxChars), 100)
	if a.Timezone != "" {
		if _, err := time.LoadLocation(a.Timezone); err != nil || strings.EqualFold(a.Timezone, "local") {
			k.fail("agent.timezone", "must be an IANA time zone such as Europe/Berlin or UTC (empty: the host's zone), not %s", c.quote("agent.timezone", a.Timezone))
		}
	}

	if c.Storage.Path == "" {
		k.fail("storage.path", "must not be empty")
	}
	c.checkBackup(k)

	m := c.Memory
	k.oneOf("memory.scope", m.Scope, ScopeGlobal, ScopeChat)
	k.atLeast("memory.window", int64(m.Window), 4)
	k.atLeast("memory.max_chars", int64(m.MaxChars), 1000)

	c.checkTools(k)
	c.checkTelegram(k)

	if c.Gateway.Listen != "" {
		k.listen("gateway.listen", c.Gateway.Listen)
	}
	c.checkAPI(k)
	c.checkWebConsole(k)
	k.oneOf("log.level", c.Log.Level, "debug", "info", "warn", "error")
	k.oneOf("log.format", c.Log.Format, "text", "json")
	k.between("cron.max_jobs_per_chat", int64(c.Cron.MaxJobsPerChat), 1, 100000)
	k.oneOf("cron.missed", c.Cron.Missed, MissedOnce, MissedSkip)
	c.checkProactive(k)
	return k.errs
}

func (c *Config) checkBackup(k *checker) {
	b := c.Storage.Backup
	if b.Every < time.Minute {
		k.fail("storage.backup.every", "must be at least 1m")
	}
	k.between("storage.backup.keep", int64(b.Keep), 1, 1000)
	if b.Dir == "" {
		return
	}
	// The copies hold every conversation: out of the tools' reach, and
	// never where the database itself lives.
	if ws := c.Agent.Workspace; ws != "" && within(b.Dir, ws) {
		k.fail("storage.backup.dir", "must not be inside agent.workspace, where the tools could read or remove the copies")
	}
	if b.Dir == c.Storage.Path {
		k.fail("storage.backup.dir", "must be a directory, not the database")
	}
}

// within reports whether path is dir or lies under it (both clean and absolute).
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

func (c *Config) checkProactive(k *checker) {
	s := c.Agent.Subagents
	k.between("agent.subagents.max_iterations", int64(s.MaxIterations), 1, 200)
	k.between("agent.subagents.max_per_chat", int64(s.MaxPerChat), 1, 64)
	k.positive("agent.subagents.timeout", s.Timeout)

	h := c.Heartbeat
	if h.Interval != 0 && h.Interval < 10*time.Second {
		k.fail("heartbeat.interval", "must be 0 (off) or at least 10s")
	}
	if h.Interval > 0 && strings.TrimSpace(h.File) == "" {
		k.fail("heartbeat.file", "must not be empty while heartbeat.interval is set")
	}
	if h.Chat != "" {
		if _, err := strconv.ParseInt(h.Chat, 10, 64); err != nil {
			k.fail("heartbeat.chat", "must be a numeric chat id (empty: the first numeric id in channels.telegram.allow_from), not %s", c.quote("heartbeat.chat", h.Chat))
		}
	}
	if h.QuietHours != "" {
		m := quietHours.FindStringSubmatch(h.QuietHours)
		if m == nil || m[1]+m[2] == m[3]+m[4] {
			k.fail("heartbeat.quiet_hours", `must be two different times as "HH:MM-HH:MM", e.g. "22:00-07:00" (empty: none), not %s`, c.quote("heartbeat.quiet_hours", h.QuietHours))
		}
	}
}

// HeartbeatChat is the chat heartbeat results go to: heartbeat.chat, or
// else the first numeric id in channels.telegram.allow_from. Empty when
// there is none.
func (c *Config) HeartbeatChat() string {
	if c.Heartbeat.Chat != "" {
		return c.Heartbeat.Chat
	}
	for _, u := range c.Channels.Telegram.AllowFrom {
		if isUserID(u) {
			return u
		}
	}
	return ""
}

func (c *Config) checkTelegram(k *checker) {
	t := c.Channels.Telegram
	if strings.ContainsAny(string(t.Token), " \t\r\n/") {
		k.fail("channels.telegram.token", "is not a bot token: it contains a space or a slash")
	}
	k.httpURL("channels.telegram.api_url", t.APIURL)
	k.oneOf("channels.telegram.group_policy", t.GroupPolicy, GroupMention, GroupAll, GroupIgnore)
	k.oneOf("channels.telegram.mode", t.Mode, ModePolling, ModeWebhook)
	k.oneOf("channels.telegram.progress", t.Progress, ProgressOff, ProgressStatus, ProgressVerbose)
	if t.Webhook.Listen != "" {
		k.listen("channels.telegram.webhook.listen", t.Webhook.Listen)
	}
	if t.Webhook.SecretToken != "" && !secretToken.MatchString(string(t.Webhook.SecretToken)) {
		k.fail("channels.telegram.webhook.secret_token", "must be 1 to 256 characters A-Z, a-z, 0-9, _ or -")
	}
	if t.Mode == ModeWebhook && t.Enabled {
		if u, err := url.Parse(t.Webhook.URL); err != nil || u.Scheme != "https" || u.Host == "" {
			k.fail("channels.telegram.webhook.url", "webhook mode needs the public https:// URL Telegram posts to")
		}
		if t.Webhook.Listen == "" {
			k.fail("channels.telegram.webhook.listen", "webhook mode needs a local host:port to listen on")
		}
		if t.Webhook.SecretToken == "" {
			k.fail("channels.telegram.webhook.secret_token", "webhook mode needs a secret token: %s",
				c.setHint("channels.telegram.webhook.secret_token", "TELEGRAM_WEBHOOK_SECRET", "secret_token"))
		}
	}
	k.atLeast("channels.telegram.max_file_size", t.MaxFileSize, 1)
}

// isLocalURL reports whether a model endpoint is on this machine or network (Ollama, vLLM, a compose
// service), where an API key is usually not needed.
func isLocalURL(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	host := strings.ToLower(u.Hostname())
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsUnspecified()
	}
	if host == "" {
		return false
	}
	return host == "localhost" || !strings.Contains(host, ".") ||
		strings.HasSuffix(host, ".localhost") || strings.HasSuffix(host, ".local") || strings.HasSuffix(host, ".internal")
}

func hostOf(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Host != "" {
		return u.Host
	}
	return "the provider"
}

// CheckTelegram reports what stops the Telegram channel from starting: a
// missing token. It is not part of Validate, so that a config with Telegram
// on still serves the terminal chat before the token is set; the gateway
// calls it and refuses to start.
func (c *Config) CheckTelegram() error {
	if t := c.Channels.Telegram; t.Enabled && t.Token == "" {
		return c.errorf("channels.telegram.token", "required when channels.telegram.enabled is true: %s",
			c.setHint("channels.telegram.token", "TELEGRAM_BOT_TOKEN", "token"))
	}
	return nil
}
