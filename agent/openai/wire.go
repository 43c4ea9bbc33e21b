package openai

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The wire layer sits between go-openai and the network, for what its
// types cannot carry: fields a provider adds to an assistant message or a
// tool call and needs back later (reasoning, reasoning details, thought
// signatures), request fields it does not know (prompt_cache_key, cache
// breakpoints), and the reply shapes of servers that stray from OpenAI's
// (tool arguments as a JSON object, an error inside a 200 reply, an error
// body that is an array). Requests are patched, and replies made readable,
// at the JSON body; what go-openai parses is then what the provider meant.

type patchKey struct{}

// bodyPatch is what one chat request adds to the body go-openai wrote.
type bodyPatch struct {
	// messages[i], when set, is a JSON object whose fields are added to
	// message i (fields go-openai wrote are kept).
	messages []json.RawMessage
	// calls[i][j], when set, is added to tool call j of message i.
	calls [][]json.RawMessage
	// breakpoints are the messages whose content gets a cache breakpoint
	// (Anthropic style: the content as parts, the last with cache_control).
	breakpoints []int
	// top are fields added to the request itself.
	top map[string]any
}

func (b *bodyPatch) empty() bool {
	return b == nil || (len(b.messages) == 0 && len(b.calls) == 0 && len(b.breakpoints) == 0 && len(b.top) == 0)
}

// apply returns body with the patch applied; body unchanged when it is not
// a JSON object with messages.
func (b *bodyPatch) apply(body []byte) []byte {
	var req map[string]json.RawMessage
	if json.Unmarshal(body, &req) != nil {
		return body
	}
	var msgs []map[string]json.RawMessage
	if json.Unmarshal(req["messages"], &msgs) != nil {
		return body
	}
	for i := range msgs {
		if i < len(b.messages) && len(b.messages[i]) > 0 {
			addFields(msgs[i], b.messages[i])
		}
		if i < len(b.calls) && len(b.calls[i]) > 0 {
			var calls []map[string]json.RawMessage
			if json.Unmarshal(msgs[i]["tool_calls"], &calls) == nil {
				for j := range calls {
					if j < len(b.calls[i]) && len(b.calls[i][j]) > 0 {
						addFields(calls[j], b.calls[i][j])
					}
				}
				msgs[i]["tool_calls"] = mustJSON(calls)
			}
		}
	}
	for _, i := range b.breakpoints {
		if i >= 0 && i < len(msgs) {
			addBreakpoint(msgs[i])
		}
	}
	req["messages"] = mustJSON(msgs)
	for k, v := range b.top {
		req[k] = mustJSON(v)
	}
	return mustJSON(req)
}

// addFields copies the fields of the JSON object extra into m, leaving
// those m has.
func addFields(m map[string]json.RawMessage, extra json.RawMessage) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(extra, &fields) != nil {
		return
	}
	for k, v := range fields {
		if _, ok := m[k]; !ok {
			m[k] = v
		}
	}
}

var ephemeral = json.RawMessage(`{"type":"ephemeral"}`)

// addBreakpoint marks the end of a message's content as a cache
// breakpoint, turning a string content into one text part.
func addBreakpoint(m map[string]json.RawMessage) {
	var text string
	if json.Unmarshal(m["content"], &text) == nil {
		m["content"] = mustJSON([]map[string]any{{"type": "text", "text": text, "cache_control": ephemeral}})
		return
	}
	var parts []map[string]json.RawMessage
	if json.Unmarshal(m["content"], &parts) == nil && len(parts) > 0 {
		parts[len(parts)-1]["cache_control"] = ephemeral
		m["content"] = mustJSON(parts)
	}
}

// mustJSON marshals values that always marshal (maps of raw JSON).
func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic("openai: marshal request: " + err.Error())
	}
	return b
}

// wireReply is a chat reply as it came, for the fields go-openai drops.
type wireReply struct {
	Choices []struct {
		Message json.RawMessage `json:"message"`
	} `json:"choices"`
	Usage *wireUsage `json:"usage"`
}

// wireUsage holds the cached-token counts in the shapes providers send.
type wireUsage struct {
	PromptTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CachedTokens         int `json:"cached_tokens"`           // Moonshot
	PromptCacheHitTokens int `json:"prompt_cache_hit_tokens"` // DeepSeek
	CacheReadInputTokens int `json:"cache_read_input_tokens"` // Anthropic-style gateways
}

