package providertest

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
)

// mistralError is Mistral's error body for 4xx other than schema errors:
// {"object":"error","message":...,"type":...,"param":null,"code":...}.
// Seen in https://github.com/zed-industries/zed/issues/37021
func mistralError(r Refusal) []byte {
	typ := r.Code
	if typ == "" {
		typ = "invalid_request_error"
	}
	return mustJSON(map[string]any{"object": "error", "message": r.Message, "type": typ, "param": nil, "code": nil})
}

// mistralExtraForbidden is the 422 of Mistral's schema validation, seen in
// https://github.com/Gage-Technologies/mistral-go/issues/3
func mistralExtraForbidden(i int, role, field string) Refusal {
	loc := []any{"body", field}
	if i >= 0 {
		loc = []any{"body", "messages", i, role}
		for _, part := range strings.Split(field, ".") {
			loc = append(loc, part)
		}
	}
	body := mustJSON(map[string]any{
		"object":  "error",
		"message": map[string]any{"detail": []map[string]any{{"type": "extra_forbidden", "loc": loc, "msg": "Extra inputs are not permitted", "input": nil}}},
		"type":    "invalid_request_error", "param": nil, "code": nil,
	})
	return Refusal{Status: http.StatusUnprocessableEntity, Message: fmt.Sprintf("%v: Extra inputs are not permitted", loc), Body: body}
}

var mistralID = regexp.MustCompile(`^[a-zA-Z0-9]{9}$`)

// mistralRules hold for Mistral's models wherever they are served.
func mistralRules(ref string, fail func(Refusal) Refusal) []Rule {
	return []Rule{
		// Texts from https://github.com/jackmpcollins/magentic/issues/276
		// and https://github.com/datapizza-labs/datapizza-ai/issues/98
		toolCallIDs(ref, mistralID, func(id string) Refusal {
			return fail(Refusal{Status: http.StatusBadRequest, Code: "invalid_function_call", Message: fmt.Sprintf("Tool call id was %s but must be a-z, A-Z, 0-9, with a length of 9.", id)})
		}),
		noUserAfterTool(ref, func(int) Refusal {
			return fail(Refusal{Status: http.StatusBadRequest, Code: "invalid_request_message_order", Message: "Unexpected role 'user' after role 'tool'"})
		}),
	}
}

// mistralIDs are 9 alphanumerics, as Mistral hands them out.
func mistralIDs(n, _ int, name string) string { return digest("mistral", fmt.Sprint(n), name)[:9] }

// Mistral is api.mistral.ai/v1.
func Mistral() Profile {
	const ref = "https://docs.mistral.ai/api/#tag/chat/operation/chat_completion_v1_chat_completions_post"
	rules := []Rule{knownFields(ref,
		[]string{"model", "messages", "temperature", "top_p", "max_tokens", "stream", "stop", "random_seed", "response_format", "tools", "tool_choice", "presence_penalty", "frequency_penalty", "n", "prediction", "parallel_tool_calls", "prompt_mode", "safe_prompt", "metadata"},
		map[string][]string{
			"system":    {"role", "content"},
			"user":      {"role", "content"},
			"assistant": {"role", "content", "tool_calls", "prefix"},
			"tool":      {"role", "content", "tool_call_id", "name"},
		},
		[]string{"id", "type", "function", "index"},
		mistralExtraForbidden)}
	rules = append(rules, mistralRules(ref, func(r Refusal) Refusal { return r })...)
	return Profile{
		Name: "mistral", BasePath: "/v1", Model: "mistral-large-latest",
		Rules:  rules,
		Render: Render{ID: mistralIDs, Usage: plainUsage},
		Error:  mistralError,
		ContextError: func(n, max int) Refusal {
			return Refusal{Status: http.StatusBadRequest, Code: "invalid_request_error", Message: fmt.Sprintf("Prompt contains %d tokens and %d draft tokens, too large for model with %d maximum context length", n, 0, max)}
		},
	}
}
