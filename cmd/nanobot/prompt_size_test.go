package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot"
	"github.com/nanobot-go/nanobot/agent/mcp/mcptest"
	"github.com/nanobot-go/nanobot/agent/openai/openaitest"
	"github.com/nanobot-go/nanobot/channels/telegram/telegramtest"
	"github.com/nanobot-go/nanobot/config"
)

// firstRequest runs `agent -m hi` in dir and returns the request the model
// received: its whole JSON body, and the built-in part (system prompt and
// tool schemas).
func firstRequest(t *testing.T, dir string, setup func(cfg string)) (body, system, tools int) {
	t.Helper()
	stub := openaitest.NewServer(t)
	stub.Script(openaitest.Reply{Text: "ok"})
	cfg := writeConfig(t, dir, stub.URL(), nil)
	if setup != nil {
		setup(cfg)
	}
	if r := runCLI(t.Context(), "", "-c", cfg, "agent", "-m", "hi"); r.code != 0 {
		t.Fatalf("agent = %d\n%s", r.code, r.stderr)
	}
	req, _ := stub.LastRequest()
	b, _ := json.Marshal(req)
	schemas, _ := json.Marshal(req.Tools)
	return len(b), len(req.Messages[0].Content), len(schemas)
}

// The built-in prompt and the built-in tools' schemas stay under 8 KB.
func TestBuiltinPromptAndToolsUnder8KB(t *testing.T) {
	_, system, tools := firstRequest(t, t.TempDir(), nil)
	if system+tools > 8<<10 {
		t.Errorf("system prompt %d + tool schemas %d = %d bytes, over 8 KB", system, tools, system+tools)
	}
	t.Logf("system prompt %d bytes, tool schemas %d bytes", system, tools)
}

// TestFirstRequestBytes reports the size of the first request with no
// workspace skills, with 20 listed, and with an MCP server offering 10
// tools. It only reports; -v shows the figures.
func TestFirstRequestBytes(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, dir, cfg string)
	}{
		{"no skills", nil},
		{"20 skills", func(t *testing.T, dir, _ string) {
			for i := range 20 {
				writeWorkspaceFile(t, filepath.Join(dir, "workspace", "skills", fmt.Sprintf("skill-%02d", i), "SKILL.md"),
					fmt.Sprintf("---\nname: skill-%02d\ndescription: Handle requests of kind %d: look the facts up first, then answer in the user's format.\n---\nSteps.", i, i))
			}
		}},
		{"MCP server with 10 tools", func(t *testing.T, _, cfg string) {
			withMCP(t, cfg, stdioEntry("docs", fmt.Sprintf("      tools: [%s]\n", tenTools())))
			patchEnv(t, cfg, "docs", mcptest.ExtraEnv+": \"10\"")
		}},
	}
	var rows []string
	for _, c := range cases {
		dir := t.TempDir()
		body, system, tools := firstRequest(t, dir, func(cfg string) {
			if c.setup != nil {
				c.setup(t, dir, cfg)
			}
		})
		rows = append(rows, fmt.Sprintf("%-26s request %6d bytes (system prompt %5d, tool schemas %5d)", c.name, body, system, tools))
	}
	t.Log("\n" + strings.Join(rows, "\n"))
}

func tenTools() string {
	names := make([]string, 10)
	for i := range names {
		names[i] = fmt.Sprintf("tool_%d", i)
	}
	return strings.Join(names, ", ")
}

// patchEnv adds an entry to the env of the server name written by stdioEntry.
func patchEnv(t *testing.T, cfg, name, entry string) {
	t.Helper()
	data, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	i := strings.Index(s, "    "+name+":\n")
	j := strings.Index(s[i:], "env: {") + i + len("env: {")
	if err := os.WriteFile(cfg, []byte(s[:j]+entry+", "+s[j:]), 0o600); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkGatewayStart measures the time from running `nanobot gateway`
// to its "gateway started" line, with no MCP server and with two that each
// take two seconds to start: the servers start in the background, so the
// figures should match.
func BenchmarkGatewayStart(b *testing.B) {
	for _, servers := range []int{0, 2} {
		b.Run(fmt.Sprintf("mcp_servers=%d", servers), func(b *testing.B) {
			tg := telegramtest.NewServer(b, botToken)
			model := openaitest.NewServer(b)
			var total time.Duration
			for b.Loop() {
				total += startOnce(b, tg, model, servers)
			}
			b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/start")
		})
	}
}

// startOnce starts a gateway, waits for its "gateway started" line and
// stops it; it returns the time to that line.
func startOnce(b *testing.B, tg *telegramtest.Server, model *openaitest.Server, servers int) time.Duration {
	dir := b.TempDir()
	out, err := config.SetKeys(nanobot.ExampleConfig, map[string]string{
		"provider.base_url": model.URL(), "provider.api_key": testKey, "gateway.listen": "", "web.listen": "", "log.level": "info",
		"channels.telegram.token": tg.Token(), "channels.telegram.api_url": tg.URL(), "channels.telegram.allow_from": "[111]",
	})
	if err != nil {
		b.Fatal(err)
	}
	var entries strings.Builder
	for i := range servers {
		entries.WriteString(strings.Replace(stdioEntry(fmt.Sprintf("slow%d", i), ""), "env: {", "env: {"+mcptest.StartDelayEnv+": 2s, ", 1))
	}
	text := string(out)
	if servers > 0 {
		text = strings.Replace(text, "\n  mcp_servers: {}", "\n  mcp_servers:\n"+strings.TrimRight(entries.String(), "\n"), 1)
	}
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		b.Fatal(err)
	}
	logs := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	a := &app{stdin: strings.NewReader(""), stdout: logs, stderr: logs, getenv: func(string) string { return "" }}
	start := time.Now()
	go func() { done <- a.run(ctx, []string{"-c", path, "gateway"}) }()
	deadline := time.After(60 * time.Second)
	for {
		next := logs.next()
		if strings.Contains(logs.String(), "gateway started") {
			break
		}
		select {
		case <-next:
		case <-deadline:
			b.Fatalf("no start within 60 s:\n%s", logs.String())
		}
	}
	took := time.Since(start)
	cancel()
	// Stopped in its first milliseconds, the gateway may report the
	// interrupted start-up; only the start is measured here.
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		b.Fatalf("gateway: %v\n%s", err, logs.String())
	}
	return took
}
