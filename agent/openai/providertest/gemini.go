package providertest

import (
	"fmt"
	"net/http"
	"strings"
)

// geminiError is Google's error body as the OpenAI compatibility endpoint
// sends it: a JSON array holding one {"error":{code,message,status}}, with
// a RetryInfo detail on 429s. Seen in
// https://github.com/google-gemini/gemini-cli/issues/6678 and
// https://github.com/google-gemini/gemini-cli/issues/6454
func geminiError(r Refusal) []byte {
	status := map[int]string{400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}[r.Status]
	e := map[string]any{"code": r.Status, "message": r.Message, "status": status}
	if r.RetryDelay != "" {
		e["details"] = []map[string]any{
			{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []map[string]any{{"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests", "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}}},
			{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": r.RetryDelay},
		}
	}
	return mustJSON([]map[string]any{{"error": e}})
}

// GeminiRateLimited is Gemini's 429 telling the client to wait delay
// ("7s") in the body rather than in a Retry-After header.
// https://ai.google.dev/gemini-api/docs/rate-limits
func GeminiRateLimited(delay string) Refusal {
	return Refusal{Status: http.StatusTooManyRequests, RetryDelay: delay,
		Message: "You exceeded your current quota, please check your plan and billing details. Please retry in " + strings.TrimSuffix(delay, "s") + "s."}
}

// Gemini is the OpenAI compatibility endpoint,
// generativelanguage.googleapis.com/v1beta/openai/.
// https://ai.google.dev/gemini-api/docs/openai
func Gemini() Profile {
	const ref = "https://ai.google.dev/gemini-api/docs/thought-signatures"
	return Profile{
		Name: "gemini", BasePath: "/v1beta/openai", Model: "gemini-2.5-flash",
		Rules: []Rule{
			// "you must pass back thought signatures during function
			// calling, otherwise you will get a validation error (4xx)";
			// text from https://github.com/massgen/MassGen/issues/624
			signatureBack(ref, func(_ int, name string, pos int) Refusal {
				return Refusal{Status: http.StatusBadRequest, Message: fmt.Sprintf("Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `default_api:%s` , position %d. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.", name, pos)}
			}),
		},
		Render: Render{ThoughtSignature: true, ID: func(n, _ int, name string) string {
			return "function-call-" + digest("gemini", fmt.Sprint(n), name)[:16]
		}, Usage: openAIUsage},
		Error: geminiError,
		// https://github.com/google-gemini/gemini-cli/issues/12098
		ContextError: func(n, max int) Refusal {
			return Refusal{Status: http.StatusBadRequest, Message: fmt.Sprintf("The input token count (%d) exceeds the maximum number of tokens allowed (%d).", n, max)}
		},
	}
}
