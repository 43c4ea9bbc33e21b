package providertest

import (
	"fmt"
	"net/http"
)

// Local servers: Ollama, vLLM, llama.cpp's llama-server and LM Studio. They
// need no API key and render the chat template from the history, so a
// history the template cannot take is refused.

// Ollama is Ollama's OpenAI compatibility at localhost:11434/v1.
// https://docs.ollama.com/api/openai-compatibility
func Ollama() Profile {
	return Profile{
		Name: "ollama", BasePath: "/v1", Model: "qwen3:8b", NoAuth: true,
		Rules: []Rule{
			// The compatibility layer decodes each call's arguments into the
			// native request's object and answers 400 when they are not JSON.
			argumentsJSON("https://github.com/ollama/ollama/blob/main/openai/openai.go", func(_ int, args string) Refusal {
				return Refusal{Status: http.StatusBadRequest, Message: "invalid tool call arguments: " + args}
			}),
		},
		// Ollama answers thinking as "reasoning" and ids "call_" + 8
		// alphanumerics; arguments are a string.
		Render: Render{Reasoning: "reasoning", ID: func(n, _ int, name string) string {
			return "call_" + digest("ollama", fmt.Sprint(n), name)[:8]
		}, Usage: plainUsage},
		Error: openAIError,
	}
}

// vllmError is vLLM's error body, seen in
// https://github.com/mistralai/mistral-vibe/issues/578
func vllmError(r Refusal) []byte {
	typ := "BadRequestError"
	if r.Status >= 500 {
		typ = "InternalServerError"
	}
	return mustJSON(map[string]any{"error": map[string]any{"message": r.Message, "type": typ, "param": nil, "code": r.Status}})
}

func vllmContextError(n, max int) Refusal {
	return Refusal{Status: http.StatusBadRequest, Message: fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d tokens in the messages. Please reduce the length of the messages.", max, n)}
}

// VLLM is vLLM's OpenAI-compatible server (…/v1) with a reasoning parser.
// https://docs.vllm.ai/en/latest/features/reasoning_outputs.html
func VLLM() Profile {
	return Profile{
		Name: "vllm", BasePath: "/v1", Model: "Qwen/Qwen3-8B", NoAuth: true,
		Rules: []Rule{
			// Chat templates json-parse the arguments of past calls.
			argumentsJSON("https://docs.vllm.ai/en/latest/features/tool_calling.html", func(_ int, args string) Refusal {
				return Refusal{Status: http.StatusBadRequest, Message: "Expecting value: line 1 column 1 (char 0): tool call arguments " + args + " are not valid JSON"}
			}),
		},
		Render:       Render{Reasoning: "reasoning", ID: func(n, _ int, name string) string { return "chatcmpl-tool-" + digest("vllm", fmt.Sprint(n), name)[:32] }, Usage: plainUsage},
		Error:        vllmError,
		ContextError: vllmContextError,
	}
}

// VLLMMistral is vLLM serving a Mistral-family model with the mistral
// tokenizer, which enforces Mistral's own rules.
// https://github.com/vllm-project/vllm/issues/9019
func VLLMMistral() Profile {
	p := VLLM()
	p.Name, p.Model = "vllm-mistral", "mistralai/Mistral-Small-3.2-24B-Instruct-2506"
	p.Rules = append(p.Rules, mistralRules("https://github.com/vllm-project/vllm/issues/9019", func(r Refusal) Refusal { return r })...)
	p.Render = Render{ID: mistralIDs, Usage: plainUsage}
	return p
}

// llamaCppError is llama-server's error body:
// https://github.com/ggml-org/llama.cpp/pull/15780
func llamaCppError(r Refusal) []byte {
	typ := "invalid_request_error"
	if r.Status >= 500 {
		typ = "server_error"
	}
	if r.Code != "" {
		typ = r.Code
	}
	return mustJSON(map[string]any{"error": map[string]any{"code": r.Status, "message": r.Message, "type": typ}})
}

// LlamaCpp is llama.cpp's llama-server (…/v1) as released, arguments as a
// string.
func LlamaCpp() Profile {
	return Profile{
		Name: "llamacpp", BasePath: "/v1", Model: "qwen3-8b-q4_k_m.gguf", NoAuth: true,
		Rules: []Rule{
			// The server parses the arguments of past calls to render the
			// template and fails with a 500 when they are not JSON.
			argumentsJSON("https://github.com/ggml-org/llama.cpp/tree/master/tools/server#openai-compatible-api-endpoints", func(_ int, args string) Refusal {
				return Refusal{Status: http.StatusInternalServerError, Message: "[json.exception.parse_error.101] parse error at line 1, column 1: syntax error while parsing value - invalid literal; last read: '" + args + "'"}
			}),
		},
		Render: Render{Reasoning: "reasoning_content", ID: func(n, _ int, name string) string {
			return digest("llamacpp", fmt.Sprint(n), name)[:32]
		}, Usage: plainUsage},
		Error: llamaCppError,
		ContextError: func(n, max int) Refusal {
			return Refusal{Status: http.StatusBadRequest, Code: "exceed_context_size_error", Message: "the request exceeds the available context size. try increasing the context size or enable context shift",
				Body: mustJSON(map[string]any{"error": map[string]any{"code": 400, "message": "the request exceeds the available context size. try increasing the context size or enable context shift", "type": "exceed_context_size_error", "n_prompt_tokens": n, "n_ctx": max}})}
		},
	}
}

// LlamaCppArgumentsObject is llama-server in the releases that answered
// tool call arguments as a JSON object (now behind --tool-args-object).
// https://github.com/ggml-org/llama.cpp/issues/20198,
// https://github.com/ggml-org/llama.cpp/pull/20202
func LlamaCppArgumentsObject() Profile {
	p := LlamaCpp()
	p.Name = "llamacpp-args-object"
	p.Render.ArgumentsObject = true
	return p
}

// lmStudioError is {"error":"..."}.
func lmStudioError(r Refusal) []byte { return mustJSON(map[string]any{"error": r.Message}) }

// LMStudio is LM Studio's server at localhost:1234/v1. Its ids are decimal
// strings. https://lmstudio.ai/docs/app/api/endpoints/openai
func LMStudio() Profile {
	return Profile{
		Name: "lmstudio", BasePath: "/v1", Model: "qwen/qwen3-8b", NoAuth: true,
		Rules: []Rule{
			// The prompt is rendered with the model's jinja template, which
			// parses the arguments of past calls.
			argumentsJSON("https://lmstudio.ai/docs/app/api/tools", func(_ int, args string) Refusal {
				return Refusal{Status: http.StatusBadRequest, Message: "Error rendering prompt with jinja template: tool call arguments are not valid JSON: " + args}
			}),
		},
		Render: Render{Reasoning: "reasoning_content", ID: func(n, _ int, name string) string {
			return fmt.Sprintf("%09d", 100000000+n*7919)
		}, Usage: plainUsage},
		Error: lmStudioError,
	}
}

// All is every profile, for table-driven tests.
func All() []Profile {
	return []Profile{OpenAI(), AzureOpenAI(), DeepSeek(), Kimi(), Qwen(), Zhipu(), Gemini(), Mistral(), Groq(), XAI(), OpenRouter(), Ollama(), VLLM(), VLLMMistral(), LlamaCpp(), LlamaCppArgumentsObject(), LMStudio()}
}
