package providertest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

const key = "sk-fake-key"

func post(t *testing.T, s *Server, body any, header map[string]string) (int, []byte) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.URL()+"/chat/completions", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	if _, set := header["Authorization"]; !set {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

type object = map[string]any

var tools = []any{object{"type": "function", "function": object{"name": "list_dir", "description": "List a directory.",
	"parameters": object{"type": "object", "properties": object{"path": object{"type": "string"}}}}}}

// toolRound has the fake answer a tool call and returns the request that
// follows it correctly: the history with the assistant message exactly as
// the fake rendered it and the tool result.
func toolRound(t *testing.T, s *Server, calls ...ScriptedCall) object {
	t.Helper()
	if len(calls) == 0 {
		calls = []ScriptedCall{{Name: "list_dir", Arguments: `{"path":"."}`}}
	}
	s.Script(Reply{ToolCalls: calls})
	first := object{"model": s.Profile().Model, "tools": tools, "messages": []any{
		object{"role": "system", "content": "You are helpful."},
		object{"role": "user", "content": "What is in the workspace?"},
	}}
	status, body := post(t, s, first, nil)
	if status != http.StatusOK {
		t.Fatalf("first request: %d %s", status, body)
	}
	var resp struct {
		Choices []struct {
			Message object `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(body, &resp); err != nil || len(resp.Choices) != 1 {
		t.Fatalf("reply %s: %v", body, err)
	}
	asst := resp.Choices[0].Message
	msgs := append(first["messages"].([]any), asst)
	for _, c := range asst["tool_calls"].([]any) {
		msgs = append(msgs, object{"role": "tool", "tool_call_id": c.(object)["id"], "content": "notes.txt"})
	}
	return object{"model": s.Profile().Model, "tools": tools, "messages": msgs}
}

// msg is the i-th message of req.
func msg(req object, i int) object { return req["messages"].([]any)[i].(object) }

// call is the j-th tool call of the assistant message at index 2.
func call(req object, j int) object { return msg(req, 2)["tool_calls"].([]any)[j].(object) }

func withMessages(req object, extra ...any) object {
	req["messages"] = append(req["messages"].([]any), extra...)
	return req
}

func TestProviderRules(t *testing.T) {
	tests := []struct {
		profile Profile
		name    string
		break_  func(req object) // nil: the correct follow-up must pass
		status  int
		want    string // in the refusal body
	}{
		{OpenAI(), "correct follow-up", nil, 200, ""},
		{OpenAI(), "history with answer and next question", func(req object) {
			withMessages(req, object{"role": "assistant", "content": "One file."}, object{"role": "user", "content": "thanks"})
		}, 200, ""},
		{OpenAI(), "prompt_cache_key is documented", func(req object) { req["prompt_cache_key"] = "chat-1" }, 200, ""},
		{OpenAI(), "unknown request field", func(req object) { req["thinking"] = object{"type": "enabled"} }, 400, "Unrecognized request argument supplied: thinking"},
		{OpenAI(), "unknown message field", func(req object) { msg(req, 2)["reasoning_content"] = "x" }, 400, "Additional properties are not allowed ('reasoning_content' was unexpected) - 'messages.2'"},
		{OpenAI(), "unknown tool call field", func(req object) { call(req, 0)["extra_content"] = object{} }, 400, "('extra_content' was unexpected)"},
		{OpenAI(), "arguments as an object", func(req object) {
			call(req, 0)["function"].(object)["arguments"] = object{"path": "."}
		}, 400, "expected a string, but got an object"},
		{OpenAI(), "tool message answers no call", func(req object) { msg(req, 3)["tool_call_id"] = "call_other" }, 400, "must be a response to a preceeding message with 'tool_calls'"},
		{OpenAI(), "tool call without its answer", func(req object) {
			req["messages"] = req["messages"].([]any)[:3]
			withMessages(req, object{"role": "user", "content": "and?"})
		}, 400, "did not have response messages"},
		{AzureOpenAI(), "correct follow-up", nil, 200, ""},
		{AzureOpenAI(), "unknown message field", func(req object) { msg(req, 2)["reasoning"] = "x" }, 400, "Additional properties are not allowed"},

		{DeepSeek(), "correct follow-up", nil, 200, ""},
		{DeepSeek(), "reasoning_content dropped", func(req object) { delete(msg(req, 2), "reasoning_content") }, 400, "The reasoning_content in the thinking mode must be passed back to the API."},
		{DeepSeek(), "reasoning_content changed", func(req object) { msg(req, 2)["reasoning_content"] = "something else" }, 400, "must be passed back"},
		{DeepSeek(), "reasoning_content dropped with thinking disabled", func(req object) {
			delete(msg(req, 2), "reasoning_content")
			req["thinking"] = object{"type": "disabled"}
		}, 200, ""},
		{DeepSeek(), "tool message answers no call", func(req object) { msg(req, 3)["tool_call_id"] = "x" }, 400, "Messages with role 'tool' must be a response"},

		{Kimi(), "correct follow-up", nil, 200, ""},
		{Kimi(), "temperature 1", func(req object) { req["temperature"] = 1 }, 200, ""},
		{Kimi(), "temperature 0.2", func(req object) { req["temperature"] = 0.2 }, 400, "invalid temperature: only 1 is allowed for this model"},
		{Kimi(), "reasoning_content dropped", func(req object) { delete(msg(req, 2), "reasoning_content") }, 400, "thinking is enabled but reasoning_content is missing in assistant tool call message at index 2"},

		{Qwen(), "correct follow-up", nil, 200, ""},
		{Qwen(), "tool message answers no call", func(req object) { msg(req, 3)["tool_call_id"] = "x" }, 400, `InternalError.Algo.InvalidParameter: messages with role \"tool\" must be a response`},
		{Qwen(), "tool call without its answer", func(req object) { req["messages"] = req["messages"].([]any)[:3] }, 400, "must be followed by tool messages"},

		{Zhipu(), "correct follow-up", nil, 200, ""},
		{Zhipu(), "tool message answers no call", func(req object) { msg(req, 3)["tool_call_id"] = "x" }, 400, `"code":"1214"`},
		{Zhipu(), "empty text part", func(req object) {
			msg(req, 1)["content"] = []any{object{"type": "text", "text": ""}}
		}, 400, "messages[1].content[0].text:text cannot be empty."},

		{Gemini(), "correct follow-up", nil, 200, ""},
		{Gemini(), "thought signature dropped", func(req object) { delete(call(req, 0), "extra_content") }, 400, "Function call is missing a thought_signature in functionCall parts."},
		{Gemini(), "thought signature changed", func(req object) {
			call(req, 0)["extra_content"] = object{"google": object{"thought_signature": "c2lnOm90aGVy"}}
		}, 400, `"status":"INVALID_ARGUMENT"`},

		{Mistral(), "correct follow-up", nil, 200, ""},
		{Mistral(), "history with answer and next question", func(req object) {
			withMessages(req, object{"role": "assistant", "content": "One file."}, object{"role": "user", "content": "thanks"})
		}, 200, ""},
		{Mistral(), "user right after tool", func(req object) { withMessages(req, object{"role": "user", "content": "and?"}) }, 400, "Unexpected role 'user' after role 'tool'"},
		{Mistral(), "id not 9 alphanumerics", func(req object) {
			call(req, 0)["id"] = "call_abc123"
			msg(req, 3)["tool_call_id"] = "call_abc123"
		}, 400, "Tool call id was call_abc123 but must be a-z, A-Z, 0-9, with a length of 9."},
		{Mistral(), "extra message field", func(req object) { msg(req, 2)["reasoning_content"] = "x" }, 422, `"msg":"Extra inputs are not permitted"`},
		{Mistral(), "extra request field", func(req object) { req["user"] = "ada" }, 422, `"loc":["body","user"]`},

		{Groq(), "correct follow-up", nil, 200, ""},
		{Groq(), "name on a tool message", func(req object) { msg(req, 3)["name"] = "list_dir" }, 400, "'messages.3' : for 'role:tool' the following must be satisfied[('messages.3' : property 'name' is unsupported)]"},
		{Groq(), "reasoning_content on an assistant message", func(req object) { msg(req, 2)["reasoning_content"] = "x" }, 400, "property 'reasoning_content' is unsupported"},
		{Groq(), "logprobs", func(req object) { req["logprobs"] = true }, 400, "property 'logprobs' is unsupported"},
		{Groq(), "n of 2", func(req object) { req["n"] = 2 }, 400, "'n'"},

		{XAI(), "correct follow-up", nil, 200, ""},
		{XAI(), "name on a user message", func(req object) { msg(req, 1)["name"] = "ada" }, 200, ""},
		{XAI(), "name on a tool message", func(req object) { msg(req, 3)["name"] = "list_dir" }, 400, `"error":"Only messages of role 'user' can have a name."`},
		{XAI(), "presence_penalty on a reasoning model", func(req object) { req["presence_penalty"] = 0.5 }, 400, "Argument not supported on this model: presencePenalty"},

		{OpenRouter(), "correct follow-up", nil, 200, ""},
		{OpenRouter(), "reasoning_details dropped", func(req object) { delete(msg(req, 2), "reasoning_details") }, 400, "Gemini models require OpenRouter reasoning details to be preserved in each request."},
		{OpenRouter(), "reasoning_details dropped for a Claude route", func(req object) {
			delete(msg(req, 2), "reasoning_details")
			req["model"] = "anthropic/claude-sonnet-4.5"
		}, 200, ""},

		{Ollama(), "correct follow-up", nil, 200, ""},
		{Ollama(), "arguments not JSON", func(req object) { call(req, 0)["function"].(object)["arguments"] = `{"path":` }, 400, "invalid tool call arguments"},
		{VLLM(), "correct follow-up", nil, 200, ""},
		{VLLM(), "arguments not JSON", func(req object) { call(req, 0)["function"].(object)["arguments"] = "" }, 400, `"type":"BadRequestError"`},
		{VLLMMistral(), "correct follow-up", nil, 200, ""},
		{VLLMMistral(), "user right after tool", func(req object) { withMessages(req, object{"role": "user", "content": "and?"}) }, 400, "Unexpected role 'user' after role 'tool'"},
		{VLLMMistral(), "id not 9 alphanumerics", func(req object) {
			call(req, 0)["id"] = "chatcmpl-tool-1"
			msg(req, 3)["tool_call_id"] = "chatcmpl-tool-1"
		}, 400, "must be a-z, A-Z, 0-9, with a length of 9"},
		{LlamaCpp(), "correct follow-up", nil, 200, ""},
		{LlamaCpp(), "arguments not JSON", func(req object) { call(req, 0)["function"].(object)["arguments"] = "not json" }, 500, "parse error"},
		{LlamaCppArgumentsObject(), "correct follow-up (object sent back)", nil, 200, ""},
		{LMStudio(), "correct follow-up", nil, 200, ""},
		{LMStudio(), "arguments not JSON", func(req object) { call(req, 0)["function"].(object)["arguments"] = "{" }, 400, `{"error":"Error rendering prompt`},
	}
	for _, tt := range tests {
		t.Run(tt.profile.Name+"/"+tt.name, func(t *testing.T) {
			s := New(t, tt.profile, WithAPIKey(key))
			req := toolRound(t, s)
			if tt.break_ != nil {
				tt.break_(req)
			}
			s.Script(Reply{Text: "done"})
			status, body := post(t, s, req, nil)
			if status != tt.status || !strings.Contains(string(body), tt.want) {
				t.Fatalf("got %d %s\nwant %d containing %q", status, body, tt.status, tt.want)
			}
			if v := s.Violations(); (status != 200) != (len(v) == 1) {
				t.Errorf("violations recorded = %v for status %d", v, status)
			}
			if n := len(s.Requests()); n != 2 {
				t.Errorf("%d requests recorded, want 2", n)
			}
		})
	}
}

func TestProviderRendering(t *testing.T) {
	get := func(t *testing.T, p Profile, calls ...ScriptedCall) object {
		s := New(t, p, WithAPIKey(key))
		return msg(toolRound(t, s, calls...), 2)
	}
	fn := func(m object, j int) object { return m["tool_calls"].([]any)[j].(object)["function"].(object) }
	id := func(m object, j int) string { return m["tool_calls"].([]any)[j].(object)["id"].(string) }

	t.Run("kimi ids", func(t *testing.T) {
		if got := id(get(t, Kimi()), 0); got != "functions.list_dir:0" {
			t.Errorf("id = %q", got)
		}
	})
	t.Run("mistral ids", func(t *testing.T) {
		if got := id(get(t, Mistral()), 0); !mistralID.MatchString(got) {
			t.Errorf("id = %q", got)
		}
	})
	t.Run("llama.cpp arguments object", func(t *testing.T) {
		if _, isObject := fn(get(t, LlamaCppArgumentsObject()), 0)["arguments"].(object); !isObject {
			t.Errorf("arguments = %#v, want an object", fn(get(t, LlamaCppArgumentsObject()), 0)["arguments"])
		}
		if _, isString := fn(get(t, LlamaCpp()), 0)["arguments"].(string); !isString {
			t.Error("llama.cpp as released sends a string")
		}
	})
	t.Run("gemini signs the first of parallel calls", func(t *testing.T) {
		m := get(t, Gemini(), ScriptedCall{"list_dir", `{"path":"."}`}, ScriptedCall{"read_file", `{"path":"a"}`})
		calls := m["tool_calls"].([]any)
		if _, ok := calls[0].(object)["extra_content"]; !ok {
			t.Error("the first call has no thought signature")
		}
		if _, ok := calls[1].(object)["extra_content"]; ok {
			t.Error("the second call has a thought signature")
		}
	})
	t.Run("reasoning fields", func(t *testing.T) {
		for _, tt := range []struct {
			p     Profile
			field string
		}{{DeepSeek(), "reasoning_content"}, {Kimi(), "reasoning_content"}, {XAI(), "reasoning_content"}, {OpenRouter(), "reasoning"}, {OpenRouter(), "reasoning_details"}, {VLLM(), "reasoning"}} {
			if m := get(t, tt.p); m[tt.field] == nil {
				t.Errorf("%s: no %s in %v", tt.p.Name, tt.field, m)
			}
		}
	})
}

func TestProviderUsageFields(t *testing.T) {
	for _, tt := range []struct {
		p    Profile
		want string
	}{
		{OpenAI(), `"prompt_tokens_details":{"cached_tokens":64}`},
		{DeepSeek(), `"prompt_cache_hit_tokens":64`},
		{DeepSeek(), `"prompt_cache_miss_tokens":56`},
		{Kimi(), `"cached_tokens":64`},
		{Qwen(), `"cached_tokens":64`},
		{OpenRouter(), `"cached_tokens":64`},
		{XAI(), `"cached_tokens":64`},
	} {
		t.Run(tt.p.Name, func(t *testing.T) {
			s := New(t, tt.p)
			req := toolRound(t, s)
			s.Script(Reply{Text: "done"})
			_, body := post(t, s, req, nil)
			if !strings.Contains(string(body), tt.want) {
				t.Errorf("second reply %s lacks %s", body, tt.want)
			}
		})
	}
}

func TestProviderAuth(t *testing.T) {
	for _, p := range All() {
		t.Run(p.Name, func(t *testing.T) {
			s := New(t, p, WithAPIKey(key))
			body := object{"model": p.Model, "messages": []any{object{"role": "user", "content": "hi"}}}
			status, _ := post(t, s, body, map[string]string{"Authorization": ""})
			if want := map[bool]int{true: 200, false: 401}[p.NoAuth]; status != want {
				t.Errorf("without a key: %d, want %d", status, want)
			}
			if status, _ := post(t, s, body, map[string]string{"Authorization": "Bearer wrong"}); !p.NoAuth && status != 401 {
				t.Errorf("with a wrong key: %d, want 401", status)
			}
			if status, _ := post(t, s, body, nil); status != 200 {
				t.Errorf("with the key: %d", status)
			}
		})
	}
	t.Run("azure api-key header", func(t *testing.T) {
		s := New(t, AzureOpenAI(), WithAPIKey(key))
		body := object{"model": "d", "messages": []any{object{"role": "user", "content": "hi"}}}
		if status, b := post(t, s, body, map[string]string{"Authorization": "", "api-key": key}); status != 200 {
			t.Errorf("api-key: %d %s", status, b)
		}
	})
}

func TestProviderErrorShapes(t *testing.T) {
	t.Run("gemini array with RetryInfo", func(t *testing.T) {
		s := New(t, Gemini())
		s.Script(Reply{Refuse: ptr(GeminiRateLimited("7s"))})
		status, body := post(t, s, object{"model": "m", "messages": []any{object{"role": "user", "content": "hi"}}}, nil)
		var arr []struct {
			Error struct {
				Code    int              `json:"code"`
				Status  string           `json:"status"`
				Details []map[string]any `json:"details"`
			} `json:"error"`
		}
		if err := json.Unmarshal(body, &arr); err != nil || status != 429 || len(arr) != 1 || arr[0].Error.Status != "RESOURCE_EXHAUSTED" {
			t.Fatalf("%d %s: %v", status, body, err)
		}
		found := false
		for _, d := range arr[0].Error.Details {
			found = found || (d["@type"] == "type.googleapis.com/google.rpc.RetryInfo" && d["retryDelay"] == "7s")
		}
		if !found {
			t.Errorf("no RetryInfo in %s", body)
		}
	})
	t.Run("openrouter errors in a 200", func(t *testing.T) {
		s := New(t, OpenRouter())
		s.Script(OpenRouterChoiceError(502, "Upstream overloaded"), OpenRouterTopLevelError(500, "Internal Server Error"))
		req := object{"model": "m", "messages": []any{object{"role": "user", "content": "hi"}}}
		status, body := post(t, s, req, nil)
		if status != 200 || !strings.Contains(string(body), `"finish_reason":"error"`) || !strings.Contains(string(body), "Upstream overloaded") {
			t.Errorf("choice error: %d %s", status, body)
		}
		status, body = post(t, s, req, nil)
		if status != 200 || strings.Contains(string(body), "choices") || !strings.Contains(string(body), `"error":{`) {
			t.Errorf("top-level error: %d %s", status, body)
		}
	})
	t.Run("groq tool_use_failed", func(t *testing.T) {
		s := New(t, Groq())
		s.Script(Reply{Refuse: ptr(GroqToolUseFailed("<function=list_dir>{}"))})
		status, body := post(t, s, object{"model": "m", "messages": []any{object{"role": "user", "content": "hi"}}}, nil)
		if status != 400 || !strings.Contains(string(body), `"code":"tool_use_failed"`) || !strings.Contains(string(body), `"failed_generation"`) {
			t.Errorf("%d %s", status, body)
		}
	})
	t.Run("context errors", func(t *testing.T) {
		for _, p := range All() {
			if p.ContextError == nil {
				continue
			}
			s := New(t, p)
			s.Script(Reply{Refuse: ptr(p.ContextError(140000, 131072))})
			status, body := post(t, s, object{"model": "m", "messages": []any{object{"role": "user", "content": "hi"}}}, nil)
			if status != 400 || !strings.Contains(string(body), "131072") {
				t.Errorf("%s: %d %s", p.Name, status, body)
			}
		}
	})
	t.Run("history refused however often sent", func(t *testing.T) {
		s := New(t, OpenAI())
		s.RefuseContaining("poison", Refusal{Status: 400, Message: "Invalid 'messages[1].content': bad."})
		req := object{"model": "m", "messages": []any{object{"role": "user", "content": "poison"}}}
		for range 2 {
			if status, _ := post(t, s, req, nil); status != 400 {
				t.Errorf("status %d, want 400", status)
			}
		}
		if status, _ := post(t, s, object{"model": "m", "messages": []any{object{"role": "user", "content": "fine"}}}, nil); status != 200 {
			t.Errorf("a clean history got %d", status)
		}
	})
	t.Run("unknown path", func(t *testing.T) {
		s := New(t, Mistral())
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, s.URL()+"/completions", strings.NewReader("{}"))
		req.Header.Set("Authorization", "Bearer k")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 404 {
			t.Errorf("status %d", resp.StatusCode)
		}
	})
}

func ptr[T any](v T) *T { return &v }
