package providertest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"
)

// Token counts the fake reports: every request after the first is served
// partly from the prompt cache, as a provider's is when the prompt's
// beginning repeats.
const (
	promptTokens     = 120
	completionTokens = 12
	cachedTokens     = 64
)

// render builds the 200 reply to req in the profile's shapes and records
// what it hands out.
func (s *Server) render(req *Request, r Reply, n int) map[string]any {
	ro := s.p.Render
	msg := map[string]any{"role": "assistant"}
	reasoning := r.Reasoning
	if reasoning == "" {
		reasoning = "Thinking about request " + fmt.Sprint(n) + " (" + digest(s.p.Name, fmt.Sprint(n)) + ")."
	}
	if ro.Reasoning != "" {
		msg[ro.Reasoning] = reasoning
	}
	var details []map[string]any
	if ro.ReasoningDetails {
		// https://openrouter.ai/docs/guides/best-practices/reasoning-tokens#preserving-reasoning-blocks
		details = append(details, map[string]any{"type": "reasoning.text", "text": reasoning, "format": "unknown", "index": 0})
	}
	finish := "stop"
	if len(r.ToolCalls) == 0 {
		msg["content"] = r.Text
	} else {
		finish = "tool_calls"
		if r.Text != "" {
			msg["content"] = r.Text
		} else {
			msg["content"] = nil
		}
		first := s.nextCallNumber(len(r.ToolCalls))
		var calls []map[string]any
		for i, c := range r.ToolCalls {
			id := ro.ID(first+i, i, c.Name)
			fn := map[string]any{"name": c.Name, "arguments": c.Arguments}
			if ro.ArgumentsObject {
				fn["arguments"] = json.RawMessage(c.Arguments)
			}
			call := map[string]any{"id": id, "type": "function", "function": fn}
			ic := IssuedCall{Name: c.Name, Arguments: c.Arguments, Reasoning: reasoning}
			if ro.ThoughtSignature && i == 0 {
				// Only the first call of parallel calls carries one:
				// https://ai.google.dev/gemini-api/docs/thought-signatures
				ic.Signature = base64.StdEncoding.EncodeToString([]byte("sig:" + digest(id, c.Name, c.Arguments)))
				call["extra_content"] = map[string]any{"google": map[string]any{"thought_signature": ic.Signature}}
			}
			if ro.ReasoningDetails && i == 0 && isGeminiRoute(req.Model) {
				details = append(details, map[string]any{
					"type": "reasoning.encrypted", "data": base64.StdEncoding.EncodeToString([]byte("enc:" + digest(id))),
					"id": id, "format": "google-gemini-v1", "index": 1,
				})
			}
			calls = append(calls, call)
			defer func(id string, ic IssuedCall) { // details are complete once every call is rendered
				if ro.ReasoningDetails {
					ic.Details, _ = json.Marshal(details)
				}
				s.issued.add(id, ic)
			}(id, ic)
		}
		msg["tool_calls"] = calls
	}
	if ro.ReasoningDetails {
		msg["reasoning_details"] = details
	}
	cached := 0
	if n > 1 {
		cached = cachedTokens
	}
	usage := ro.Usage
	if usage == nil {
		usage = openAIUsage
	}
	return map[string]any{
		"id":      "chatcmpl-" + digest(s.p.Name, "id", fmt.Sprint(n)),
		"object":  "chat.completion",
		"created": time.Now().Unix(),
		"model":   req.Model,
		"choices": []map[string]any{{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   usage(promptTokens, completionTokens, cached),
	}
}

// openAIUsage is OpenAI's usage object, which many providers copy:
// https://platform.openai.com/docs/api-reference/chat/object
func openAIUsage(prompt, completion, cached int) map[string]any {
	return map[string]any{
		"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
		"prompt_tokens_details": map[string]any{"cached_tokens": cached},
	}
}

// plainUsage has no cache figures (local servers).
func plainUsage(prompt, completion, _ int) map[string]any {
	return map[string]any{"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
}

// callID is OpenAI's id style, "call_" and 24 characters.
func callID(n, _ int, name string) string { return "call_" + digest("call", fmt.Sprint(n), name)[:24] }
