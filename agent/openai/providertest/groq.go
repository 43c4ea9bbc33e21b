package providertest

import (
	"fmt"
	"net/http"
)

// Groq is api.groq.com/openai/v1.
func Groq() Profile {
	const ref = "https://console.groq.com/docs/openai"
	return Profile{
		Name: "groq", BasePath: "/openai/v1", Model: "llama-3.3-70b-versatile",
		Rules: []Rule{
			// "The following fields are currently not supported and will
			// result in a 400 error ... logprobs, logit_bias, top_logprobs,
			// messages[].name". Reasoning fields on messages are refused as
			// well: https://github.com/NousResearch/hermes-agent/issues/11089
			unsupportedFields(ref, []string{"logprobs", "logit_bias", "top_logprobs"}, []string{"name", "reasoning_content", "reasoning"}, func(i int, role, field string) Refusal {
				if i < 0 {
					return Refusal{Status: http.StatusBadRequest, Message: fmt.Sprintf("property '%s' is unsupported", field)}
				}
				return Refusal{Status: http.StatusBadRequest, Message: fmt.Sprintf("'messages.%d' : for 'role:%s' the following must be satisfied[('messages.%d' : property '%s' is unsupported)]", i, role, i, field)}
			}),
			onlyValue(ref, "n", 1, nil, func() Refusal {
				return Refusal{Status: http.StatusBadRequest, Message: "'n' : number must be at most 1"}
			}),
		},
		// gpt-oss models answer a "reasoning" field; Llama none.
		// https://console.groq.com/docs/reasoning
		Render: Render{ID: func(n, _ int, name string) string { return "call_" + digest("groq", fmt.Sprint(n), name)[:4] }, Usage: openAIUsage},
		Error:  messageTypeError,
		ContextError: func(n, max int) Refusal {
			return Refusal{Status: http.StatusBadRequest, Code: "context_length_exceeded", Message: fmt.Sprintf("Please reduce the length of the messages or completion. The model's context window is %d tokens, the request has %d.", max, n)}
		},
	}
}

// GroqToolUseFailed is Groq's intermittent refusal of a generation whose
// tool call it could not parse.
// https://github.com/groq/groq-typescript/issues/28
func GroqToolUseFailed(generation string) Refusal {
	return Refusal{Status: http.StatusBadRequest, Body: mustJSON(map[string]any{"error": map[string]any{
		"message":           "Failed to call a function. Please adjust your prompt. See 'failed_generation' for more details.",
		"type":              "invalid_request_error",
		"code":              "tool_use_failed",
		"failed_generation": generation,
	}}), Message: "Failed to call a function. Please adjust your prompt. See 'failed_generation' for more details."}
}