func (u *wireUsage) cached() int {
	if u == nil {
		return 0
	}
	if u.PromptTokensDetails != nil && u.PromptTokensDetails.CachedTokens > 0 {
		return u.PromptTokensDetails.CachedTokens
	}
	return max(u.CachedTokens, u.PromptCacheHitTokens, u.CacheReadInputTokens)
}

// fieldsOf returns the fields of the JSON object raw other than known and
// those that are null, as a JSON object (nil when none is left).
func fieldsOf(raw json.RawMessage, known ...string) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	for k, v := range m {
		if isNull(v) {
			delete(m, k)
		}
	}
	for _, k := range known {
		delete(m, k)
	}
	if len(m) == 0 {
		return nil
	}
	return mustJSON(m)
}

func isNull(v json.RawMessage) bool { return len(v) == 0 || string(bytes.TrimSpace(v)) == "null" }

// readable rewrites a chat reply into what go-openai can read, keeping the
// provider's meaning. It returns the status and the body to hand on.
//   - An error inside a 200 reply (an error object without choices, or a
//     choice that finished with "error") becomes an error status with the
//     provider's message, so it is retried and reported like any other.
//   - Tool call arguments sent as a JSON object become a JSON string.
//   - An error body that is an array of errors becomes its first error; an
//     error given as a bare string, a top-level message or a "detail"
//     becomes an error object.
func readable(status int, body []byte) (int, []byte) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var list []json.RawMessage
		if json.Unmarshal(trimmed, &list) == nil && len(list) > 0 {
			trimmed = bytes.TrimSpace(list[0])
		}
	}
	var top map[string]json.RawMessage
	if len(trimmed) == 0 || trimmed[0] != '{' || json.Unmarshal(trimmed, &top) != nil {
		return status, body
	}
	if status/100 != 2 {
		if msg, ok := errorMessage(top); ok {
			return status, errorBody(msg, top)
		}
		return status, trimmed
	}
	var choices []map[string]json.RawMessage
	json.Unmarshal(top["choices"], &choices)
	if len(choices) == 0 {
		if msg, ok := errorMessage(top); ok {
			return errorStatus(top["error"]), errorBody(msg, top)
		}
		return status, body
	}
	if reason := stringField(choices[0]["finish_reason"]); reason == "error" {
		msg, ok := errorMessage(choices[0])
		if !ok {
			msg = "the model service ended its answer with an error"
		}
		return errorStatus(choices[0]["error"]), errorBody(msg, choices[0])
	}
	changed := false
	for _, c := range choices {
		var msg map[string]json.RawMessage
		if json.Unmarshal(c["message"], &msg) != nil {
			continue
		}
		var calls []map[string]json.RawMessage
		if json.Unmarshal(msg["tool_calls"], &calls) != nil {
			continue
		}
		for _, call := range calls {
			var fn map[string]json.RawMessage
			if json.Unmarshal(call["function"], &fn) != nil {
				continue
			}
			args := bytes.TrimSpace(fn["arguments"])
			if len(args) == 0 || args[0] == '"' || isNull(args) {
				continue
			}
			fn["arguments"] = mustJSON(string(args))
			call["function"] = mustJSON(fn)
			changed = true
		}
		msg["tool_calls"] = mustJSON(calls)
		c["message"] = mustJSON(msg)
	}
	if !changed {
		return status, body
	}
	top["choices"] = mustJSON(choices)
	return status, mustJSON(top)
}

