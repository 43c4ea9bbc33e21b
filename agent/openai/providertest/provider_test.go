package providertest_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/openai"
	"github.com/nanobot-go/nanobot/agent/openai/providertest"
)

const apiKey = "sk-provider-test-key"

// provider is the real provider as the example configuration sets it up,
// pointed at the fake.
func provider(s *providertest.Server, retries int) *openai.Provider {
	return openai.New(openai.Config{
		BaseURL: s.URL(), APIKey: apiKey, Model: s.Profile().Model,
		MaxRetries: retries, MaxTokens: 4096, Timeout: 10 * time.Second,
	}, openai.WithBackoff(time.Millisecond, 10*time.Millisecond))
}

var listDir = agent.ToolSpec{Name: "list_dir", Description: "List a directory.",
	Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}

// TestProviderConformance drives the provider through a tool round and a
// second question against every fake and lists what each refused.
func TestProviderConformance(t *testing.T) {
	for _, p := range providertest.All() {
		t.Run(p.Name, func(t *testing.T) {
			s := providertest.New(t, p, providertest.WithAPIKey(apiKey))
			prov := provider(s, 0)
			defer func() {
				for _, v := range s.Violations() {
					t.Errorf("violation: %s", v)
				}
			}()
			s.Script(
				providertest.Reply{ToolCalls: []providertest.ScriptedCall{{Name: "list_dir", Arguments: `{"path":"."}`}}},
				providertest.Reply{Text: "The workspace holds notes.txt."},
				providertest.Reply{Text: "You are welcome."},
			)
			msgs := []agent.Message{
				{Role: agent.RoleSystem, Content: "You are helpful."},
				{Role: agent.RoleUser, Content: "What is in the workspace?"},
			}
			ctx := t.Context()
			resp, err := prov.Complete(ctx, agent.Request{Messages: msgs, Tools: []agent.ToolSpec{listDir}})
			if err != nil {
				t.Fatalf("first request: %v", err)
			}
			if len(resp.Message.ToolCalls) != 1 || resp.Message.ToolCalls[0].Name != "list_dir" {
				t.Fatalf("first reply = %+v, want the list_dir call", resp.Message)
			}
			if args := resp.Message.ToolCalls[0].Arguments; !json.Valid([]byte(args)) || !strings.Contains(args, `"path"`) {
				t.Errorf("arguments = %q, want the JSON text of the call", args)
			}
			tc := resp.Message.ToolCalls[0]
			msgs = append(msgs, resp.Message, agent.Message{Role: agent.RoleTool, ToolCallID: tc.ID, Name: tc.Name, Content: "notes.txt"})
			resp, err = prov.Complete(ctx, agent.Request{Messages: msgs, Tools: []agent.ToolSpec{listDir}})
			if err != nil {
				t.Fatalf("follow-up of the tool round: %v", err)
			}
			if resp.Message.Content != "The workspace holds notes.txt." {
				t.Errorf("follow-up answer = %q", resp.Message.Content)
			}
			if reportsCache(p) && resp.Usage.CachedTokens == 0 {
				t.Errorf("usage %+v: the cached tokens the provider reported were not read", resp.Usage)
			}
			msgs = append(msgs, resp.Message, agent.Message{Role: agent.RoleUser, Content: "Thanks!"})
			resp, err = prov.Complete(ctx, agent.Request{Messages: msgs, Tools: []agent.ToolSpec{listDir}})
			if err != nil {
				t.Fatalf("second question, with the tool round in the history: %v", err)
			}
			if resp.Message.Content != "You are welcome." {
				t.Errorf("second answer = %q", resp.Message.Content)
			}
		})
	}
}

// TestProviderContextOverflow: each provider's own wording of a prompt over
// its window is recognised, with the window it names.
func TestProviderContextOverflow(t *testing.T) {
	for _, p := range providertest.All() {
		if p.ContextError == nil {
			continue
		}
		t.Run(p.Name, func(t *testing.T) {
			s := providertest.New(t, p)
			ref := p.ContextError(140000, 131072)
			s.SetDefault(providertest.Reply{Refuse: &ref})
			_, err := provider(s, 1).Complete(t.Context(), agent.Request{Messages: []agent.Message{{Role: agent.RoleUser, Content: "hi"}}})
			if !errors.Is(err, agent.ErrContextOverflow) {
				t.Fatalf("error %v is not a context overflow", err)
			}
			var e interface{ ContextLimit() int }
			if errors.As(err, &e) && e.ContextLimit() != 0 && e.ContextLimit() != 131072 {
				t.Errorf("context limit %d, want 131072 or unknown", e.ContextLimit())
			}
		})
	}
}

