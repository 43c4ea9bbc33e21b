package providertest

import (
	"fmt"
	"net/http"
	"strings"
)

// kimiThinking: K2.5 and later think by default; the -thinking models always.
// https://platform.moonshot.ai/docs/guide/use-kimi-k2-thinking-model
func kimiThinking(req *Request) bool {
	return strings.Contains(req.Model, "thinking") || strings.HasPrefix(req.Model, "kimi-k2.5") || strings.HasPrefix(req.Model, "kimi-k2.6") || strings.HasPrefix(req.Model, "kimi-k3")
}

// Kimi is Moonshot's api.moonshot.ai/v1.
func Kimi() Profile {
	return Profile{
		Name: "kimi", BasePath: "/v1", Model: "kimi-k2.5",
		Rules: []Rule{
			// Thinking models fix temperature at 1.0; other values are
			// refused. https://platform.kimi.ai/docs/guide/kimi-k2-5-quickstart,
			// text from https://github.com/NoFxAiOS/nofx/pull/1415
			onlyValue("https://platform.kimi.ai/docs/guide/kimi-k2-5-quickstart", "temperature", 1, kimiThinking, func() Refusal {
				return Refusal{Status: http.StatusBadRequest, Message: "invalid temperature: only 1 is allowed for this model"}
			}),
			// Multi-step tool calls keep reasoning_content in the context:
			// https://platform.moonshot.ai/docs/guide/use-kimi-k2-thinking-model#multi-step-tool-call,
			// text from https://github.com/continuedev/continue/issues/11711
			reasoningBack("https://platform.moonshot.ai/docs/guide/use-kimi-k2-thinking-model", "reasoning_content", kimiThinking, func(i int) Refusal {
				return Refusal{Status: http.StatusBadRequest, Message: fmt.Sprintf("thinking is enabled but reasoning_content is missing in assistant tool call message at index %d", i)}
			}),
		},
		Render: Render{Reasoning: "reasoning_content", ID: func(n, i int, name string) string {
			return fmt.Sprintf("functions.%s:%d", name, n) // Kimi's id format
		}, Usage: kimiUsage},
		Error: messageTypeError,
		ContextError: func(n, max int) Refusal {
			return Refusal{Status: http.StatusBadRequest, Message: fmt.Sprintf("Invalid request: Your request exceeded model token limit: %d (requested: %d)", max, n)}
		},
	}
}

// kimiUsage reports cached tokens at the top of usage and in the OpenAI
// place. https://platform.moonshot.ai/docs/api/chat
func kimiUsage(prompt, completion, cached int) map[string]any {
	u := openAIUsage(prompt, completion, cached)
	u["cached_tokens"] = cached
	return u
}
