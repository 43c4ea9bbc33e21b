package providertest

import (
	"fmt"
	"net/http"
	"strings"
)

// OpenAI's request schema is closed: unknown fields are refused.
// https://platform.openai.com/docs/api-reference/chat/create
var (
	openAITopFields = []string{
		"messages", "model", "audio", "frequency_penalty", "function_call", "functions", "logit_bias", "logprobs",
		"max_completion_tokens", "max_tokens", "metadata", "modalities", "n", "parallel_tool_calls", "prediction",
		"presence_penalty", "prompt_cache_key", "prompt_cache_retention", "reasoning_effort", "response_format",
		"safety_identifier", "seed", "service_tier", "stop", "store", "stream", "stream_options", "temperature",
		"tool_choice", "tools", "top_logprobs", "top_p", "user", "verbosity", "web_search_options",
	}
	openAIMessageFields = map[string][]string{
		"system":    {"role", "content", "name"},
		"developer": {"role", "content", "name"},
		"user":      {"role", "content", "name"},
		"assistant": {"role", "content", "name", "tool_calls", "refusal", "audio", "function_call"},
		// The schema has no name on tool messages, but the API has long
		// accepted the one older clients send; only what it refuses is
		// enforced here.
		"tool": {"role", "content", "tool_call_id", "name"},
	}
	openAICallFields = []string{"id", "type", "function"}
)

// openAIRules are the rules OpenAI documents and enforces; Azure OpenAI's
// v1 API applies the same.
func openAIRules() []Rule {
	const ref = "https://platform.openai.com/docs/api-reference/chat/create"
	return []Rule{
		knownFields(ref, openAITopFields, openAIMessageFields, openAICallFields, func(i int, role, field string) Refusal {
			if i < 0 {
				return Refusal{Status: http.StatusBadRequest, Message: "Unrecognized request argument supplied: " + field}
			}
			return Refusal{Status: http.StatusBadRequest, Message: fmt.Sprintf("Additional properties are not allowed ('%s' was unexpected) - 'messages.%d'", strings.TrimPrefix(field, "tool_calls."), i)}
		}),
		argumentsString(ref, func(i, j int) Refusal {
			return Refusal{Status: http.StatusBadRequest, Message: fmt.Sprintf("Invalid type for 'messages[%d].tool_calls[%d].function.arguments': expected a string, but got an object instead.", i, j), Param: fmt.Sprintf("messages[%d].tool_calls[%d].function.arguments", i, j), Code: "invalid_type"}
		}),
		// https://platform.openai.com/docs/guides/function-calling (a tool
		// result answers a call), text observed in
		// https://github.com/openai/openai-go/issues/43
		toolAnswersCall("https://platform.openai.com/docs/guides/function-calling", func(i int) Refusal {
			return Refusal{Status: http.StatusBadRequest, Message: "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.", Param: fmt.Sprintf("messages.[%d].role", i)}
		}),
		everyCallAnswered("https://platform.openai.com/docs/guides/function-calling", func(i int, missing []string) Refusal {
			return Refusal{Status: http.StatusBadRequest, Message: "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: " + strings.Join(missing, ", "), Param: fmt.Sprintf("messages.[%d].role", i)}
		}),
	}
}

// openAIContextError is OpenAI's refusal of an over-long prompt.
func openAIContextError(n, max int) Refusal {
	return Refusal{Status: http.StatusBadRequest, Code: "context_length_exceeded", Param: "messages",
		Message: fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.", max, n)}
}

// OpenAI is api.openai.com/v1.
func OpenAI() Profile {
	return Profile{
		Name: "openai", BasePath: "/v1", Model: "gpt-4.1-mini",
		Rules:        openAIRules(),
		Render:       Render{ID: callID, Usage: openAIUsage},
		Error:        openAIError,
		ContextError: openAIContextError,
	}
}

// AzureOpenAI is the Azure OpenAI v1 API at
// https://RESOURCE.openai.azure.com/openai/v1/, the deployment name as the
// model; it takes the key as a Bearer token or in api-key.
// https://learn.microsoft.com/azure/ai-foundry/openai/api-version-lifecycle
func AzureOpenAI() Profile {
	p := OpenAI()
	p.Name, p.BasePath, p.Model, p.APIKeyHeader = "azure", "/openai/v1", "my-gpt-4-1-mini", "api-key"
	return p
}
