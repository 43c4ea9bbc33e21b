package config

import (
	"bytes"
	"fmt"
	"maps"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Secrets returns the non-empty credentials of c (API key, bot token, webhook secret, passwords inside
// URLs), for redaction of logs and tool output and for scrubbing child environments.
func (c *Config) Secrets() []string {
	var out []string
	add := func(s string) {
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	add(string(c.Provider.APIKey))
	add(string(c.Channels.Telegram.Token))
	add(string(c.Channels.Telegram.Webhook.SecretToken))
	urls := []string{c.Provider.BaseURL, c.Channels.Telegram.APIURL, c.Channels.Telegram.Webhook.URL}
	for _, f := range c.Provider.Fallbacks {
		add(string(f.APIKey))
		urls = append(urls, f.BaseURL)
	}
	add(string(c.Tools.Web.Search.APIKey))
	for _, k := range c.API.Keys {
		add(string(k.Key))
	}
	urls = append(urls, c.Tools.Web.Search.URL)
	for _, name := range slices.Sorted(maps.Keys(c.Tools.MCPServers)) {
		s := c.Tools.MCPServers[name]
		urls = append(urls, s.URL)
		for _, k := range slices.Sorted(maps.Keys(s.Headers)) {
			add(string(s.Headers[k]))
		}
		for _, k := range slices.Sorted(maps.Keys(s.Env)) {
			if c.secretEnv(name, k) {
				add(s.Env[k])
			}
		}
	}
	for _, raw := range urls {
		if u, err := url.Parse(raw); err == nil && u.User != nil {
			p, _ := u.User.Password()
			add(p)
		}
	}
	return out
}

// secretEnv reports whether the value of the environment variable key configured for an MCP server is
// a credential: its name says so, or it was taken from the environment with ${VAR}, where secrets live.
func (c *Config) secretEnv(server, key string) bool {
	if c.src != nil && len(c.src.refs["tools.mcp_servers."+server+".env."+key]) > 0 {
		return true
	}
	n := strings.ToUpper(key)
	for _, w := range []string{"TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// Redacted returns the effective configuration as YAML, every secret written as REDACTED (an empty one
// stays "" so that it shows as not set), durations as 30s, 5m, 1h.
func (c *Config) Redacted() ([]byte, error) {
	cc := *c
	cc.Provider.Fallbacks = slices.Clone(c.Provider.Fallbacks)
	urls := []*string{&cc.Provider.BaseURL, &cc.Channels.Telegram.APIURL, &cc.Channels.Telegram.Webhook.URL, &cc.Tools.Web.Search.URL}
	for i := range cc.Provider.Fallbacks {
		urls = append(urls, &cc.Provider.Fallbacks[i].BaseURL)
	}
	cc.Tools.MCPServers = make(map[string]MCPServer, len(c.Tools.MCPServers))
	for name, s := range c.Tools.MCPServers {
		s.Env = maps.Clone(s.Env)
		for k := range s.Env {
			if c.secretEnv(name, k) {
				s.Env[k] = redacted
			}
		}
		if u, err := url.Parse(s.URL); err == nil && u.User != nil {
			s.URL = u.Redacted()
		}
		cc.Tools.MCPServers[name] = s
	}
	for _, s := range urls {
		if u, err := url.Parse(*s); err == nil && u.User != nil {
			*s = u.Redacted()
		}
	}
	n, err := toNode(reflect.ValueOf(cc))
	if err != nil {
		return nil, fmt.Errorf("encode config: %w", err)
	}
	if c.Path != "" {
		n.HeadComment = "effective configuration from " + c.Path + " (secrets redacted)"
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(n); err != nil {
		return nil, fmt.Errorf("encode config: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encode config: %w", err)
	}
	return buf.Bytes(), nil
}

func toNode(v reflect.Value) (*yaml.Node, error) {
	n := &yaml.Node{}
	switch {
	case v.Type() == durationType:
		n.SetString(FormatDuration(time.Duration(v.Int())))
	case v.Type() == secretType:
		n.SetString(v.Interface().(Secret).String())
	case v.Kind() == reflect.String:
		// Escaped so that the output loads back to the same values.
		n.SetString(strings.ReplaceAll(v.String(), "${", "$${"))
	case v.Kind() == reflect.Struct:
		n.Kind = yaml.MappingNode
		for f := range fieldsOf(v.Type()) {
			child, err := toNode(v.FieldByIndex(f.Index))
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: fieldName(f)}, child)
		}
	case v.Kind() == reflect.Slice:
		n.Kind, n.Style = yaml.SequenceNode, yaml.FlowStyle
		for i := range v.Len() {
			child, err := toNode(v.Index(i))
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, child)
		}
	case v.Kind() == reflect.Map:
		n.Kind, n.Style = yaml.MappingNode, yaml.FlowStyle
		if v.Type().Elem().Kind() == reflect.Struct {
			n.Style = 0 // sections by name (mcp_servers) read better as blocks
		}
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
		for _, k := range keys {
			kn, err := toNode(k)
			if err != nil {
				return nil, err
			}
			vn, err := toNode(v.MapIndex(k))
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, kn, vn)
		}
	default:
		if err := n.Encode(v.Interface()); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// FormatDuration writes 2m rather than time.Duration's 2m0s, as config.yaml does.
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// Diff lists the dotted keys whose values differ between old and new, in file order. Lists and
// mappings count as one key each ("channels.telegram.allow_from").
func Diff(old, new *Config) []string {
	var keys []string
	oldLeaves := map[string]reflect.Value{}
	leaves("", reflect.ValueOf(*old), func(key string, v reflect.Value) { oldLeaves[key] = v })
	leaves("", reflect.ValueOf(*new), func(key string, v reflect.Value) {
		if !sameValue(oldLeaves[key], v) {
			keys = append(keys, key)
		}
	})
	return keys
}

// Changed lists the keys that differ between old and new and only take effect after a restart:
// storage.path, memory.scope, gateway.listen, api.listen, log.format and the channels.telegram keys enabled, token,
// api_url, mode and webhook.*, and cron.enabled. They decide which connections, listeners, database and log handler
// exist; a reload warns about them and applies the rest.
func Changed(old, new *Config) (restartKeys []string) {
	for _, k := range Diff(old, new) {
		if needsRestart(k) {
			restartKeys = append(restartKeys, k)
		}
	}
	return restartKeys
}

func needsRestart(key string) bool {
	switch key {
	case "storage.path", "memory.scope", "gateway.listen", "api.listen", "web.listen", "web.public_url", "log.format",
		"channels.telegram.enabled", "channels.telegram.token", "channels.telegram.api_url", "channels.telegram.mode",
		"cron.enabled":
		return true
	}
	return strings.HasPrefix(key, "channels.telegram.webhook.") || strings.HasPrefix(key, "storage.backup.")
}

// leaves calls fn for every key that holds a value (not a section) of the struct v, in file order.
func leaves(prefix string, v reflect.Value, fn func(key string, v reflect.Value)) {
	for f := range fieldsOf(v.Type()) {
		fv := v.FieldByIndex(f.Index)
		key := join(prefix, fieldName(f))
		if fv.Kind() == reflect.Struct && fv.Type() != durationType {
			leaves(key, fv, fn)
			continue
		}
		fn(key, fv)
	}
}

// sameValue is reflect.DeepEqual except that a nil and an empty list (or mapping) are the same.
func sameValue(a, b reflect.Value) bool {
	if !a.IsValid() || !b.IsValid() {
		return a.IsValid() == b.IsValid()
	}
	if (a.Kind() == reflect.Slice || a.Kind() == reflect.Map) && a.Len() == 0 && b.Len() == 0 {
		return true
	}
	return reflect.DeepEqual(a.Interface(), b.Interface())
}
