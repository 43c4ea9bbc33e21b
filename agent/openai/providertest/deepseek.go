package providertest

import (
	"encoding/json"
	"net/http"
	"strings"
)

const deepseekThinking = "https://api-docs.deepseek.com/guides/thinking_mode"

// deepseekThinkingOn: thinking mode is on by default and off only with
// {"thinking":{"type":"disabled"}} (or deepseek-chat on the V3 names).
func deepseekThinkingOn(req *Request) bool {
	var t struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(req.Fields["thinking"], &t)
	return t.Type != "disabled" && req.Model != "deepseek-chat"
}

// DeepSeek is api.deepseek.com.
func DeepSeek() Profile {
	refuse := func(msg string) Refusal {
		return Refusal{Status: http.StatusBadRequest, Message: msg, Code: "invalid_request_error"}
	}
	return Profile{
		Name: "deepseek", BasePath: "", Model: "deepseek-v4-pro",
		Rules: []Rule{
			// "For turns that do perform tool calls, the reasoning_content
			// must be fully passed back to the API in all subsequent
			// requests ... the API will return a 400 error." Text from
			// https://github.com/anomalyco/opencode/issues/24083
			reasoningBack(deepseekThinking, "reasoning_content", deepseekThinkingOn, func(int) Refusal {
				return refuse("The reasoning_content in the thinking mode must be passed back to the API.")
			}),
			// Texts from https://github.com/FoundationAgents/OpenManus/issues/23
			// and https://github.com/BigPizzaV3/CodexPlusPlus/issues/329
			toolAnswersCall("https://api-docs.deepseek.com/guides/function_calling", func(int) Refusal {
				return refuse("Messages with role 'tool' must be a response to a preceding message with 'tool_calls'")
			}),
			everyCallAnswered("https://api-docs.deepseek.com/guides/function_calling", func(int, []string) Refusal {
				return refuse("An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. (insufficient tool messages following tool_calls message)")
			}),
		},
		Render: Render{Reasoning: "reasoning_content", ID: func(n, i int, name string) string {
			return "call_00_" + digest("ds", name, strings.Repeat("x", n))[:24]
		}, Usage: deepseekUsage},
		Error: openAIError,
		ContextError: func(n, max int) Refusal {
			return Refusal{Status: http.StatusBadRequest, Code: "invalid_request_error",
				Message: "This model's maximum context length is " + itoa(max) + " tokens. However, you requested " + itoa(n) + " tokens. Please reduce the length of the messages or completion."}
		},
	}
}

// deepseekUsage carries the cache figures at the top of usage:
// https://api-docs.deepseek.com/guides/kv_cache
func deepseekUsage(prompt, completion, cached int) map[string]any {
	u := openAIUsage(prompt, completion, cached)
	u["prompt_cache_hit_tokens"] = cached
	u["prompt_cache_miss_tokens"] = prompt - cached
	u["completion_tokens_details"] = map[string]any{"reasoning_tokens": completion / 2}
	return u
}
