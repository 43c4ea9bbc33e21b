package providertest

import (
	"fmt"
	"net/http"
)

// dashscopeError is DashScope's compatible-mode error body, seen in
// https://github.com/agentscope-ai/QwenPaw/issues/6255
func dashscopeError(r Refusal) []byte {
	code := r.Code
	if code == "" {
		code = "invalid_parameter_error"
	}
	id := digest("dashscope", r.Message)
	return mustJSON(map[string]any{
		"error":      map[string]any{"code": code, "param": nil, "message": r.Message, "type": "invalid_request_error"},
		"id":         "chatcmpl-" + id,
		"request_id": id,
	})
}

// Qwen is Alibaba Cloud Model Studio's DashScope compatible mode,
// dashscope-intl.aliyuncs.com/compatible-mode/v1.
func Qwen() Profile {
	const ref = "https://www.alibabacloud.com/help/en/model-studio/qwen-function-calling"
	return Profile{
		Name: "qwen", BasePath: "/compatible-mode/v1", Model: "qwen-plus",
		Rules: []Rule{
			// Text from
			// https://github.com/philschmid/mcp-openai-gemini-llama-example/pull/5
			toolAnswersCall(ref, func(int) Refusal {
				return Refusal{Status: http.StatusBadRequest, Message: `<400> InternalError.Algo.InvalidParameter: messages with role "tool" must be a response to a preceeding message with "tool_calls".`}
			}),
			everyCallAnswered(ref, func(int, []string) Refusal {
				return Refusal{Status: http.StatusBadRequest, Message: `<400> InternalError.Algo.InvalidParameter: An assistant message with "tool_calls" must be followed by tool messages responding to each "tool_call_id".`}
			}),
		},
		// Thinking models (qwen3 with enable_thinking) answer
		// reasoning_content; it need not come back.
		// https://www.alibabacloud.com/help/en/model-studio/deep-thinking
		Render: Render{Reasoning: "reasoning_content", ID: callID, Usage: openAIUsage},
		Error:  dashscopeError,
		// https://github.com/QwenLM/qwen-code/issues/98
		ContextError: func(n, max int) Refusal {
			return Refusal{Status: http.StatusBadRequest, Message: fmt.Sprintf("<400> InternalError.Algo.InvalidParameter: Range of input length should be [1, %d]", max)}
		},
	}
}
