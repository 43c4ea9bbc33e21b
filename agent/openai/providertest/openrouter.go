package providertest

import (
	"fmt"
	"net/http"
	"strings"
)

// openRouterError is {"error":{"code":N,"message":...,"metadata":{...}}}:
// https://openrouter.ai/docs/api/reference/errors-and-debugging
func openRouterError(r Refusal) []byte {
	e := map[string]any{"code": r.Status, "message": r.Message}
	if r.Code != "" {
		e["metadata"] = map[string]any{"raw": r.Code, "provider_name": "Google AI Studio"}
	}
	return mustJSON(map[string]any{"error": e})
}

func isGeminiRoute(model string) bool { return strings.HasPrefix(model, "google/gemini") }

// OpenRouter is openrouter.ai/api/v1.
func OpenRouter() Profile {
	const ref = "https://openrouter.ai/docs/guides/best-practices/reasoning-tokens#preserving-reasoning-blocks"
	return Profile{
		Name: "openrouter", BasePath: "/api/v1", Model: "google/gemini-2.5-flash",
		Rules: []Rule{
			// Text from https://github.com/karthink/gptel/issues/1190: the
			// upstream refusal is carried in metadata.raw.
			detailsBack(ref, func(req *Request) bool { return isGeminiRoute(req.Model) }, func(i int, name string) Refusal {
				raw := "Gemini models require OpenRouter reasoning details to be preserved in each request. Please refer to our docs: " + ref + ". Upstream error: " +
					string(geminiError(Refusal{Status: 400, Message: fmt.Sprintf("Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `default_api:%s` , position %d. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.", name, i+1)}))
				return Refusal{Status: http.StatusBadRequest, Message: "Provider returned error", Code: raw}
			}),
		},
		Render: Render{Reasoning: "reasoning", ReasoningDetails: true, ID: func(n, _ int, name string) string {
			return "tool_" + digest("or", fmt.Sprint(n), name)[:20]
		}, Usage: openRouterUsage},
		Error: openRouterError,
		ContextError: func(n, max int) Refusal {
			return Refusal{Status: http.StatusBadRequest, Message: fmt.Sprintf("This endpoint's maximum context length is %d tokens. However, you requested about %d tokens. Please reduce the length of either one.", max, n)}
		},
	}
}

// openRouterUsage: https://openrouter.ai/docs/use-cases/usage-accounting
func openRouterUsage(prompt, completion, cached int) map[string]any {
	u := openAIUsage(prompt, completion, cached)
	u["cost"] = 0.0001
	u["completion_tokens_details"] = map[string]any{"reasoning_tokens": completion / 2}
	return u
}

// OpenRouterChoiceError is a 200 whose only choice ended with
// finish_reason "error" and an error object: an error that happened after
// the model had started. https://openrouter.ai/docs/api/reference/errors-and-debugging
func OpenRouterChoiceError(code int, message string) Reply {
	return Reply{Status: http.StatusOK, Body: string(mustJSON(map[string]any{
		"id": "gen-" + digest("or-err", message), "object": "chat.completion", "model": "google/gemini-2.5-flash", "provider": "Google AI Studio",
		"choices": []map[string]any{{
			"index": 0, "finish_reason": "error", "native_finish_reason": "error",
			"message": map[string]any{"role": "assistant", "content": ""},
			"error":   map[string]any{"code": code, "message": message, "metadata": map[string]any{"provider_name": "Google AI Studio"}},
		}},
		"usage": openRouterUsage(promptTokens, 0, 0),
	}))}
}

// OpenRouterTopLevelError is a 200 that holds only an error object and no
// choices.
func OpenRouterTopLevelError(code int, message string) Reply {
	return Reply{Status: http.StatusOK, Body: string(mustJSON(map[string]any{
		"error": map[string]any{"code": code, "message": message, "metadata": map[string]any{"provider_name": "Google AI Studio"}},
	}))}
}
