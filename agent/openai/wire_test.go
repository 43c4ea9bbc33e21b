package openai

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/openai/openaitest"
)

func TestDialectOf(t *testing.T) {
	tests := []struct {
		base, model string
		want        dialect
	}{
		{"https://api.openai.com/v1", "gpt-4.1-mini", dialect{cacheKey: true}},
		{"https://my-res.openai.azure.com/openai/v1", "my-deployment", dialect{cacheKey: true}},
		{"https://api.mistral.ai/v1", "open-model", dialect{shortIDs: true}},
		{"http://10.0.0.5:8000/v1", "mistralai/Mistral-Small-3.2-24B-Instruct-2506", dialect{shortIDs: true}},
		{"http://localhost:11434/v1", "devstral:24b", dialect{shortIDs: true}},
		{"https://openrouter.ai/api/v1", "anthropic/claude-sonnet-4", dialect{breakpoints: true}},
		{"https://api.deepseek.com", "deepseek-chat", dialect{}},
		{"http://localhost:11434/v1", "qwen3:8b", dialect{}},
	}
	for _, tt := range tests {
		if got := dialectOf(tt.base, tt.model); got != tt.want {
			t.Errorf("dialectOf(%q, %q) = %+v, want %+v", tt.base, tt.model, got, tt.want)
		}
	}
}

// The cache key is sent per chat, the same for every request of a chat,
// and tells the provider nothing of the chat; breakpoints mark the end of
// the system prompt and of the newest message.
func TestCacheFieldsOnTheWire(t *testing.T) {
	srv := openaitest.NewServer(t)
	h := newHarness(t, srv.URL(), nil)
	h.p.dialect = dialect{cacheKey: true, breakpoints: true}
	req := agent.Request{Messages: []agent.Message{
		{Role: agent.RoleSystem, Content: "you are nanobot"},
		{Role: agent.RoleUser, Content: "hi"},
	}}
	for _, session := range []string{"telegram:111", "telegram:111", "telegram:222"} {
		ctx := agent.WithTurn(t.Context(), agent.Turn{Session: session})
		if _, err := h.p.Complete(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	var keys []string
	for _, body := range srv.Bodies() {
		var r struct {
			Key      string `json:"prompt_cache_key"`
			Messages []struct {
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, r.Key)
		for i, m := range r.Messages {
			if !strings.Contains(string(m.Content), `"cache_control":{"type":"ephemeral"}`) {
				t.Errorf("message %d has no breakpoint: %s", i, m.Content)
			}
		}
		if strings.Contains(string(body), "111") || strings.Contains(string(body), "222") {
			t.Errorf("the body names the chat: %s", body)
		}
	}
	if len(keys) != 3 || keys[0] == "" || keys[0] != keys[1] || keys[1] == keys[2] {
		t.Errorf("prompt_cache_key per request %q: want one key per chat", keys)
	}
}
