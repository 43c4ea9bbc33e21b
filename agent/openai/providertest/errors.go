package providertest

import (
	"encoding/json"
	"net/http"
)

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// openAIError is OpenAI's error body, which most compatible servers copy:
// https://platform.openai.com/docs/guides/error-codes
func openAIError(r Refusal) []byte {
	typ := "invalid_request_error"
	switch {
	case r.Status == http.StatusUnauthorized:
		typ = "authentication_error"
	case r.Status == http.StatusTooManyRequests:
		typ = "rate_limit_error"
	case r.Status >= 500:
		typ = "server_error"
	}
	var param, code any
	if r.Param != "" {
		param = r.Param
	}
	if r.Code != "" {
		code = r.Code
	}
	return mustJSON(map[string]any{"error": map[string]any{"message": r.Message, "type": typ, "param": param, "code": code}})
}

// messageTypeError is {"error":{"message","type"}}, the shape of Moonshot,
// Groq and Ollama.
func messageTypeError(r Refusal) []byte {
	code := r.Code
	if code == "" {
		code = "invalid_request_error"
	}
	return mustJSON(map[string]any{"error": map[string]any{"message": r.Message, "type": code}})
}
