package config

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestSetKeysOnExample(t *testing.T) {
	src := exampleFile(t)
	values := map[string]string{
		"provider.base_url":             "https://openrouter.ai/api/v1",
		"provider.api_key":              "${OPENROUTER_API_KEY}",
		"provider.model":                "gpt-4.1",
		"provider.temperature":          "1",
		"agent.max_iterations":          "30",
		"agent.reflection_prompt":       "",
		"agent.system_prompt":           "Answer briefly: no fluff. # not a comment",
		"tools.exec.approval_timeout":   "10m",
		"tools.exec.deny":               `git push, re:^npm (i|install) -g, "quoted"`,
		"tools.exec.categories":         "{package_install: allow, git_push: ask}",
		"channels.telegram.enabled":     "false",
		"channels.telegram.allow_from":  "[123, '@Alice']",
		"channels.telegram.webhook.url": "https://bot.example.com/hook",
	}
	out, err := SetKeys(src, values)
	if err != nil {
		t.Fatalf("SetKeys: %v", err)
	}

	before, after := strings.Split(string(src), "\n"), strings.Split(string(out), "\n")
	if len(before) != len(after) {
		t.Fatalf("SetKeys changed the number of lines from %d to %d:\n%s", len(before), len(after), out)
	}
	edited := 0
	for i := range before {
		if before[i] == after[i] {
			continue
		}
		edited++
		// The comment of an edited line is kept, in its column when the new value leaves room.
		comment := before[i][strings.Index(before[i], " # ")+1:]
		if !strings.HasSuffix(after[i], comment) {
			t.Errorf("line %d lost its comment:\n was %s\n now %s", i+1, before[i], after[i])
		}
	}
	if edited != len(values) {
		t.Errorf("SetKeys edited %d lines, want %d:\n%s", edited, len(values), out)
	}
	reflection := before[slices.IndexFunc(before, func(l string) bool { return strings.HasPrefix(l, "  reflection_prompt:") })]
	for _, want := range []string{
		"  model: gpt-4.1                          # model name as the endpoint knows it",
		"    allow_from: [123, \"@Alice\"]           # numeric user ids or @usernames; empty = nobody; [\"*\"] = everybody (warned at start)",
		`  reflection_prompt: ""` + strings.Repeat(" ", strings.Index(reflection, "#")-len(`  reflection_prompt: ""`)) +
			`# sent after tool results; empty string disables it`,
		`  system_prompt: 'Answer briefly: no fluff. # not a comment' # extra instructions appended to the built-in prompt`,
	} {
		if !slices.Contains(after, want) {
			t.Errorf("SetKeys output lacks the line\n%s\n%s", want, out)
		}
	}

	c, err := Parse("config.yaml", out, env(map[string]string{"OPENROUTER_API_KEY": "sk-or", "TELEGRAM_BOT_TOKEN": "1:x"}))
	if err != nil {
		t.Fatalf("Parse(SetKeys output): %v\n%s", err, out)
	}
	want := resolved(".")
	want.Path, want.Agent.Workspace, want.Storage.Path = c.Path, c.Agent.Workspace, c.Storage.Path
	want.Provider.BaseURL = "https://openrouter.ai/api/v1"
	want.Provider.APIKey = "sk-or"
	want.Provider.Model = "gpt-4.1"
	one := 1.0
	want.Provider.Temperature = &one
	want.Agent.MaxIterations = 30
	want.Agent.ReflectionPrompt = ""
	want.Agent.SystemPrompt = "Answer briefly: no fluff. # not a comment"
	want.Tools.Exec.ApprovalTimeout = 10 * time.Minute
	want.Tools.Exec.Deny = []string{"git push", "re:^npm (i|install) -g", `"quoted"`}
	want.Tools.Exec.Categories = map[string]string{"package_install": "allow", "git_push": "ask"}
	want.Channels.Telegram.Enabled = false
	want.Channels.Telegram.Token = "1:x"
	want.Channels.Telegram.AllowFrom = []string{"123", "@alice"}
	want.Channels.Telegram.Webhook.URL = "https://bot.example.com/hook"
	if diff := cmp.Diff(want, c, ignoreSource); diff != "" {
		t.Errorf("config after SetKeys (-want +got):\n%s", diff)
	}
}

