package config

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const mcpYAML = `
channels:
  telegram:
    allow_from: [42]
tools:
  web:
    search:
      provider: brave
      api_key: ${BRAVE}
  mcp_servers:
    github:
      command: npx
      args: ["-y", "server-github"]
      env: {GITHUB_PERSONAL_ACCESS_TOKEN: "${GH}", LOG_LEVEL: info, REGION: "${REGION}"}
      tools: [get_issue]
    docs:
      url: https://user:url-pass@mcp.example.com/mcp
      headers: {Authorization: "Bearer header-secret"}
      timeout: 5s
      approval: owner
    off:
      command: ./server
      enabled: false
`

func TestMCPServersAndSearch(t *testing.T) {
	c, err := Parse("config.yaml", []byte(mcpYAML), env(map[string]string{"BRAVE": "brave-key-1", "GH": "ghp_token_1", "REGION": "eu-west"}))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := map[string]MCPServer{
		"github": {Command: "npx", Args: []string{"-y", "server-github"},
			Env:     map[string]string{"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_token_1", "LOG_LEVEL": "info", "REGION": "eu-west"},
			Timeout: 30 * time.Second, Enabled: true, Tools: []string{"get_issue"}, Approval: ApprovalAllow},
		"docs": {URL: "https://user:url-pass@mcp.example.com/mcp", Headers: map[string]Secret{"Authorization": "Bearer header-secret"},
			Timeout: 5 * time.Second, Enabled: true, Approval: ApprovalOwner},
		"off": {Command: "./server", Timeout: 30 * time.Second, Approval: ApprovalAllow},
	}
	if diff := cmp.Diff(want, c.Tools.MCPServers); diff != "" {
		t.Errorf("mcp_servers (-want +got):\n%s", diff)
	}
	if !c.SearchReady() {
		t.Error("SearchReady() = false with brave and a key")
	}

	secrets := c.Secrets()
	for _, s := range []string{"brave-key-1", "ghp_token_1", "eu-west", "Bearer header-secret", "url-pass"} {
		if !slices.Contains(secrets, s) {
			t.Errorf("Secrets() = %q, lacks %q", secrets, s)
		}
	}
	if slices.Contains(secrets, "info") {
		t.Errorf("Secrets() = %q: a plain env value written in the file is no secret", secrets)
	}
	out, err := c.Redacted()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"brave-key-1", "ghp_token_1", "eu-west", "header-secret", "url-pass"} {
		if bytes.Contains(out, []byte(s)) {
			t.Errorf("Redacted() reveals %q:\n%s", s, out)
		}
	}
	if !bytes.Contains(out, []byte("LOG_LEVEL: info")) {
		t.Errorf("Redacted() hides a plain env value:\n%s", out)
	}
	if _, err := Parse("config.yaml", out, noEnv); err != nil {
		t.Errorf("Parse(Redacted()): %v\n%s", err, out)
	}
	base, err := Parse("config.yaml", nil, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if keys := Changed(base, c); len(keys) != 0 {
		t.Errorf("Changed() = %v: MCP servers and search apply without a restart", keys)
	}
}

func TestMCPAndSearchErrors(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"neither", "tools:\n  mcp_servers:\n    x:\n      timeout: 5s\n",
			"config.yaml:3: tools.mcp_servers.x: needs a command (a server spoken to over stdio) or a url (streamable HTTP)"},
		{"empty entry", "tools:\n  mcp_servers:\n    x:\n",
			"config.yaml:3: tools.mcp_servers.x: needs a command"},
		{"both", "tools:\n  mcp_servers:\n    x:\n      command: a\n      url: http://h/mcp\n",
			"config.yaml:5: tools.mcp_servers.x.url: a server has a command or a url, not both"},
		{"bad url", "tools:\n  mcp_servers:\n    x:\n      url: ftp://h\n", "tools.mcp_servers.x.url: must be an http:// or https:// URL"},
		{"bad name", "tools:\n  mcp_servers:\n    \"a b\":\n      command: a\n", "tools.mcp_servers.a b: server names are"},
		{"headers on stdio", "tools:\n  mcp_servers:\n    x:\n      command: a\n      headers: {A: b}\n", "tools.mcp_servers.x.headers: headers are for servers reached over HTTP"},
		{"args on http", "tools:\n  mcp_servers:\n    x:\n      url: http://h/\n      args: [a]\n", "tools.mcp_servers.x.args: args and env are for servers started with a command"},
		{"bad env name", "tools:\n  mcp_servers:\n    x:\n      command: a\n      env: {\"A-B\": c}\n", "tools.mcp_servers.x.env.A-B: is not a valid environment variable name"},
		{"approval", "tools:\n  mcp_servers:\n    x:\n      command: a\n      approval: ask\n", `tools.mcp_servers.x.approval: must be one of deny, owner, allow, not "ask"`},
		{"owner without owner", "tools:\n  mcp_servers:\n    x:\n      command: a\n      approval: owner\n", "tools.mcp_servers.x.approval: owner approval needs a numeric user id"},
		{"unknown server key", "tools:\n  mcp_servers:\n    x:\n      comand: a\n", `config.yaml:4: tools.mcp_servers.x.comand: unknown key (did you mean "command"?)`},
		{"provider", "tools:\n  web:\n    search:\n      provider: google\n", `tools.web.search.provider: must be brave, searxng, tavily or "" (no search tool), not "google"`},
		{"searxng without url", "tools:\n  web:\n    search:\n      provider: searxng\n", "tools.web.search.url: searxng needs the URL of the instance"},
		{"prompt file cap", "agent:\n  prompt_file_max_chars: 10\n", "agent.prompt_file_max_chars: must be at least 100"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("config.yaml", []byte(tt.yaml), noEnv)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse(%q) error = %v, want one containing %q", tt.yaml, err, tt.want)
			}
		})
	}
}

func TestSearchMissingKey(t *testing.T) {
	c, err := Parse("config.yaml", []byte("channels:\n  telegram:\n    enabled: false\nprovider:\n  api_key: k\ntools:\n  web:\n    search:\n      provider: tavily\n      api_key: ${TAVILY_API_KEY}\n"), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"tools.web.search.api_key: tavily needs an API key, so web_search is not offered: set TAVILY_API_KEY"}
	if diff := cmp.Diff(want, c.Missing()); diff != "" {
		t.Errorf("Missing() (-want +got):\n%s", diff)
	}
	if c.SearchReady() {
		t.Error("SearchReady() = true without a key")
	}
}
