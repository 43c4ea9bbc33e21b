package main

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/openai/openaitest"
)

// A provider that serves part of the prompt from its cache: /status,
// `nanobot usage`, `nanobot status` and /metrics all say how much.
func TestCachedTokensEndToEnd(t *testing.T) {
	addr := freeAddr(t)
	h := startGateway(t, map[string]string{"gateway.listen": addr, "agent.daily_token_budget": "100000"})
	if status := h.ask("/status"); strings.Contains(status.Text, "Cached") {
		t.Errorf("/status before any cached token = %q, want no cached line", status.Text)
	}

	h.model.Script(
		openaitest.Reply{ToolCalls: []agent.ToolCall{{ID: "ls", Name: "list_dir", Arguments: `{"path":"."}`}},
			Usage: agent.Usage{PromptTokens: 1000, CompletionTokens: 20}},
		openaitest.Reply{Text: "The workspace is empty.", Usage: agent.Usage{PromptTokens: 1100, CompletionTokens: 30, CachedTokens: 896}},
	)
	if got := h.ask("what is in my workspace?"); got.Text != "The workspace is empty." {
		t.Fatalf("answer = %q", got.Text)
	}

	// 896 of 2100 prompt tokens is 42.67%. The budget counts cached
	// tokens as the prompt tokens they are.
	status := h.ask("/status").Text
	for _, want := range []string{"Tokens today: 2150 of 100000", "\nCached today: 896 of 2100 prompt tokens (43%)"} {
		if !strings.Contains(status, want) {
			t.Errorf("/status = %q, want it to contain %q", status, want)
		}
	}

	r := runCLI(t.Context(), "", "-c", h.cfg, "usage", "--since", "1d")
	if r.code != 0 {
		t.Fatalf("usage = %d\n%s", r.code, r.stderr)
	}
	rows := linesWith(r.stdout, fmt.Sprintf("telegram:%d", owner))
	// DAY CHAT MODEL CALLS PROMPT COMPLETION TOTAL CACHED CACHED%
	if len(rows) != 1 || !slices.Equal(strings.Fields(rows[0])[2:], []string{"gpt-4o-mini", "2", "2100", "50", "2150", "896", "43%"}) {
		t.Errorf("usage rows of the chat = %q, want 2 calls, 2100 prompt, 50 completion, 2150 total, 896 cached, 43%%\n%s", rows, r.stdout)
	}
	if header := strings.Fields(strings.SplitN(r.stdout, "\n", 2)[0]); !slices.Equal(header,
		[]string{"DAY", "CHAT", "MODEL", "CALLS", "PROMPT", "COMPLETION", "TOTAL", "CACHED", "CACHED%"}) {
		t.Errorf("usage header = %q, want the old columns in their order, then CACHED and CACHED%%", header)
	}
	if total := linesWith(r.stdout, "total"); len(total) != 1 || !slices.Equal(strings.Fields(total[0])[1:], []string{"2", "2100", "50", "2150", "896", "43%"}) {
		t.Errorf("usage total = %q, want 2 calls, 2100, 50, 2150, 896 cached, 43%%", total)
	}

	st := runCLI(t.Context(), "", "-c", h.cfg, "status")
	if got := linesWith(st.stdout, "cached (24h)", "896 of 2100 prompt tokens (43%)"); len(got) != 1 {
		t.Errorf("status = %d, want a line of the cached tokens:\n%s\n%s", st.code, st.stdout, st.stderr)
	}

	code, body, err := httpGet(t.Context(), "http://"+addr+"/metrics")
	if err != nil || code != http.StatusOK {
		t.Fatalf("GET /metrics = %d, %v", code, err)
	}
	if v, ok := metricValue(body, "nanobot_model_cached_tokens_total"); !ok || v != 896 {
		t.Errorf("nanobot_model_cached_tokens_total = %v (present %v), want 896", v, ok)
	}
	if v, ok := metricValue(body, `nanobot_model_tokens_total{kind="prompt"}`); !ok || v != 2100 {
		t.Errorf(`nanobot_model_tokens_total{kind="prompt"} = %v (present %v), want 2100`, v, ok)
	}
}
