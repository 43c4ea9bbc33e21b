package providertest

import (
	"fmt"
	"net/http"
	"strings"
)

// xaiError is {"code":...,"error":...}, seen in
// https://github.com/BerriAI/litellm/issues/9720
func xaiError(r Refusal) []byte {
	code := "Client specified an invalid argument"
	switch {
	case r.Status == http.StatusUnauthorized:
		code = "The caller does not have permission to execute the specified operation"
	case r.Status == http.StatusTooManyRequests:
		code = "Some resource has been exhausted"
	case r.Status >= 500:
		code = "Internal error"
	}
	return mustJSON(map[string]any{"code": code, "error": r.Message})
}

// xaiReasoning: the reasoning models take no penalties and no stop.
// https://docs.x.ai/docs/guides/reasoning
func xaiReasoning(req *Request) bool {
	return strings.HasPrefix(req.Model, "grok-3-mini") || strings.HasPrefix(req.Model, "grok-4")
}

// XAI is api.x.ai/v1.
func XAI() Profile {
	return Profile{
		Name: "xai", BasePath: "/v1", Model: "grok-3-mini",
		Rules: []Rule{
			// https://github.com/BerriAI/litellm/issues/9720
			messageFieldOnlyOn("https://docs.x.ai/docs/api-reference#chat-completions", "name", []string{"user"}, func(int, string) Refusal {
				return Refusal{Status: http.StatusBadRequest, Message: "Only messages of role 'user' can have a name."}
			}),
			{Name: "no penalties or stop on reasoning models", Source: "https://docs.x.ai/docs/guides/reasoning", Check: func(req *Request, _ *Issued) *Refusal {
				if !xaiReasoning(req) {
					return nil
				}
				// Text from https://github.com/yym68686/uni-api/issues/105
				for field, name := range map[string]string{"presence_penalty": "presencePenalty", "frequency_penalty": "frequencyPenalty", "stop": "stop"} {
					if _, ok := req.Fields[field]; ok {
						return &Refusal{Status: http.StatusBadRequest, Message: "Argument not supported on this model: " + name}
					}
				}
				return nil
			}},
		},
		// grok-3-mini answers reasoning_content (grok-4 keeps it hidden).
		Render: Render{Reasoning: "reasoning_content", ID: func(n, _ int, name string) string {
			return "call_" + digest("xai", fmt.Sprint(n), name)[:8]
		}, Usage: xaiUsage},
		Error: xaiError,
		// https://github.com/cline/cline/issues/3120
		ContextError: func(n, max int) Refusal {
			return Refusal{Status: http.StatusBadRequest, Message: fmt.Sprintf("This model's maximum prompt length is %d but the request contains %d tokens.", max, n)}
		},
	}
}

// xaiUsage: https://docs.x.ai/docs/api-reference#chat-completions
func xaiUsage(prompt, completion, cached int) map[string]any {
	u := openAIUsage(prompt, completion, cached)
	u["prompt_tokens_details"] = map[string]any{"text_tokens": prompt, "audio_tokens": 0, "image_tokens": 0, "cached_tokens": cached}
	u["completion_tokens_details"] = map[string]any{"reasoning_tokens": completion / 2}
	return u
}
