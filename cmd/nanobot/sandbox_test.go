package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/agent/openai/openaitest"
	"github.com/nanobot-go/nanobot/channels/telegram/telegramtest"
	"github.com/nanobot-go/nanobot/safety/sandbox"
)

// runCLIWithABI runs the program as if the kernel offered Landlock ABI abi.
func runCLIWithABI(ctx context.Context, abi int, args ...string) result {
	var out, errb bytes.Buffer
	a := &app{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: func(string) string { return "" },
		abi: func() int { return abi }}
	err := a.run(ctx, args)
	code := exitCode(err, &errb)
	return result{err, code, out.String(), errb.String()}
}

func TestSandboxMissingKernelSupport(t *testing.T) {
	stub := openaitest.NewServer(t)
	stub.Script(openaitest.Reply{Text: "Hello."})
	auto := writeConfig(t, t.TempDir(), stub.URL(), nil)
	r := runCLIWithABI(t.Context(), 0, "-c", auto, "agent", "-m", "hello")
	if r.code != 0 || !strings.Contains(r.stderr, "exec sandbox NOT AVAILABLE") {
		t.Errorf("auto without Landlock = %d, stderr %q; want a start with a warning", r.code, r.stderr)
	}
	r = runCLIWithABI(t.Context(), 0, "-c", auto, "status")
	if r.code != 0 || !strings.Contains(r.stdout, "NOT AVAILABLE") || !strings.Contains(r.stdout, "sandbox paths") {
		t.Errorf("status without Landlock = %d:\n%s", r.code, r.stdout)
	}

	strict := writeConfig(t, t.TempDir(), stub.URL(), map[string]string{"tools.exec.sandbox": "landlock"})
	r = runCLIWithABI(t.Context(), 0, "-c", strict, "agent", "-m", "hello")
	if r.code != exitConfig || !strings.Contains(r.stderr, "tools.exec.sandbox") || !strings.Contains(r.stderr, "seccomp") {
		t.Errorf("landlock mode without Landlock = %d, stderr %q; want %d saying what to do", r.code, r.stderr, exitConfig)
	}
}

func TestSandboxRefusalThroughRun(t *testing.T) {
	if sandbox.ABI() < 1 {
		t.Skip("the kernel offers no Landlock")
	}
	outside := t.TempDir()
	canary := filepath.Join(outside, "canary")
	if err := os.WriteFile(canary, []byte("untouched"), 0o644); err != nil {
		t.Fatal(err)
	}
	stub := openaitest.NewServer(t)
	stub.Script(execCall("w", "echo changed > "+canary), openaitest.Reply{Text: "I could not write there."})
	cfg := writeConfig(t, t.TempDir(), stub.URL(), map[string]string{"tools.exec.allow": `["re:.*"]`})
	r := runCLI(t.Context(), "", "-c", cfg, "agent", "-m", "write the canary")
	if r.code != 0 {
		t.Fatal(r.stderr)
	}
	want := "write outside the workspace refused by the sandbox: " + canary
	if got := toolResult(t, stub, "w"); !strings.HasPrefix(got, "Error: ") || !strings.Contains(got, want) {
		t.Errorf("tool result = %q, want an error with %q", got, want)
	}
	if b, _ := os.ReadFile(canary); string(b) != "untouched" {
		t.Errorf("canary = %q", b)
	}
	r = runCLI(t.Context(), "", "-c", cfg, "audit", "--denied")
	if r.code != 0 || !strings.Contains(r.stdout, "deny") || !strings.Contains(r.stdout, "sandbox: write outside the workspace") {
		t.Errorf("audit --denied = %d:\n%q\n%q", r.code, r.stdout, r.stderr)
	}
}

func TestGatewayReportsMissingSandbox(t *testing.T) {
	tg := telegramtest.NewServer(t, botToken)
	model := openaitest.NewServer(t)
	dir := t.TempDir()
	addr := freeAddr(t)
	h := &gatewayHarness{t: t, tg: tg, model: model, dir: dir, logs: &syncBuffer{}, abi: func() int { return 0 }}
	h.cfg = gatewayConfig(t, dir, tg, model, map[string]string{"gateway.listen": addr})
	h.start()
	t.Cleanup(func() { h.stop() })

	body := waitHTTPStatus(t, "http://"+addr+"/readyz", http.StatusOK)
	if !strings.HasPrefix(body, "ready\n") || !strings.Contains(body, "sandbox: NOT AVAILABLE") {
		t.Errorf("/readyz body = %q, want ready and the missing sandbox", body)
	}
	tg.SendText(owner, owner, "ada", "/status")
	waitSentContaining(t, tg, owner, "Sandbox: NOT AVAILABLE")
	if !strings.Contains(h.logs.String(), "exec sandbox NOT AVAILABLE") {
		t.Error("the gateway did not say at start that the sandbox is missing")
	}
}
