package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/openai/openaitest"
)

const braveKey = "BSA-cmd-test-search-key-0042"

func toolNames(stub *openaitest.Server) []string {
	req, _ := stub.LastRequest()
	var names []string
	for _, tl := range req.Tools {
		names = append(names, tl.Function.Name)
	}
	return names
}

func TestWebSearchOnlyWithABackend(t *testing.T) {
	stub := openaitest.NewServer(t)
	stub.Script(openaitest.Reply{Text: "no search here"})
	dir := t.TempDir()
	cfg := writeConfig(t, dir, stub.URL(), nil)
	if r := runCLI(t.Context(), "", "-c", cfg, "agent", "-m", "hi"); r.code != 0 {
		t.Fatalf("agent = %d\n%s", r.code, r.stderr)
	}
	if names := toolNames(stub); slices.Contains(names, "web_search") || !slices.Contains(names, "web_fetch") {
		t.Errorf("tools without a backend = %v, want web_fetch and no web_search", names)
	}
	if r := runCLI(t.Context(), "", "-c", cfg, "status"); !strings.Contains(r.stdout, "web search      off") {
		t.Errorf("status without a backend:\n%s", r.stdout)
	}

	brave := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Subscription-Token") != braveKey || r.URL.Query().Get("q") != "nanobot go" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"web":{"results":[{"title":"nanobot","url":"https://example.org/nanobot","description":"A small assistant."}]}}`)
	}))
	t.Cleanup(brave.Close)
	stub.Script(
		openaitest.Reply{ToolCalls: []agent.ToolCall{{ID: "s", Name: "web_search", Arguments: `{"query":"nanobot go"}`}}},
		openaitest.Reply{Text: "found it"},
	)
	cfg = writeConfig(t, dir, stub.URL(), map[string]string{
		"tools.web.search.provider": "brave",
		"tools.web.search.api_key":  braveKey,
		"tools.web.search.url":      brave.URL,
	})
	r := runCLI(t.Context(), "", "-c", cfg, "agent", "-m", "search for nanobot")
	if r.code != 0 || !strings.Contains(r.stdout, "found it") {
		t.Fatalf("agent = %d %q\n%s", r.code, r.stdout, r.stderr)
	}
	if got := toolResult(t, stub, "s"); !strings.Contains(got, "1. nanobot\n   https://example.org/nanobot\n   A small assistant.") ||
		!strings.Contains(got, agent.UntrustedBegin) {
		t.Errorf("web_search result = %q", got)
	}
	if names := toolNames(stub); !slices.Contains(names, "web_search") {
		t.Errorf("tools with brave = %v, want web_search", names)
	}
	status := runCLI(t.Context(), "", "-c", cfg, "status")
	if !strings.Contains(status.stdout, "brave (api key set)") || strings.Contains(status.stdout, braveKey) {
		t.Errorf("status with brave:\n%s", status.stdout)
	}
	r.assertNoSecret(t)
	if strings.Contains(r.stdout+r.stderr, braveKey) {
		t.Error("the search key appears in the output")
	}
}
