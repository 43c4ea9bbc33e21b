package config

import (
	"errors"
	"strings"
	"testing"
)

// FuzzLoad: Parse never panics; every problem is an *Error whose lines start with the file name; a
// config that loads prints (Redacted) as YAML that loads back to the same values, secrets aside.
func FuzzLoad(f *testing.F) {
	example, err := exampleFileBytes()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(example)
	for _, s := range []string{
		"",
		"provider:\n  timeout: 90x\n",
		"agent:\n  max_iteratons: 5\n",
		"channels:\n  telegram:\n    enabled: true\n    allow_from: [1, '@a', \"*\"]\n    token: ${A}\n",
		"a: &a [*a]\n",
		"provider: &p\n  model: x\nagent: *p\n",
		"tools:\n  exec:\n    categories: {a: allow, b: ${A:-deny}}\n    deny: ['re:(', x]\n",
		"agent:\n  system_prompt: \"$${X} ${A} $5\"\n  workspace: ~/w\n",
		"log: {level: debug, format: json}\n---\nx: 1\n",
		"provider:\n  temperature: .nan\n  max_tokens: 0x10\n  timeout: 1h1m1s\n",
		"\t- [\n",
		"<<: {provider: {model: x}}\n",
		"tools:\n  mcp_servers:\n    gh:\n      command: npx\n      env: {GH_TOKEN: ${A}}\n    web: {url: \"http://u:p@h/mcp\", headers: {Authorization: x}, approval: deny}\n",
		"tools:\n  web:\n    search: {provider: searxng, url: \"http://h:8080\", api_key: k}\n",
	} {
		f.Add([]byte(s))
	}
	vars := env(map[string]string{"A": "1", "OPENAI_API_KEY": "sk-fuzz", "HOME": "/home/fuzz"})
	secretKeys := map[string]bool{
		"provider.base_url": true, "provider.api_key": true, "channels.telegram.api_url": true,
		"channels.telegram.token": true, "channels.telegram.webhook.url": true, "channels.telegram.webhook.secret_token": true,
		"tools.web.search.api_key": true, "tools.web.search.url": true, "tools.mcp_servers": true,
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("config.yaml", data, vars)
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("Parse error %T is not a *config.Error: %v", err, err)
			}
			for line := range strings.SplitSeq(err.Error(), "\n") {
				if !strings.HasPrefix(line, "config.yaml:") {
					t.Fatalf("Parse error line %q does not start with the file name", line)
				}
			}
			return
		}
		out, err := c.Redacted()
		if err != nil {
			t.Fatalf("Redacted: %v", err)
		}
		back, err := Parse("config.yaml", out, vars)
		if err != nil {
			t.Fatalf("Redacted output does not load: %v\n%s", err, out)
		}
		for _, k := range Diff(c, back) {
			if !secretKeys[k] {
				t.Errorf("Redacted output changes %s:\n%s", k, out)
			}
		}
	})
}

// FuzzSetKeys: any text set as a string key is written so that the file loads back to exactly it.
func FuzzSetKeys(f *testing.F) {
	example, err := exampleFileBytes()
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"", "gpt-4.1", "a: b", "# x", "'q'", `"dq"`, "line\nbreak", "true", "123", "@x", "- item", "[a]", "{b}", "tab\there", "ünï ☃", "*", "&a", "!tag", "%", "x #y", " lead", "trail "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, value string) {
		out, err := SetKeys(example, map[string]string{"agent.system_prompt": value, "provider.model": value + "m"})
		if err != nil {
			if strings.Contains(err.Error(), "UTF-8") {
				return
			}
			t.Fatalf("SetKeys(%q): %v", value, err)
		}
		c, err := Parse("config.yaml", out, noEnv)
		if strings.Contains(value, "${") || strings.Contains(value, "$${") {
			return // expanded on load, as documented
		}
		if err != nil {
			t.Fatalf("Parse(SetKeys(%q)): %v", value, err)
		}
		if c.Agent.SystemPrompt != value || c.Provider.Model != value+"m" {
			t.Errorf("SetKeys(%q) loads back as %q, %q", value, c.Agent.SystemPrompt, c.Provider.Model)
		}
	})
}

func BenchmarkParseExample(b *testing.B) {
	example, err := exampleFileBytes()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("config.yaml", example, noEnv); err != nil {
			b.Fatal(err)
		}
	}
}
