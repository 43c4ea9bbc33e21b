package providertest

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// zhipuError is {"error":{"code":"1214","message":...}}:
// https://docs.z.ai/api-reference/api-code
func zhipuError(r Refusal) []byte {
	code := r.Code
	if code == "" {
		code = "1214"
	}
	return mustJSON(map[string]any{"error": map[string]any{"code": code, "message": r.Message}})
}

// emptyTextParts refuses a content part whose text is empty, as Zhipu
// does: https://github.com/agentscope-ai/QwenPaw/issues/287
func emptyTextParts(source string) Rule {
	return Rule{Name: "no empty text parts", Source: source, Check: func(req *Request, _ *Issued) *Refusal {
		for _, m := range req.Messages {
			var parts []struct {
				Type string  `json:"type"`
				Text *string `json:"text"`
			}
			if json.Unmarshal(m.Fields["content"], &parts) != nil {
				continue
			}
			for j, p := range parts {
				if p.Type == "text" && (p.Text == nil || *p.Text == "") {
					return &Refusal{Status: http.StatusBadRequest, Message: fmt.Sprintf("messages[%d].content[%d].text:text cannot be empty.", m.Index, j)}
				}
			}
		}
		return nil
	}}
}

// Zhipu is GLM at open.bigmodel.cn/api/paas/v4 (api.z.ai/api/paas/v4).
func Zhipu() Profile {
	const ref = "https://docs.z.ai/api-reference/llm/chat-completion"
	// Text from https://github.com/continuedev/continue/issues/13259
	illegal := Refusal{Status: http.StatusBadRequest, Code: "1214", Message: "The messages parameter is illegal. Please check the documentation."}
	return Profile{
		Name: "zhipu", BasePath: "/api/paas/v4", Model: "glm-4.6",
		Rules: []Rule{
			toolAnswersCall(ref, func(int) Refusal { return illegal }),
			everyCallAnswered(ref, func(int, []string) Refusal { return illegal }),
			emptyTextParts(ref),
		},
		// GLM-4.6 thinks by default and answers reasoning_content:
		// https://docs.z.ai/guides/capabilities/thinking
		Render: Render{Reasoning: "reasoning_content", ID: func(n, _ int, name string) string {
			return "call_" + digest("glm", fmt.Sprint(n), name)[:20]
		}, Usage: openAIUsage},
		Error: zhipuError,
		ContextError: func(n, max int) Refusal {
			return Refusal{Status: http.StatusBadRequest, Code: "1261", Message: fmt.Sprintf("Prompt exceeds max length: %d > %d", n, max)}
		},
	}
}