// errorMessage finds the provider's own words in an error object: in
// "error" (an object with a message, or a string), a top-level "message",
// or a "detail" (a string, or validation errors with msg and loc).
func errorMessage(m map[string]json.RawMessage) (string, bool) {
	if e, ok := m["error"]; ok && !isNull(e) {
		if s := stringField(e); s != "" {
			return s, true
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(e, &obj) == nil {
			if s := stringField(obj["message"]); s != "" {
				return withMetadata(s, obj), true
			}
			return strings.TrimSpace(string(e)), true
		}
	}
	if s := stringField(m["message"]); s != "" {
		return s, true
	}
	if d, ok := m["detail"]; ok && !isNull(d) {
		if s := stringField(d); s != "" {
			return s, true
		}
		var list []struct {
			Msg string `json:"msg"`
			Loc []any  `json:"loc"`
		}
		if json.Unmarshal(d, &list) == nil && len(list) > 0 {
			var parts []string
			for _, e := range list {
				loc := make([]string, len(e.Loc))
				for i, l := range e.Loc {
					loc[i] = strings.Trim(string(mustJSON(l)), `"`)
				}
				parts = append(parts, strings.Join(loc, ".")+": "+e.Msg)
			}
			return strings.Join(parts, "; "), true
		}
	}
	return "", false
}

// withMetadata adds what a gateway says of the upstream failure
// (OpenRouter's metadata.raw) to its message.
func withMetadata(msg string, obj map[string]json.RawMessage) string {
	var meta struct {
		Raw          any    `json:"raw"`
		ProviderName string `json:"provider_name"`
	}
	if json.Unmarshal(obj["metadata"], &meta) != nil || meta.Raw == nil {
		return msg
	}
	raw, ok := meta.Raw.(string)
	if !ok {
		raw = string(mustJSON(meta.Raw))
	}
	if meta.ProviderName != "" {
		return msg + " (" + meta.ProviderName + ": " + raw + ")"
	}
	return msg + " (" + raw + ")"
}

// errorBody is an OpenAI-shaped error body with msg, keeping the type and
// code of the error object in m when it has them.
func errorBody(msg string, m map[string]json.RawMessage) []byte {
	e := map[string]any{"message": msg}
	var obj map[string]json.RawMessage
	if json.Unmarshal(m["error"], &obj) != nil {
		obj = m
	}
	for _, k := range []string{"type", "code", "param"} {
		if v, ok := obj[k]; ok && !isNull(v) {
			e[k] = v
		}
	}
	return mustJSON(map[string]any{"error": e})
}

// errorStatus is the HTTP status an error inside a 200 reply stands for:
// its numeric code when that is one, else 502 (the upstream failed).
func errorStatus(e json.RawMessage) int {
	var obj struct {
		Code any `json:"code"`
	}
	if json.Unmarshal(e, &obj) == nil {
		var n int
		switch c := obj.Code.(type) {
		case float64:
			n = int(c)
		case string:
			n, _ = strconv.Atoi(c)
		}
		if n >= 400 && n <= 599 {
			return n
		}
	}
	return http.StatusBadGateway
}

func stringField(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) != nil {
		return ""
	}
	return s
}

// retryDelay reads the delay a Google error body asks for
// (error.details[].retryDelay of a RetryInfo, e.g. "37s").
func retryDelay(body []byte) (time.Duration, bool) {
	var e struct {
		Error struct {
			Details []struct {
				Type       string `json:"@type"`
				RetryDelay string `json:"retryDelay"`
			} `json:"details"`
		} `json:"error"`
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var list []json.RawMessage
		if json.Unmarshal(trimmed, &list) != nil || len(list) == 0 {
			return 0, false
		}
		trimmed = list[0]
	}
	if json.Unmarshal(trimmed, &e) != nil {
		return 0, false
	}
	for _, d := range e.Error.Details {
		if strings.HasSuffix(d.Type, "RetryInfo") && d.RetryDelay != "" {
			if dur, err := time.ParseDuration(d.RetryDelay); err == nil && dur >= 0 {
				return dur, true
			}
		}
	}
	return 0, false
}

// maxReplyBytes bounds what is read of one reply: a chat reply is far
// smaller; a runaway server is not read to the end.
const maxReplyBytes = 32 << 20

// roundTrip patches a chat request and makes its reply readable (see
// the top of this file), recording the reply for the fields go-openai
// drops and the delay the server asks for.
func roundTrip(base http.RoundTripper, req *http.Request) (*http.Response, error) {
	info, _ := req.Context().Value(attemptKey{}).(*attemptInfo)
	patch, _ := req.Context().Value(patchKey{}).(*bodyPatch)
	chat := strings.HasSuffix(req.URL.Path, "/chat/completions")
	if chat && !patch.empty() && req.Body != nil {
		body, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		body = patch.apply(body)
		req = req.Clone(req.Context())
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		req.ContentLength = int64(len(body))
	}
	resp, err := base.RoundTrip(req)
	if err != nil || resp == nil {
		return resp, err
	}
	if info != nil {
		info.retryAfter = resp.Header.Get("Retry-After")
		info.retryAfterMS = resp.Header.Get("Retry-After-Ms")
	}
	if !chat {
		return resp, nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxReplyBytes))
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	if info != nil && resp.StatusCode/100 != 2 && info.retryAfter == "" && info.retryAfterMS == "" {
		if d, ok := retryDelay(body); ok {
			info.retryAfterMS = strconv.FormatInt(d.Milliseconds(), 10)
		}
	}
	status, body := readable(resp.StatusCode, body)
	if status != resp.StatusCode {
		resp.StatusCode = status
		resp.Status = strconv.Itoa(status) + " " + http.StatusText(status)
	}
	if info != nil && status/100 == 2 {
		info.reply = body
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Del("Content-Length")
	return resp, nil
}
