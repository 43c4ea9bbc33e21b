package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"gopkg.in/yaml.v3"
)

// env is a fake environment for Parse.
func env(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

func noEnv(string) (string, bool) { return "", false }

// exampleFileBytes reads the documented example config.yaml at the root of the module.
func exampleFileBytes() ([]byte, error) { return os.ReadFile(filepath.Join("..", "config.yaml")) }

func exampleFile(t *testing.T) []byte {
	t.Helper()
	data, err := exampleFileBytes()
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// resolved returns Default() as Parse yields it for a file in dir.
func resolved(dir string) *Config {
	c := Default()
	c.Path = filepath.Join(dir, "config.yaml")
	c.Agent.Workspace = filepath.Join(dir, "workspace")
	c.Storage.Path = filepath.Join(dir, "data", "nanobot.db")
	return c
}

var ignoreSource = cmpopts.IgnoreUnexported(Config{})

func TestExampleEqualsDefault(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "config.yaml")
	data := exampleFile(t)

	got, err := Parse(file, data, noEnv)
	if err != nil {
		t.Fatalf("Parse(example, empty env): %v", err)
	}
	if diff := cmp.Diff(resolved(dir), got, ignoreSource); diff != "" {
		t.Errorf("example config.yaml with an empty environment differs from Default() (-default +example):\n%s", diff)
	}

	got, err = Parse(file, data, env(map[string]string{
		"OPENAI_API_KEY":          "sk-test-key",
		"TELEGRAM_BOT_TOKEN":      "123456:ABC-def",
		"TELEGRAM_WEBHOOK_SECRET": "hook-secret",
	}))
	if err != nil {
		t.Fatalf("Parse(example, secrets set): %v", err)
	}
	want := resolved(dir)
	want.Provider.APIKey = "sk-test-key"
	want.Channels.Telegram.Token = "123456:ABC-def"
	want.Channels.Telegram.Webhook.SecretToken = "hook-secret"
	if diff := cmp.Diff(want, got, ignoreSource); diff != "" {
		t.Errorf("example config.yaml with secrets set (-want +got):\n%s", diff)
	}
}

// Every key is in the example file, with a comment on its line.
func TestExampleDocumentsEveryKey(t *testing.T) {
	var doc yaml.Node
	if err := yaml.Unmarshal(exampleFile(t), &doc); err != nil {
		t.Fatal(err)
	}
	leaves("", reflect.ValueOf(*Default()), func(key string, _ reflect.Value) {
		kn, vn, err := findKey(doc.Content[0], key)
		if err != nil {
			t.Errorf("example config.yaml: %v", err)
			return
		}
		if vn.LineComment == "" && kn.LineComment == "" {
			t.Errorf("example config.yaml:%d: %s has no comment", kn.Line, key)
		}
	})
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		env  map[string]string
		want string
	}{
		{
			name: "malformed yaml",
			yaml: "provider:\n  model: gpt\n  timeout 10s\n  max_retries: 2\n",
			want: "config.yaml:3: invalid YAML: could not find expected ':'",
		},
		{
			name: "unclosed flow list",
			yaml: "tools:\n  exec:\n    deny: [rm, \n",
			want: "config.yaml:3: invalid YAML: did not find expected node content",
		},
		{
			name: "exec env: not a variable name",
			yaml: "tools:\n  exec:\n    env:\n      - GOPATH\n      - \"BAD NAME\"\n",
			want: `config.yaml:5: tools.exec.env[1]: must be a variable name (letters, digits, _) or NAME=value, not "BAD NAME"`,
		},
		{
			name: "exec env: listed twice",
			yaml: "tools:\n  exec:\n    env: [GOPATH, GOPATH=/go]\n",
			want: `config.yaml:3: tools.exec.env[1]: GOPATH is listed twice`,
		},
		{
			name: "exec env: the variable of a configured secret",
			yaml: "provider:\n  api_key: ${MY_LLM_KEY}\ntools:\n  exec:\n    env:\n      - GOPATH\n      - MY_LLM_KEY\n",
			env:  map[string]string{"MY_LLM_KEY": "sk-from-env-123"},
			want: `config.yaml:7: tools.exec.env[1]: MY_LLM_KEY holds provider.api_key, a secret, which never reaches commands: remove it from the list`,
		},
		{
			name: "exec env: a fixed value holding a configured secret",
			yaml: "channels:\n  telegram:\n    token: ${TG}\ntools:\n  exec:\n    env: [\"COPY=${TG}\"]\n",
			env:  map[string]string{"TG": "123:tg-token-abc"},
			want: `config.yaml:6: tools.exec.env[0]: the value of COPY holds a configured secret, which never reaches commands`,
		},
		{
			name: "sandbox mode",
			yaml: "tools:\n  exec:\n    sandbox: strict\n",
			want: `config.yaml:3: tools.exec.sandbox: must be one of auto, landlock, off, not "strict"`,
		},
		{
			name: "sandbox network",
			yaml: "tools:\n  exec:\n    network: lan\n",
			want: `config.yaml:3: tools.exec.network: must be one of any, web, none, not "lan"`,
		},
		{
			name: "memory limit",
			yaml: "tools:\n  exec:\n    limits:\n      memory: lots\n",
			want: `config.yaml:4: tools.exec.limits.memory: size "lots": want a number with a unit, like 512MiB or 1GiB`,
		},
		{
			name: "process limit",
			yaml: "tools:\n  exec:\n    limits:\n      processes: 3\n",
			want: "config.yaml:4: tools.exec.limits.processes: must be 0 (unlimited) or at least 16",
		},
		{
			name: "unknown key with suggestion",
			yaml: "agent:\n  max_iteratons: 5\n",
			want: `config.yaml:2: agent.max_iteratons: unknown key (did you mean "max_iterations"?)`,
		},
		{
			name: "unknown section lists the valid ones",
			yaml: "provider:\n  model: x\nfrobnicate: true\n",
			want: "config.yaml:3: frobnicate: unknown key (valid keys: provider, agent, storage, memory, tools, channels, gateway, api, web, log, cron, heartbeat)",
		},
		{
			name: "nested unknown key",
			yaml: "channels:\n  telegram:\n    webhook:\n      secret: abc\n",
			want: `config.yaml:4: channels.telegram.webhook.secret: unknown key (did you mean "secret_token"?)`,
		},
		{
			name: "bad duration",
			yaml: "provider:\n  timeout: 90x\n",
			want: `config.yaml:2: provider.timeout: invalid duration "90x": use a number with a unit, like 30s, 5m or 1h`,
		},
		{
			name: "duration without unit",
			yaml: "tools:\n  exec:\n    timeout: 60\n",
			want: `config.yaml:3: tools.exec.timeout: invalid duration "60": use a number with a unit, like 30s, 5m or 1h`,
		},
		{
			name: "wrong type",
			yaml: "agent:\n  max_iterations: lots\n",
			want: `config.yaml:2: agent.max_iterations: must be a whole number, not the string "lots"`,
		},
		{
			name: "quoted number is a string",
			yaml: "agent:\n  max_iterations: \"20\"\n",
			want: `config.yaml:2: agent.max_iterations: must be a whole number, not the string "20"`,
		},
		{
			name: "yes is not a boolean",
			yaml: "provider:\n  vision: yes\n",
			want: `config.yaml:2: provider.vision: must be true or false, not the string "yes"`,
		},
		{
			name: "list where a string belongs",
			yaml: "provider:\n  model: [a, b]\n",
			want: "config.yaml:2: provider.model: must be a string, not a list",
		},
		{
			name: "fallback without a model",
			yaml: "provider:\n  fallbacks:\n    - base_url: ftp://x\n",
			want: "config.yaml:3: provider.fallbacks[0].base_url: must be an http:// or https:// URL\nconfig.yaml:3: provider.fallbacks[0].model: must not be empty",
		},
		{
			name: "section that is not a mapping",
			yaml: "provider: gpt-4o\n",
			want: `config.yaml:1: provider: this section must be a mapping of keys (base_url, api_key, model, timeout, max_retries, max_tokens, temperature, vision, transcription_model, fallbacks, fallback_cooldown), not the string "gpt-4o"`,
		},
		{
			name: "out of range",
			yaml: "# comment\n\nagent:\n  max_iterations: 500\n",
			want: "config.yaml:4: agent.max_iterations: must be between 1 and 200",
		},
		{
			name: "below minimum",
			yaml: "agent:\n  context_tokens: 1000\n",
			want: "config.yaml:2: agent.context_tokens: must be at least 2000",
		},
		{
			name: "bad enum",
			yaml: "log:\n  level: verbose\n",
			want: `config.yaml:2: log.level: must be one of debug, info, warn, error, not "verbose"`,
		},
		{
			name: "unknown time zone",
			yaml: "agent:\n  timezone: Europe/Berln\n",
			want: `config.yaml:2: agent.timezone: must be an IANA time zone such as Europe/Berlin or UTC (empty: the host's zone), not "Europe/Berln"`,
		},
		{
			name: "missed policy",
			yaml: "cron:\n  missed: all\n",
			want: `config.yaml:2: cron.missed: must be one of once, skip, not "all"`,
		},
		{
			name: "heartbeat too often",
			yaml: "heartbeat:\n  interval: 5s\n",
			want: "config.yaml:2: heartbeat.interval: must be 0 (off) or at least 10s",
		},
		{
			name: "quiet hours",
			yaml: "heartbeat:\n  quiet_hours: 22-7\n",
			want: `config.yaml:2: heartbeat.quiet_hours: must be two different times as "HH:MM-HH:MM", e.g. "22:00-07:00" (empty: none), not "22-7"`,
		},
		{
			name: "telegram progress",
			yaml: "channels:\n  telegram:\n    progress: loud\n",
			want: `config.yaml:3: channels.telegram.progress: must be one of off, status, verbose, not "loud"`,
		},
		{
			name: "heartbeat chat",
			yaml: "heartbeat:\n  chat: me\n",
			want: `config.yaml:2: heartbeat.chat: must be a numeric chat id (empty: the first numeric id in channels.telegram.allow_from), not "me"`,
		},
		{
			name: "subagents per chat",
			yaml: "agent:\n  subagents:\n    max_per_chat: 0\n",
			want: "config.yaml:3: agent.subagents.max_per_chat: must be between 1 and 64",
		},
		{
			name: "webhook mode without secret",
			yaml: "channels:\n  telegram:\n    enabled: true\n    token: 1:x\n    mode: webhook\n    webhook:\n      url: https://bot.example.com/hook\n",
			want: "config.yaml:6: channels.telegram.webhook.secret_token: webhook mode needs a secret token: set TELEGRAM_WEBHOOK_SECRET and write secret_token: ${TELEGRAM_WEBHOOK_SECRET}",
		},
		{
			name: "allow_from item",
			yaml: "channels:\n  telegram:\n    allow_from:\n      - 42\n      - bob smith\n",
			want: `config.yaml:5: channels.telegram.allow_from[1]: must be a numeric user id, an @username or "*", not "bob smith"`,
		},
		{
			name: "api on the network without a key",
			yaml: "api:\n  listen: 0.0.0.0:18792\n",
			want: `config.yaml:2: api.listen: "0.0.0.0:18792" takes connections from other machines: add at least one key to api.keys (or listen on 127.0.0.1)`,
		},
		{
			name: "api key too short",
			yaml: "api:\n  listen: 127.0.0.1:18792\n  keys:\n    - {key: short, name: phone}\n",
			want: "config.yaml:4: api.keys[0].key: is 5 characters; use at least 16 random ones (openssl rand -hex 24)",
		},
		{
			name: "api key from an unset variable",
			yaml: "api:\n  keys:\n    - key: ${NANOBOT_API_KEY}\n      name: phone\n",
			want: "config.yaml:3: api.keys[0].key: must not be empty (write it as ${VAR} and set the variable)",
		},
		{
			name: "api key name",
			yaml: "api:\n  keys:\n    - {key: 0123456789abcdef0, name: my phone}\n",
			want: `config.yaml:3: api.keys[0].name: must be a short name of letters, digits, '.', '_' or '-', not "my phone"`,
		},
		{
			name: "api keys sharing a chat",
			yaml: "api:\n  keys:\n    - {key: 0123456789abcdef0, name: phone}\n    - {key: 0123456789abcdef1, name: laptop, chat: phone}\n",
			want: `config.yaml:4: api.keys[1].chat: "phone" is the chat of an earlier key: each key talks in its own chat`,
		},
		{
			name: "api key used twice",
			yaml: "api:\n  keys:\n    - {key: 0123456789abcdef0, name: phone}\n    - {key: 0123456789abcdef0, name: laptop}\n",
			want: "config.yaml:4: api.keys[1].key: is the key of an earlier entry: each client needs its own",
		},
		{
			name: "web console on the network without a proxy",
			yaml: "web:\n  listen: 0.0.0.0:18791\n",
			want: `config.yaml:2: web.listen: "0.0.0.0:18791" takes connections from other machines: put a TLS proxy in front and set web.public_url to its https:// address (or listen on 127.0.0.1)`,
		},
		{
			name: "web console behind plain http",
			yaml: "web:\n  listen: 0.0.0.0:18791\n  public_url: http://bot.example.com\n",
			want: "config.yaml:3: web.public_url: must be https:// (a TLS proxy in front): over plain http the session cookie crosses the network readable",
		},
		{
			name: "web console address with a path",
			yaml: "web:\n  public_url: https://example.com/bot\n",
			want: "config.yaml:2: web.public_url: must be the address of the proxy's root, without a path: the console's pages live at /",
		},
		{
			name: "duplicate key",
			yaml: "log:\n  level: info\n  level: debug\n",
			want: "config.yaml:3: log.level: duplicate key (first set on line 2)",
		},
		{
			name: "invalid deny regex",
			yaml: "tools:\n  exec:\n    deny:\n      - git push\n      - \"re:^npm (\"\n",
			want: "config.yaml:5: tools.exec.deny[1]: invalid regular expression: error parsing regexp: missing closing ): `^npm (`",
		},
		{
			name: "bad category verdict",
			yaml: "tools:\n  exec:\n    categories: {package_install: maybe}\n",
			want: `config.yaml:3: tools.exec.categories.package_install: must be one of allow, ask, deny, not "maybe"`,
		},
		{
			name: "owner approval without an owner",
			yaml: "tools:\n  exec:\n    approval: owner\n",
			want: "config.yaml:3: tools.exec.approval: owner approval needs a numeric user id in tools.exec.approver or channels.telegram.allow_from",
		},
		{
			name: "unterminated variable",
			yaml: "provider:\n  api_key: ${OPENAI_API_KEY\n",
			want: "config.yaml:2: provider.api_key: unterminated ${ (write $${ for a literal ${)",
		},
		{
			name: "invalid variable name",
			yaml: "provider:\n  model: ${model name}\n",
			want: "config.yaml:2: provider.model: invalid variable reference ${model name}: use ${NAME} or ${NAME:-default}",
		},
		{
			name: "expanded value never echoed",
			yaml: "provider:\n  max_tokens: ${OPENAI_API_KEY}\n",
			env:  map[string]string{"OPENAI_API_KEY": "sk-very-secret"},
			want: `config.yaml:2: provider.max_tokens: must be a whole number, not the string "${OPENAI_API_KEY}"`,
		},
		{
			name: "expanded enum never echoed",
			yaml: "log:\n  level: ${LOG_LEVEL}\n",
			env:  map[string]string{"LOG_LEVEL": "loud"},
			want: `config.yaml:2: log.level: must be one of debug, info, warn, error, not the value of ${LOG_LEVEL}`,
		},
		{
			name: "two documents",
			yaml: "log:\n  level: info\n---\nlog:\n  level: debug\n",
			want: "config.yaml:3: only one YAML document is allowed (remove the ---)",
		},
		{
			name: "file is a list",
			yaml: "- provider\n",
			want: "config.yaml:1: this file must be a mapping of keys (provider, agent, storage, memory, tools, channels, gateway, api, web, log, cron, heartbeat), not a list",
		},
		{
			name: "several problems in line order",
			yaml: "log:\n  format: xml\nagent:\n  max_iterations: 0\n  workspace: ./ws\n  bogus: 1\n",
			want: `config.yaml:2: log.format: must be one of text, json, not "xml"` + "\n" +
				"config.yaml:4: agent.max_iterations: must be between 1 and 200\n" +
				`config.yaml:6: agent.bogus: unknown key (valid keys: max_iterations, reflection_prompt, system_prompt, workspace, max_concurrent, shutdown_timeout, turn_timeout, context_tokens, daily_token_budget, prompt_file_max_chars, timezone, subagents, steering)`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse("config.yaml", []byte(tt.yaml), env(tt.env))
			if err == nil {
				t.Fatalf("Parse(%q) = %+v, want error %q", tt.yaml, c, tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("Parse(%q) error:\n got %s\nwant %s", tt.yaml, err, tt.want)
			}
			var ce *Error
			if !errors.As(err, &ce) || ce.File != "config.yaml" {
				t.Errorf("Parse(%q) error %#v is not a *config.Error for config.yaml", tt.yaml, err)
			}
			for _, v := range tt.env {
				if strings.Contains(err.Error(), v) {
					t.Errorf("Parse(%q) error %q reveals the environment value %q", tt.yaml, err, v)
				}
			}
		})
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.WriteFile("config.yaml", []byte("agent:\n  max_iterations: 201\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load("config.yaml")
	if want := "config.yaml:2: agent.max_iterations: must be between 1 and 200"; err == nil || err.Error() != want {
		t.Errorf("Load(config.yaml) error = %v, want %s", err, want)
	}

	_, err = Load("missing.yaml")
	if want := "missing.yaml: cannot read: no such file or directory"; err == nil || err.Error() != want {
		t.Errorf("Load(missing.yaml) error = %v, want %s", err, want)
	}

	if err := os.WriteFile("config.yaml", []byte("provider:\n  api_key: ${NANOBOT_TEST_KEY}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("NANOBOT_TEST_KEY", "sk-from-env")
	c, err := Load("config.yaml")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if c.Provider.APIKey != "sk-from-env" || c.Path != filepath.Join(dir, "config.yaml") {
		t.Errorf("Load: api_key %q, path %q", string(c.Provider.APIKey), c.Path)
	}
}

func TestEmptyFileIsDefault(t *testing.T) {
	for _, data := range []string{"", "# only a comment\n", "provider:\n"} {
		c, err := Parse("/etc/nanobot/config.yaml", []byte(data), noEnv)
		if err != nil {
			t.Fatalf("Parse(%q): %v", data, err)
		}
		if diff := cmp.Diff(resolved("/etc/nanobot"), c, ignoreSource); diff != "" {
			t.Errorf("Parse(%q) (-want +got):\n%s", data, diff)
		}
	}
}

func TestExpandString(t *testing.T) {
	vars := env(map[string]string{"A": "alpha", "EMPTY": "", "B": "beta"})
	tests := []struct{ in, want string }{
		{"${A}", "alpha"},
		{"x-${A}-${B}-y", "x-alpha-beta-y"},
		{"${UNSET}", ""},
		{"${UNSET:-fallback}", "fallback"},
		{"${EMPTY:-fallback}", "fallback"},
		{"${A:-fallback}", "alpha"},
		{"${UNSET:-}", ""},
		{"${UNSET:-http://localhost:11434/v1}", "http://localhost:11434/v1"},
		{"$A", "$A"},
		{"costs $5", "costs $5"},
		{"$", "$"},
		{"a$", "a$"},
		{"$$", "$$"},
		{"$${A}", "${A}"},
		{"$$${A}", "$${A}"},
		{"{A}", "{A}"},
	}
	for _, tt := range tests {
		got, _, err := expandString(tt.in, vars)
		if err != nil || got != tt.want {
			t.Errorf("expandString(%q) = %q, %v, want %q", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"${", "${A", "${}", "${1A}", "${A B}", "${:-x}", "x ${A-B}"} {
		if got, _, err := expandString(bad, vars); err == nil {
			t.Errorf("expandString(%q) = %q, want an error", bad, got)
		}
	}
}

func TestExpansionTypes(t *testing.T) {
	data := `
provider:
  base_url: ${BASE_URL:-http://localhost:11434/v1}
  model: ${MODEL}
  max_tokens: "${MAX_TOKENS:-1024}"
  temperature: ${TEMP:-0.7}
  vision: ${VISION}
  timeout: ${TIMEOUT:-5s}
  transcription_model: "pay $5, not ${CURRENCY}"
agent:
  system_prompt: 'keep $HOME and $${LITERAL}'
channels:
  telegram:
    allow_from: ["${OWNER_ID}", 7]
`
	c, err := Parse("config.yaml", []byte(data), env(map[string]string{"MODEL": "llama3", "VISION": "true", "OWNER_ID": "123"}))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	p := c.Provider
	if p.BaseURL != "http://localhost:11434/v1" || p.Model != "llama3" || p.MaxTokens != 1024 ||
		p.Temperature == nil || *p.Temperature != 0.7 || !p.Vision || p.Timeout != 5*time.Second || p.TranscriptionModel != "pay $5, not " {
		t.Errorf("provider = %+v", p)
	}
	if want := "keep $HOME and ${LITERAL}"; c.Agent.SystemPrompt != want {
		t.Errorf("system_prompt = %q, want %q", c.Agent.SystemPrompt, want)
	}
	if want := []string{"123", "7"}; !slices.Equal(c.Channels.Telegram.AllowFrom, want) {
		t.Errorf("allow_from = %q, want %q", c.Channels.Telegram.AllowFrom, want)
	}
}

func TestReflectionPromptEmptyDisables(t *testing.T) {
	for data, want := range map[string]string{
		"agent:\n  max_iterations: 3\n":       Default().Agent.ReflectionPrompt,
		"agent:\n  reflection_prompt: \"\"\n": "",
		"agent:\n  reflection_prompt:\n":      "",
		"agent:\n  reflection_prompt: Go.\n":  "Go.",
	} {
		c, err := Parse("config.yaml", []byte(data), noEnv)
		if err != nil {
			t.Fatalf("Parse(%q): %v", data, err)
		}
		if c.Agent.ReflectionPrompt != want {
			t.Errorf("Parse(%q): reflection_prompt = %q, want %q", data, c.Agent.ReflectionPrompt, want)
		}
	}
}

func TestPathsAndUsers(t *testing.T) {
	data := `
agent:
  workspace: ~/assistant
storage:
  path: /var/lib/nanobot/../nanobot/db.sqlite
channels:
  telegram:
    allow_from: [42, "@Alice", bob_99, "*", "007"]
tools:
  exec:
    approval: owner
`
	c, err := Parse("conf/config.yaml", []byte(data), env(map[string]string{"HOME": "/home/me"}))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if c.Agent.Workspace != "/home/me/assistant" || c.Storage.Path != "/var/lib/nanobot/db.sqlite" {
		t.Errorf("workspace %q, storage %q", c.Agent.Workspace, c.Storage.Path)
	}
	if want := []string{"42", "@alice", "@bob_99", "*", "7"}; !slices.Equal(c.Channels.Telegram.AllowFrom, want) {
		t.Errorf("allow_from = %q, want %q", c.Channels.Telegram.AllowFrom, want)
	}
	if c.Owner() != "42" {
		t.Errorf("Owner() = %q, want 42", c.Owner())
	}
	wd, _ := os.Getwd()
	if want := filepath.Join(wd, "conf", "config.yaml"); c.Path != want {
		t.Errorf("Path = %q, want %q", c.Path, want)
	}

	c, err = Parse("/srv/bot/config.yaml", []byte("agent:\n  workspace: ws\n"), noEnv)
	if err != nil || c.Agent.Workspace != "/srv/bot/ws" || c.Storage.Path != "/srv/bot/data/nanobot.db" {
		t.Errorf("relative paths: %v, workspace %q, storage %q", err, c.Agent.Workspace, c.Storage.Path)
	}
}

func TestSecretsAndRedacted(t *testing.T) {
	data := `
provider:
  base_url: https://user:url-password@llm.example.com/v1
  api_key: ${KEY}
  fallbacks:
    - base_url: https://u:fallback-url-password@backup.example.com/v1
      api_key: ${BACKUP}
      model: backup-model
agent:
  system_prompt: "Prices look like $${PRICE}."
channels:
  telegram:
    enabled: true
    token: ${TOKEN}
    allow_from: [42]
    mode: webhook
    webhook:
      url: https://bot.example.com/hook
      secret_token: ${HOOK}
tools:
  exec:
    deny: ["git push", "re:^rm"]
    categories: {package_install: allow}
`
	secrets := map[string]string{"KEY": "sk-abcdef123", "TOKEN": "123456:telegram-token", "HOOK": "hook_secret", "BACKUP": "sk-backup-456"}
	dir := t.TempDir()
	file := filepath.Join(dir, "config.yaml")
	c, err := Parse(file, []byte(data), env(secrets))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := []string{"sk-abcdef123", "123456:telegram-token", "hook_secret", "sk-backup-456", "url-password", "fallback-url-password"}
	if got := c.Secrets(); !slices.Equal(got, want) {
		t.Errorf("Secrets() = %q, want %q", got, want)
	}
	if got := Default().Secrets(); len(got) != 0 {
		t.Errorf("Default().Secrets() = %q, want none", got)
	}

	out, err := c.Redacted()
	if err != nil {
		t.Fatalf("Redacted: %v", err)
	}
	for _, s := range want {
		if bytes.Contains(out, []byte(s)) {
			t.Errorf("Redacted() reveals %q:\n%s", s, out)
		}
	}
	for _, s := range []string{"api_key: REDACTED", "token: REDACTED", "secret_token: REDACTED", "timeout: 2m", "turn_timeout: 10m",
		"deny: [git push, 're:^rm']", "categories: {package_install: allow}", "allow_from: [\"42\"]", "workspace: " + filepath.Join(dir, "workspace")} {
		if !bytes.Contains(out, []byte(s)) {
			t.Errorf("Redacted() lacks %q:\n%s", s, out)
		}
	}

	// The output is itself a valid config holding the same values, secrets aside.
	back, err := Parse(file, out, noEnv)
	if err != nil {
		t.Fatalf("Parse(Redacted()): %v\n%s", err, out)
	}
	wantDiff := []string{"provider.base_url", "provider.api_key", "provider.fallbacks", "channels.telegram.token", "channels.telegram.webhook.secret_token"}
	if diff := cmp.Diff(wantDiff, Diff(c, back)); diff != "" {
		t.Errorf("Diff(config, Parse(Redacted())) (-want +got):\n%s", diff)
	}
}

func TestSecretNeverFormats(t *testing.T) {
	c := Default()
	c.Provider.APIKey = "sk-do-not-print"
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("config", "key", c.Provider.APIKey, "provider", c.Provider)
	js, err := json.Marshal(c.Provider)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		fmt.Sprint(c.Provider.APIKey), fmt.Sprintf("%v %+v %#v %s", c.Provider, c.Provider, c.Provider, c.Provider.APIKey),
		logged.String(), string(js),
	} {
		if strings.Contains(s, "sk-do-not-print") {
			t.Errorf("secret printed: %s", s)
		}
	}
	if Secret("").String() != "" || Secret("x").String() != "REDACTED" {
		t.Errorf("Secret.String: empty %q, set %q", Secret("").String(), Secret("x").String())
	}
}

func TestMissing(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{"example", "channels:\n  telegram:\n    enabled: false\n", []string{"provider.api_key: api.openai.com needs an API key: set OPENAI_API_KEY"}},
		{"variable named in file", "provider:\n  api_key: ${DEEPSEEK_KEY}\n  base_url: https://api.deepseek.com\nchannels:\n  telegram:\n    enabled: false\n",
			[]string{"provider.api_key: api.deepseek.com needs an API key: set DEEPSEEK_KEY"}},
		{"local model", "provider:\n  base_url: http://127.0.0.1:11434/v1\nchannels:\n  telegram:\n    enabled: false\n", nil},
		{"compose service", "provider:\n  base_url: http://ollama:11434/v1\nchannels:\n  telegram:\n    enabled: false\n", nil},
		{"telegram without users", "provider:\n  api_key: k\nchannels:\n  telegram:\n    enabled: true\n    token: 1:x\n",
			[]string{"channels.telegram.allow_from: empty, so nobody may use the bot: add your numeric Telegram user id"}},
		{"complete", "provider:\n  api_key: k\nchannels:\n  telegram:\n    enabled: true\n    token: 1:x\n    allow_from: [5]\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse("config.yaml", []byte(tt.yaml), noEnv)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tt.want, c.Missing()); diff != "" {
				t.Errorf("Missing() (-want +got):\n%s", diff)
			}
		})
	}
	c := Default()
	c.Channels.Telegram.Enabled = true
	want := []string{
		"provider.api_key: api.openai.com needs an API key: set OPENAI_API_KEY",
		"channels.telegram.token: set TELEGRAM_BOT_TOKEN and write token: ${TELEGRAM_BOT_TOKEN}",
		"channels.telegram.allow_from: empty, so nobody may use the bot: add your numeric Telegram user id",
	}
	if diff := cmp.Diff(want, c.Missing()); diff != "" {
		t.Errorf("Default() with telegram enabled: Missing() (-want +got):\n%s", diff)
	}
}

func TestDefaultValidates(t *testing.T) {
	if err := Default().Validate(); err != nil {
		t.Errorf("Default().Validate() = %v", err)
	}
	c := Default()
	c.Memory.Window = 2
	if want := "config: memory.window: must be at least 4"; c.Validate() == nil || c.Validate().Error() != want {
		t.Errorf("Validate() = %v, want %s", c.Validate(), want)
	}
}

func TestChanged(t *testing.T) {
	old := Default()
	if got := Changed(old, Default()); len(got) != 0 {
		t.Errorf("Changed(default, default) = %q, want none", got)
	}
	next := Default()
	next.Provider.Model = "gpt-4.1"
	next.Channels.Telegram.AllowFrom = []string{"42"}
	next.Channels.Telegram.Token = "1:new"
	next.Channels.Telegram.Webhook.Listen = "0.0.0.0:8443"
	next.Storage.Path = "/elsewhere.db"
	next.Gateway.Listen = ""
	next.Log.Level = "debug"
	next.Memory.Scope = ScopeChat
	next.Tools.Exec.Categories = nil // nil and empty are the same

	wantRestart := []string{"storage.path", "memory.scope", "channels.telegram.token", "channels.telegram.webhook.listen", "gateway.listen"}
	if diff := cmp.Diff(wantRestart, Changed(old, next)); diff != "" {
		t.Errorf("Changed (-want +got):\n%s", diff)
	}
	wantDiff := []string{"provider.model", "storage.path", "memory.scope", "channels.telegram.token", "channels.telegram.allow_from",
		"channels.telegram.webhook.listen", "gateway.listen", "log.level"}
	if diff := cmp.Diff(wantDiff, Diff(old, next)); diff != "" {
		t.Errorf("Diff (-want +got):\n%s", diff)
	}
}

func TestErrorFormat(t *testing.T) {
	tests := []struct {
		err  Error
		want string
	}{
		{Error{File: "config.yaml", Line: 14, Key: "agent.max_iterations", Problem: "must be between 1 and 200"},
			"config.yaml:14: agent.max_iterations: must be between 1 and 200"},
		{Error{File: "/etc/nanobot/config.yaml", Key: "storage.path", Problem: "must not be empty"},
			"/etc/nanobot/config.yaml: storage.path: must not be empty"},
		{Error{File: "config.yaml", Line: 3, Problem: "invalid YAML: x\ny"}, "config.yaml:3: invalid YAML: x y"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("%#v.Error() = %q, want %q", tt.err, got, tt.want)
		}
	}
}

func TestCheckTelegram(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		env  map[string]string
		want string
	}{
		{
			name: "telegram enabled without token",
			yaml: "channels:\n  telegram:\n    enabled: true\n    token: ${TELEGRAM_BOT_TOKEN}\n    allow_from: [42]\n",
			want: "config.yaml:4: channels.telegram.token: required when channels.telegram.enabled is true: set TELEGRAM_BOT_TOKEN",
		},
		{
			name: "telegram enabled with token variable renamed",
			yaml: "channels:\n  telegram:\n    enabled: true\n    token: ${MY_BOT_TOKEN}\n",
			want: "config.yaml:4: channels.telegram.token: required when channels.telegram.enabled is true: set MY_BOT_TOKEN",
		},
		{
			name: "telegram enabled without token key",
			yaml: "channels:\n  telegram:\n    enabled: true\n",
			want: "config.yaml:2: channels.telegram.token: required when channels.telegram.enabled is true: set TELEGRAM_BOT_TOKEN and write token: ${TELEGRAM_BOT_TOKEN}",
		},
		{
			name: "telegram disabled",
			yaml: "channels:\n  telegram:\n    enabled: false\n",
		},
		{
			name: "token set",
			yaml: "channels:\n  telegram:\n    enabled: true\n    token: ${TELEGRAM_BOT_TOKEN}\n",
			env:  map[string]string{"TELEGRAM_BOT_TOKEN": "123:abc"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse("config.yaml", []byte(tt.yaml), func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok })
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			got := ""
			if err := cfg.CheckTelegram(); err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("CheckTelegram() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSandboxPathsAbsolute(t *testing.T) {
	dir := t.TempDir()
	data := []byte("tools:\n  exec:\n    sandbox_paths:\n      read: [~/projects, shared]\n      write: [/srv/scratch]\n")
	c, err := Parse(filepath.Join(dir, "config.yaml"), data, env(map[string]string{"HOME": "/home/u"}))
	if err != nil {
		t.Fatal(err)
	}
	want := SandboxPaths{Read: []string{"/home/u/projects", filepath.Join(dir, "shared")}, Write: []string{"/srv/scratch"}}
	if diff := cmp.Diff(want, c.Tools.Exec.SandboxPaths); diff != "" {
		t.Errorf("sandbox_paths (-want +got):\n%s", diff)
	}
	if n, err := c.Tools.Exec.Limits.Memory.Bytes(); err != nil || n != 1<<30 {
		t.Errorf("default memory limit = %d, %v; want 1GiB", n, err)
	}
}

func TestSizeBytes(t *testing.T) {
	tests := []struct {
		in   Size
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"", 0, true}, {"1024", 1024, true}, {"512MiB", 512 << 20, true}, {"1GiB", 1 << 30, true},
		{"2G", 2 << 30, true}, {"10GB", 10_000_000_000, true}, {"64 KiB", 64 << 10, true},
		{"lots", 0, false}, {"1PB", 0, false}, {"-1G", 0, false}, {"99999999999999999TiB", 0, false},
	}
	for _, tt := range tests {
		got, err := tt.in.Bytes()
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("Size(%q).Bytes() = %d, %v; want %d, ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestExecEnvLoads(t *testing.T) {
	c, err := Parse("config.yaml", []byte("provider:\n  api_key: ${K}\ntools:\n  exec:\n    env: [GOPATH, PAGER=cat, \"GOFLAGS=-mod=mod\"]\n"), env(map[string]string{"K": "sk-abcdef"}))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"GOPATH", "PAGER=cat", "GOFLAGS=-mod=mod"}; !slices.Equal(c.Tools.Exec.Env, want) {
		t.Errorf("tools.exec.env = %q, want %q", c.Tools.Exec.Env, want)
	}
}

func TestAPIKeysAreSecrets(t *testing.T) {
	env := map[string]string{"PHONE_KEY": "phone-key-0123456789abcdef\n"}
	data := []byte("api:\n  listen: \"[::1]:18792\"\n  keys:\n    - {key: \"${PHONE_KEY}\", name: phone}\n    - {key: laptop-key-0123456789abcdef, name: laptop, chat: desk}\n")
	c, err := Parse("config.yaml", data, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	if got := c.API.Keys[0]; got.Key != "phone-key-0123456789abcdef" || got.ChatName() != "phone" || c.API.Keys[1].ChatName() != "desk" {
		t.Errorf("keys %+v", c.API.Keys)
	}
	if s := c.Secrets(); !slices.Contains(s, "phone-key-0123456789abcdef") || !slices.Contains(s, "laptop-key-0123456789abcdef") {
		t.Errorf("secrets %d entries, want both keys among them", len(s))
	}
	out, err := c.Redacted()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "key-0123456789") {
		t.Errorf("a key in the redacted config:\n%s", out)
	}
	if !LoopbackListen("[::1]:18792") || !LoopbackListen("localhost:1") || LoopbackListen("0.0.0.0:1") || LoopbackListen(":1") {
		t.Error("LoopbackListen")
	}
}
