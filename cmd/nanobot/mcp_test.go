package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/mcp/mcptest"
	"github.com/nanobot-go/nanobot/agent/openai/openaitest"
)

// TestMCPHelperServer is the stdio MCP server the other tests start.
func TestMCPHelperServer(t *testing.T) { mcptest.Serve(t) }

// stdioEntry is the config of a stdio server running the test binary.
func stdioEntry(name string, extra string) string {
	cmd, args := mcptest.Command("TestMCPHelperServer")
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = strconv.Quote(a)
	}
	return fmt.Sprintf("    %s:\n      command: %s\n      args: [%s]\n      env: {%s: \"1\", NANOBOT_TEST_PASSED: passed}\n%s",
		name, strconv.Quote(cmd), strings.Join(quoted, ", "), mcptest.ServeEnv, extra)
}

// withMCP writes servers (indented entries) as tools.mcp_servers of the
// config file at path.
func withMCP(t *testing.T, path, servers string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const empty = "\n  mcp_servers: {}"
	i := strings.Index(string(data), empty)
	if i < 0 {
		t.Fatal("the config has no empty mcp_servers line")
	}
	line := strings.Index(string(data)[i+1:], "\n") + i + 1
	out := string(data[:i]) + "\n  mcp_servers:\n" + strings.TrimRight(servers, "\n") + string(data[line:])
	if err := os.WriteFile(path, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
}

func mcpCall(id, name, args string) openaitest.Reply {
	return openaitest.Reply{ToolCalls: []agent.ToolCall{{ID: id, Name: name, Arguments: args}}}
}

func TestMCPStdioToolThroughTheModel(t *testing.T) {
	t.Setenv("NANOBOT_TEST_SECRET_TOKEN", "do-not-pass-me-on")
	stub := openaitest.NewServer(t)
	stub.Script(
		mcpCall("e", "mcp_test_echo", `{"text":"from the model"}`),
		mcpCall("p", "mcp_test_env", `{"text":"NANOBOT_TEST_PASSED"}`),
		mcpCall("s", "mcp_test_env", `{"text":"NANOBOT_TEST_SECRET_TOKEN"}`),
		openaitest.Reply{Text: "done with the server"},
	)
	cfg := writeConfig(t, t.TempDir(), stub.URL(), nil)
	withMCP(t, cfg, stdioEntry("test", ""))
	r := runCLI(t.Context(), "", "-c", cfg, "agent", "-m", "use the server")
	if r.code != 0 || !strings.Contains(r.stdout, "done with the server") {
		t.Fatalf("agent = %d %q\n%s", r.code, r.stdout, r.stderr)
	}
	if got := toolResult(t, stub, "e"); got != agent.Untrusted("echo: from the model") {
		t.Errorf("echo result = %q", got)
	}
	if got := toolResult(t, stub, "p"); !strings.Contains(got, "NANOBOT_TEST_PASSED=passed") {
		t.Errorf("configured env = %q, want it passed to the server", got)
	}
	if got := toolResult(t, stub, "s"); !strings.Contains(got, "NANOBOT_TEST_SECRET_TOKEN is not set") {
		t.Errorf("secret env = %q, want it scrubbed as for exec", got)
	}
	req := stub.Requests()[0]
	var spec string
	for _, tl := range req.Tools {
		if tl.Function.Name == "mcp_test_echo" {
			b, _ := json.Marshal(tl.Function.Parameters)
			spec = string(b)
		}
	}
	if !strings.Contains(spec, `"text"`) || strings.Contains(spec, "$schema") {
		t.Errorf("mcp_test_echo parameters = %s", spec)
	}
	audit := runCLI(t.Context(), "", "-c", cfg, "audit")
	if !strings.Contains(audit.stdout, "mcp_test_echo") || !strings.Contains(audit.stdout, "mcp: server test") {
		t.Errorf("the audit trail lacks the call with its server:\n%s", audit.stdout)
	}
}

func TestMCPHTTPToolThroughTheModel(t *testing.T) {
	url := mcptest.NewHTTPServer(t, 0, nil)
	stub := openaitest.NewServer(t)
	stub.Script(mcpCall("a", "mcp_remote_add", `{"a":20,"b":22}`), openaitest.Reply{Text: "the sum is 42"})
	cfg := writeConfig(t, t.TempDir(), stub.URL(), nil)
	// A loopback endpoint: the owner configured it, so the URL guard does not apply.
	withMCP(t, cfg, "    remote:\n      url: "+url+"\n      tools: [add]\n")
	r := runCLI(t.Context(), "", "-c", cfg, "agent", "-m", "add them")
	if r.code != 0 {
		t.Fatalf("agent = %d\n%s", r.code, r.stderr)
	}
	if got := toolResult(t, stub, "a"); got != agent.Untrusted("42") {
		t.Errorf("add result = %q", got)
	}
	if names := toolNames(stub); strings.Contains(strings.Join(names, " "), "mcp_remote_echo") {
		t.Errorf("tools = %v: echo offered though tools lists only add", names)
	}
}

func TestMCPHangingCallIsAnErrorResult(t *testing.T) {
	stub := openaitest.NewServer(t)
	stub.Script(mcpCall("h", "mcp_test_hang", `{}`), openaitest.Reply{Text: "it did not answer"})
	cfg := writeConfig(t, t.TempDir(), stub.URL(), nil)
	withMCP(t, cfg, stdioEntry("test", "      timeout: 300ms\n"))
	if r := runCLI(t.Context(), "", "-c", cfg, "agent", "-m", "try it"); r.code != 0 {
		t.Fatalf("agent = %d\n%s", r.code, r.stderr)
	}
	if got := toolResult(t, stub, "h"); got != "Error: MCP server test did not answer within 300ms; the call was cancelled" {
		t.Errorf("hang result = %q", got)
	}
}

func TestGatewayReportsAMissingMCPServer(t *testing.T) {
	addr := freeAddr(t)
	h := startGateway(t, map[string]string{"gateway.listen": addr})
	h.stop()
	withMCP(t, h.cfg, "    ghost:\n      command: nanobot-test-no-such-mcp-server\n"+stdioEntry("test", ""))
	from := len(h.logs.String())
	h.start()
	waitLog(t, h, from, "mcp server not available; retrying")
	waitLog(t, h, waitLog(t, h, from, "mcp server ready"), "tool set updated")

	h.model.Script(mcpCall("e", "mcp_test_echo", `{"text":"hi"}`), openaitest.Reply{Text: "the gateway answers"})
	h.tg.SendText(owner, owner, "ada", "hello")
	waitSentContaining(t, h.tg, owner, "the gateway answers")
	if got := toolResult(t, h.model, "e"); !strings.Contains(got, "echo: hi") {
		t.Errorf("echo through the gateway = %q", got)
	}

	r := runCLI(t.Context(), "", "-c", h.cfg, "status")
	if !strings.Contains(r.stdout, "ghost (stdio): failed: ") || !strings.Contains(r.stdout, "executable file not found") ||
		!strings.Contains(r.stdout, "(running gateway)") || !strings.Contains(r.stdout, "test (stdio): ready, 7 tools") {
		t.Errorf("status does not report the servers:\n%s", r.stdout)
	}
	ready := runCLI(t.Context(), "", "-c", h.cfg, "health", "--ready")
	if ready.code != 0 {
		t.Errorf("health --ready = %d %s: a failed MCP server must not make the gateway unready", ready.code, ready.stderr)
	}
	if !strings.Contains(h.logs.String(), "mcp server not available; retrying") || !strings.Contains(h.logs.String(), "server=ghost") {
		t.Errorf("the log does not report the failed server:\n%s", h.logs.String())
	}
}

func TestMCPApprovalThroughTelegram(t *testing.T) {
	h := startGateway(t, nil)
	h.stop()
	withMCP(t, h.cfg, stdioEntry("test", "      approval: owner\n"))
	from := len(h.logs.String())
	h.start()
	waitLog(t, h, waitLog(t, h, from, "mcp server ready"), "tool set updated")
	h.model.Script(mcpCall("e", "mcp_test_echo", `{"text":"launch"}`), openaitest.Reply{Text: "the owner said no"})
	h.tg.SendText(owner, owner, "ada", "run the server tool")
	ask := waitSentContaining(t, h.tg, owner, "mcp_test_echo")
	if !strings.Contains(ask.Text, "launch") || !strings.Contains(ask.Text, "MCP server test") {
		t.Errorf("approval request = %q", ask.Text)
	}
	var markup struct {
		InlineKeyboard [][]struct {
			CallbackData string `json:"callback_data"`
		} `json:"inline_keyboard"`
	}
	if err := json.Unmarshal([]byte(ask.ReplyMarkup), &markup); err != nil || len(markup.InlineKeyboard) == 0 {
		t.Fatalf("approval message has no buttons: %q", ask.ReplyMarkup)
	}
	var deny string
	for _, b := range markup.InlineKeyboard[0] {
		if strings.HasPrefix(b.CallbackData, "deny:") {
			deny = b.CallbackData
		}
	}
	h.tg.PressButton(owner, owner, ask.MessageID, deny)
	waitSentContaining(t, h.tg, owner, "the owner said no")
	if got := toolResult(t, h.model, "e"); got != "Error: the call to mcp_test_echo was not run: the owner denied it" {
		t.Errorf("result after the denial = %q", got)
	}
}

func TestGatewayReloadStartsAnMCPServer(t *testing.T) {
	h := startGateway(t, nil)
	h.model.Script(openaitest.Reply{Text: "before"})
	h.tg.SendText(owner, owner, "ada", "one")
	waitSentContaining(t, h.tg, owner, "before")
	if names := toolNames(h.model); strings.Contains(strings.Join(names, " "), "mcp_") {
		t.Fatalf("MCP tools before any server: %v", names)
	}
	from := len(h.logs.String())
	withMCP(t, h.cfg, stdioEntry("test", ""))
	waitLog(t, h, waitLog(t, h, from, "mcp server ready"), "tool set updated")

	h.model.Script(mcpCall("e", "mcp_test_echo", `{"text":"after the reload"}`), openaitest.Reply{Text: "after"})
	h.tg.SendText(owner, owner, "ada", "two")
	waitSentContaining(t, h.tg, owner, "after")
	if got := toolResult(t, h.model, "e"); !strings.Contains(got, "echo: after the reload") {
		t.Errorf("echo after the reload = %q", got)
	}
}

// waitLog waits for a log line containing s written past offset from of
// the log, and returns the offset after it.
func waitLog(t *testing.T, h *gatewayHarness, from int, s string) int {
	t.Helper()
	ctx := waitCtx(t)
	for {
		next := h.logs.next()
		if i := strings.Index(h.logs.String()[from:], s); i >= 0 {
			return from + i + len(s)
		}
		select {
		case <-next:
		case <-ctx.Done():
			t.Fatalf("no log line %q:\n%s", s, h.logs.String())
		}
	}
}