// TestProviderGeminiRetryDelay: Gemini says how long to wait in the body's
// RetryInfo, not in a Retry-After header.
func TestProviderGeminiRetryDelay(t *testing.T) {
	s := providertest.New(t, providertest.Gemini())
	ref := providertest.GeminiRateLimited("1s")
	s.Script(providertest.Reply{Refuse: &ref}, providertest.Reply{Text: "after the wait"})
	start := time.Now()
	resp, err := provider(s, 1).Complete(t.Context(), agent.Request{Messages: []agent.Message{{Role: agent.RoleUser, Content: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Content != "after the wait" {
		t.Errorf("answer = %q", resp.Message.Content)
	}
	if waited := time.Since(start); waited < 900*time.Millisecond {
		t.Errorf("retried after %s, want the 1s of retryDelay", waited)
	}
}

// TestProviderOpenRouterErrorInside200: an error inside a 200 is an error
// that carries the provider's text, not an empty answer.
func TestProviderOpenRouterErrorInside200(t *testing.T) {
	for name, reply := range map[string]providertest.Reply{
		"choice with finish_reason error": providertest.OpenRouterChoiceError(502, "Upstream provider overloaded"),
		"top-level error, no choices":     providertest.OpenRouterTopLevelError(502, "Upstream provider overloaded"),
	} {
		t.Run(name, func(t *testing.T) {
			s := providertest.New(t, providertest.OpenRouter())
			s.SetDefault(reply)
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			resp, err := provider(s, 1).Complete(ctx, agent.Request{Messages: []agent.Message{{Role: agent.RoleUser, Content: "hi"}}})
			if err == nil {
				t.Fatalf("no error; answer %+v", resp.Message)
			}
			if !strings.Contains(err.Error(), "Upstream provider overloaded") {
				t.Errorf("error %q lacks the provider's text", err)
			}
		})
	}
}

// reportsCache tells whether the provider's usage block counts cached
// prompt tokens at all (local servers do not).
func reportsCache(p providertest.Profile) bool {
	if p.Render.Usage == nil {
		return true
	}
	b, err := json.Marshal(p.Render.Usage(100, 10, 77))
	return err == nil && strings.Contains(string(b), "77")
}

// TestProviderKimiTemperature: an owner who set a temperature for another
// model, pointed at Kimi K2.5 (which takes only 1), is answered; the
// setting is left out from then on, not refused once a message.
func TestProviderKimiTemperature(t *testing.T) {
	s := providertest.New(t, providertest.Kimi(), providertest.WithAPIKey(apiKey))
	temp := float32(0.2)
	prov := openai.New(openai.Config{BaseURL: s.URL(), APIKey: apiKey, Model: s.Profile().Model, MaxTokens: 4096, Temperature: &temp, Timeout: 10 * time.Second},
		openai.WithBackoff(time.Millisecond, 10*time.Millisecond))
	s.Script(providertest.Reply{Text: "one"}, providertest.Reply{Text: "two"})
	for _, want := range []string{"one", "two"} {
		resp, err := prov.Complete(t.Context(), agent.Request{Messages: []agent.Message{{Role: agent.RoleUser, Content: "hi"}}})
		if err != nil || resp.Message.Content != want {
			t.Fatalf("Complete = %q, %v; want %q", resp.Message.Content, err, want)
		}
	}
	reqs := s.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3: refused once, then without the temperature", len(reqs))
	}
	for i, body := range reqs[1:] {
		if strings.Contains(string(body), `"temperature"`) {
			t.Errorf("request %d still carries a temperature: %s", i+2, body)
		}
	}
}

// TestProviderPlainAfterRefusedFields: a history written by a model that
// thinks (reasoning kept on its tool-call turn), sent after a switch to
// Mistral, whose schema forbids unknown fields: the refusal is retried
// without the added fields, and the next request goes without them at once.
func TestProviderPlainAfterRefusedFields(t *testing.T) {
	s := providertest.New(t, providertest.Mistral(), providertest.WithAPIKey(apiKey))
	prov := provider(s, 0)
	s.Script(providertest.Reply{Text: "one"}, providertest.Reply{Text: "two"})
	msgs := []agent.Message{
		{Role: agent.RoleUser, Content: "list it"},
		{Role: agent.RoleAssistant, Extra: json.RawMessage(`{"reasoning_content":"I should list the directory."}`),
			ToolCalls: []agent.ToolCall{{ID: "call_00_abcdefabcdefabcdefabcdef", Name: "list_dir", Arguments: `{"path":"."}`}}},
		{Role: agent.RoleTool, ToolCallID: "call_00_abcdefabcdefabcdefabcdef", Content: "notes.txt"},
		{Role: agent.RoleAssistant, Content: "notes.txt"},
		{Role: agent.RoleUser, Content: "again"},
	}
	for _, want := range []string{"one", "two"} {
		resp, err := prov.Complete(t.Context(), agent.Request{Messages: msgs, Tools: []agent.ToolSpec{listDir}})
		if err != nil || resp.Message.Content != want {
			t.Fatalf("Complete = %q, %v; want %q", resp.Message.Content, err, want)
		}
	}
	reqs := s.Requests()
	if len(reqs) != 3 || !strings.Contains(string(reqs[0]), "reasoning_content") {
		t.Fatalf("%d requests, want 3: the first with the reasoning (refused), then two without", len(reqs))
	}
	for i, body := range reqs[1:] {
		if strings.Contains(string(body), "reasoning_content") {
			t.Errorf("request %d still carries the reasoning", i+2)
		}
	}
}