func TestSetKeysLayouts(t *testing.T) {
	tests := []struct {
		name, src string
		values    map[string]string
		want      string
	}{
		{
			name:   "empty value",
			src:    "agent:\n  system_prompt:   # extra\n  max_iterations: 5\n",
			values: map[string]string{"agent.system_prompt": "hi"},
			want:   "agent:\n  system_prompt: hi # extra\n  max_iterations: 5\n",
		},
		{
			name:   "empty value at end of file",
			src:    "agent:\n  system_prompt:",
			values: map[string]string{"agent.system_prompt": "true"},
			want:   "agent:\n  system_prompt: \"true\"",
		},
		{
			name:   "crlf and quotes",
			src:    "provider:\r\n  model: 'old' # c\r\n  api_key: \"${K}\"\r\n",
			values: map[string]string{"provider.model": "new", "provider.api_key": "it's"},
			want:   "provider:\r\n  model: new   # c\r\n  api_key: it's\r\n",
		},
		{
			name:   "two keys on one line",
			src:    "channels:\n  telegram:\n    webhook: {url: \"\", listen: \"127.0.0.1:8443\"}\n",
			values: map[string]string{"channels.telegram.webhook.url": "https://x.example/h", "channels.telegram.webhook.listen": ":9000"},
			want:   "channels:\n  telegram:\n    webhook: {url: \"https://x.example/h\", listen: \":9000\"}\n",
		},
		{
			name:   "value on the next line",
			src:    "log:\n  level:\n    info\n",
			values: map[string]string{"log.level": "debug"},
			want:   "log:\n  level:\n    debug\n",
		},
		{
			name:   "multibyte text before the value",
			src:    "agent:\n  system_prompt: \"héllo ☃\"   # é\n  workspace: ./ws\n",
			values: map[string]string{"agent.system_prompt": "ok", "agent.workspace": "/srv/ws"},
			want:   "agent:\n  system_prompt: ok          # é\n  workspace: /srv/ws\n",
		},
		{
			name:   "multi-line string becomes one quoted line",
			src:    "agent:\n  system_prompt: \"\"\n",
			values: map[string]string{"agent.system_prompt": "line one\nline \"two\""},
			want:   "agent:\n  system_prompt: \"line one\\nline \\\"two\\\"\"\n",
		},
		{
			name:   "empty list",
			src:    "channels:\n  telegram:\n    allow_from: [1, 2]\n",
			values: map[string]string{"channels.telegram.allow_from": ""},
			want:   "channels:\n  telegram:\n    allow_from: []\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SetKeys([]byte(tt.src), tt.values)
			if err != nil {
				t.Fatalf("SetKeys(%q, %q): %v", tt.src, tt.values, err)
			}
			if string(got) != tt.want {
				t.Errorf("SetKeys(%q, %q) =\n%q\nwant\n%q", tt.src, tt.values, got, tt.want)
			}
		})
	}
}

func TestSetKeysErrors(t *testing.T) {
	example := string(exampleFile(t))
	tests := []struct {
		name, src, key, value, want string
	}{
		{"unknown key", example, "provider.modle", "x", `set provider.modle: unknown key (did you mean "model"?)`},
		{"section", example, "provider", "x", "set provider: is a section, not a value"},
		{"below a value", example, "provider.model.name", "x", "set provider.model.name: provider.model holds a value, not keys"},
		{"bad bool", example, "channels.telegram.enabled", "maybe", `set channels.telegram.enabled: must be true or false, not "maybe"`},
		{"bad number", example, "agent.max_iterations", "many", `set agent.max_iterations: must be a whole number, not "many"`},
		{"bad duration", example, "agent.turn_timeout", "10", `set agent.turn_timeout: invalid duration "10": use a number with a unit, like 30s, 5m or 1h`},
		{"bad list", example, "tools.exec.allow", "[a, [b]]", `set tools.exec.allow: must be a list like [a, b] of plain values, not "[a, [b]]"`},
		{"not in file", "provider:\n  model: x\n", "log.level", "debug", "set log.level: the key is not in the file"},
		{"block list", "channels:\n  telegram:\n    allow_from:\n      - 1\n", "channels.telegram.allow_from", "[2]",
			"set channels.telegram.allow_from: line 4: the value is written as a block over several lines; write it on one line, like [a, b], to set it"},
		{"block scalar", "agent:\n  system_prompt: |\n    hi\n", "agent.system_prompt", "x",
			"set agent.system_prompt: line 2: a block scalar (| or >) cannot be set; write the value on one line"},
		{"alias", "agent:\n  system_prompt: &p x\n  reflection_prompt: *p\n", "agent.reflection_prompt", "y",
			"set agent.reflection_prompt: line 3: a value with an anchor, alias or tag cannot be set"},
		{"malformed", "provider:\n  model: [x\n", "provider.model", "y", "parse config: config:1: invalid YAML: did not find expected ',' or ']'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SetKeys([]byte(tt.src), map[string]string{tt.key: tt.value})
			if err == nil || err.Error() != tt.want {
				t.Errorf("SetKeys(%s=%q) = %q, %v, want error %s", tt.key, tt.value, got, err, tt.want)
			}
		})
	}
}
