package providertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Request is a chat completion request as it crossed the wire, decoded
// field by field so that rules see every field, including those a typed
// client library would hide or drop.
type Request struct {
	Raw      []byte
	Fields   map[string]json.RawMessage
	Model    string
	Messages []Message
}

// Message is one entry of the request's messages.
type Message struct {
	Index      int
	Fields     map[string]json.RawMessage
	Role       string
	ToolCallID string
	ToolCalls  []ToolCall
}

// ToolCall is one entry of an assistant message's tool_calls.
type ToolCall struct {
	Fields    map[string]json.RawMessage
	ID        string
	Name      string
	Arguments json.RawMessage // as sent: a JSON string, or an object where a client sends one
	// Signature is extra_content.google.thought_signature, "" when absent.
	Signature string
}

// parseRequest decodes body; the error is worded for an HTTP 400.
func parseRequest(body []byte) (*Request, error) {
	r := &Request{Raw: body}
	if err := json.Unmarshal(body, &r.Fields); err != nil {
		return nil, fmt.Errorf("the request body is not a JSON object: %w", err)
	}
	_ = json.Unmarshal(r.Fields["model"], &r.Model)
	var msgs []map[string]json.RawMessage
	if err := json.Unmarshal(r.Fields["messages"], &msgs); err != nil {
		return nil, fmt.Errorf("'messages' is not an array of objects: %w", err)
	}
	for i, f := range msgs {
		m := Message{Index: i, Fields: f}
		_ = json.Unmarshal(f["role"], &m.Role)
		_ = json.Unmarshal(f["tool_call_id"], &m.ToolCallID)
		var calls []map[string]json.RawMessage
		_ = json.Unmarshal(f["tool_calls"], &calls)
		for _, c := range calls {
			tc := ToolCall{Fields: c}
			_ = json.Unmarshal(c["id"], &tc.ID)
			var fn struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			}
			_ = json.Unmarshal(c["function"], &fn)
			tc.Name, tc.Arguments = fn.Name, fn.Arguments
			var extra struct {
				Google struct {
					ThoughtSignature string `json:"thought_signature"`
				} `json:"google"`
			}
			_ = json.Unmarshal(c["extra_content"], &extra)
			tc.Signature = extra.Google.ThoughtSignature
			m.ToolCalls = append(m.ToolCalls, tc)
		}
		r.Messages = append(r.Messages, m)
	}
	return r, nil
}

// String returns the string value of field, "" when it is absent or not a
// string.
func (m Message) String(field string) string {
	var s string
	_ = json.Unmarshal(m.Fields[field], &s)
	return s
}

// Has reports whether field is present and not null.
func (m Message) Has(field string) bool {
	v, ok := m.Fields[field]
	return ok && !bytes.Equal(bytes.TrimSpace(v), []byte("null"))
}

// Text is the message's content as text: the string, or its text parts
// joined.
func (m Message) Text() string {
	if s := m.String("content"); s != "" {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(m.Fields["content"], &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// ArgumentsText is the arguments as the model produced them: the string's
// value, or the raw object.
func (tc ToolCall) ArgumentsText() (string, bool) {
	var s string
	if err := json.Unmarshal(tc.Arguments, &s); err == nil {
		return s, true
	}
	return string(tc.Arguments), false
}

// Number is the numeric value of a top-level field and whether it is set.
func (r *Request) Number(field string) (float64, bool) {
	v, ok := r.Fields[field]
	if !ok {
		return 0, false
	}
	var f float64
	if err := json.Unmarshal(v, &f); err != nil {
		return 0, false
	}
	return f, true
}

// Contains reports whether any message's text contains s.
func (r *Request) Contains(s string) bool {
	for _, m := range r.Messages {
		if strings.Contains(m.Text(), s) {
			return true
		}
	}
	return false
}
