package providertest

import (
	"encoding/json"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// The rules below are shared by several providers; each profile picks the
// ones its documentation states and words the refusal as the provider does.

// knownFields refuses a top-level field not in top, a message field not in
// the role's list, or a tool call field not in call. refuse gets the
// message index (-1 for the top level), the role and the field.
func knownFields(source string, top []string, roles map[string][]string, call []string, refuse func(i int, role, field string) Refusal) Rule {
	return Rule{Name: "no unknown fields", Source: source, Check: func(req *Request, _ *Issued) *Refusal {
		for _, f := range sortedKeys(req.Fields) {
			if !slices.Contains(top, f) {
				r := refuse(-1, "", f)
				return &r
			}
		}
		for _, m := range req.Messages {
			allowed, ok := roles[m.Role]
			if !ok {
				continue // an unknown role is another rule's business
			}
			for _, f := range sortedKeys(m.Fields) {
				if !slices.Contains(allowed, f) {
					r := refuse(m.Index, m.Role, f)
					return &r
				}
			}
			for _, tc := range m.ToolCalls {
				for _, f := range sortedKeys(tc.Fields) {
					if call != nil && !slices.Contains(call, f) {
						r := refuse(m.Index, m.Role, "tool_calls."+f)
						return &r
					}
				}
			}
		}
		return nil
	}}
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// toolAnswersCall refuses a tool message whose tool_call_id is not a call of
// the assistant message before it (other tool messages may come between).
func toolAnswersCall(source string, refuse func(i int) Refusal) Rule {
	return Rule{Name: "a tool message answers a call of the assistant message before it", Source: source, Check: func(req *Request, _ *Issued) *Refusal {
		var open []string
		for _, m := range req.Messages {
			switch m.Role {
			case "assistant":
				open = open[:0]
				for _, tc := range m.ToolCalls {
					open = append(open, tc.ID)
				}
			case "tool":
				if !slices.Contains(open, m.ToolCallID) {
					r := refuse(m.Index)
					return &r
				}
			default:
				open = open[:0]
			}
		}
		return nil
	}}
}

// everyCallAnswered refuses an assistant message with tool calls that are
// not all answered by the tool messages right after it.
func everyCallAnswered(source string, refuse func(i int, missing []string) Refusal) Rule {
	return Rule{Name: "every tool call is answered by a tool message", Source: source, Check: func(req *Request, _ *Issued) *Refusal {
		for i, m := range req.Messages {
			if m.Role != "assistant" || len(m.ToolCalls) == 0 {
				continue
			}
			answered := map[string]bool{}
			for _, next := range req.Messages[i+1:] {
				if next.Role != "tool" {
					break
				}
				answered[next.ToolCallID] = true
			}
			var missing []string
			for _, tc := range m.ToolCalls {
				if !answered[tc.ID] {
					missing = append(missing, tc.ID)
				}
			}
			if len(missing) > 0 {
				r := refuse(m.Index, missing)
				return &r
			}
		}
		return nil
	}}
}

// reasoningBack refuses an assistant message with tool calls that does not
// carry field, or carries other reasoning than the server handed out with
// those calls. It applies while on(req) holds (thinking enabled).
func reasoningBack(source, field string, on func(*Request) bool, refuse func(i int) Refusal) Rule {
	return Rule{Name: field + " is sent back on assistant tool-call messages", Source: source, Check: func(req *Request, is *Issued) *Refusal {
		if on != nil && !on(req) {
			return nil
		}
		for _, m := range req.Messages {
			if m.Role != "assistant" || len(m.ToolCalls) == 0 {
				continue
			}
			got := m.String(field)
			want, known := is.Lookup(m.ToolCalls[0].ID)
			if got == "" || (known && got != want.Reasoning) {
				r := refuse(m.Index)
				return &r
			}
		}
		return nil
	}}
}

// signatureBack refuses an assistant tool call that was handed out with a
// thought signature and comes back without it or with another one. refuse
// gets the message index, the function name and the call's position in
// the request's function calls (1-based, as Gemini counts content parts).
func signatureBack(source string, refuse func(i int, name string, position int) Refusal) Rule {
	return Rule{Name: "thought_signature is sent back on the tool call it came with", Source: source, Check: func(req *Request, is *Issued) *Refusal {
		for _, m := range req.Messages {
			for _, tc := range m.ToolCalls {
				want, ok := is.Lookup(tc.ID)
				if !ok || want.Signature == "" {
					continue
				}
				if tc.Signature != want.Signature {
					r := refuse(m.Index, tc.Name, m.Index+1)
					return &r
				}
			}
		}
		return nil
	}}
}

// detailsBack refuses an assistant tool-call message that lacks the
// reasoning_details entries the server handed out with its calls.
func detailsBack(source string, on func(*Request) bool, refuse func(i int, name string) Refusal) Rule {
	return Rule{Name: "reasoning_details are sent back on assistant tool-call messages", Source: source, Check: func(req *Request, is *Issued) *Refusal {
		if on != nil && !on(req) {
			return nil
		}
		for _, m := range req.Messages {
			if m.Role != "assistant" || len(m.ToolCalls) == 0 {
				continue
			}
			want, ok := is.Lookup(m.ToolCalls[0].ID)
			if !ok || len(want.Details) == 0 {
				continue
			}
			if !sameJSON(m.Fields["reasoning_details"], want.Details) {
				r := refuse(m.Index, m.ToolCalls[0].Name)
				return &r
			}
		}
		return nil
	}}
}

// sameJSON compares two JSON values ignoring formatting.
func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return string(ja) == string(jb)
}

// noUserAfterTool refuses a user message right after a tool message.
func noUserAfterTool(source string, refuse func(i int) Refusal) Rule {
	return Rule{Name: "no user message right after a tool message", Source: source, Check: func(req *Request, _ *Issued) *Refusal {
		for i := 1; i < len(req.Messages); i++ {
			if req.Messages[i].Role == "user" && req.Messages[i-1].Role == "tool" {
				r := refuse(i)
				return &r
			}
		}
		return nil
	}}
}

// toolCallIDs refuses a tool call id (on an assistant call or a tool
// message) that does not match re.
func toolCallIDs(source string, re *regexp.Regexp, refuse func(id string) Refusal) Rule {
	return Rule{Name: "tool call ids match " + re.String(), Source: source, Check: func(req *Request, _ *Issued) *Refusal {
		for _, m := range req.Messages {
			for _, tc := range m.ToolCalls {
				if !re.MatchString(tc.ID) {
					r := refuse(tc.ID)
					return &r
				}
			}
			if m.Role == "tool" && !re.MatchString(m.ToolCallID) {
				r := refuse(m.ToolCallID)
				return &r
			}
		}
		return nil
	}}
}

// onlyValue refuses a top-level number field set to anything but want,
// while on(req) holds. An absent field is the server's default and passes.
func onlyValue(source, field string, want float64, on func(*Request) bool, refuse func() Refusal) Rule {
	return Rule{Name: field + " is absent or exactly its fixed value", Source: source, Check: func(req *Request, _ *Issued) *Refusal {
		if on != nil && !on(req) {
			return nil
		}
		if v, ok := req.Number(field); ok && v != want {
			r := refuse()
			return &r
		}
		return nil
	}}
}

// messageFieldOnlyOn refuses field on a message whose role is not in roles.
func messageFieldOnlyOn(source, field string, roles []string, refuse func(i int, role string) Refusal) Rule {
	return Rule{Name: field + " only on " + strings.Join(roles, ", ") + " messages", Source: source, Check: func(req *Request, _ *Issued) *Refusal {
		for _, m := range req.Messages {
			if _, has := m.Fields[field]; has && !slices.Contains(roles, m.Role) {
				r := refuse(m.Index, m.Role)
				return &r
			}
		}
		return nil
	}}
}

// unsupportedFields refuses any of the top-level fields or message fields
// named, whatever their value.
func unsupportedFields(source string, top, message []string, refuse func(i int, role, field string) Refusal) Rule {
	return Rule{Name: "no unsupported fields", Source: source, Check: func(req *Request, _ *Issued) *Refusal {
		for _, f := range top {
			if _, ok := req.Fields[f]; ok {
				r := refuse(-1, "", f)
				return &r
			}
		}
		for _, m := range req.Messages {
			for _, f := range message {
				if _, ok := m.Fields[f]; ok {
					r := refuse(m.Index, m.Role, f)
					return &r
				}
			}
		}
		return nil
	}}
}

// argumentsJSON refuses history whose tool call arguments are not a JSON
// object: chat templates parse them to render the prompt.
func argumentsJSON(source string, refuse func(i int, args string) Refusal) Rule {
	return Rule{Name: "tool call arguments in history are valid JSON", Source: source, Check: func(req *Request, _ *Issued) *Refusal {
		for _, m := range req.Messages {
			for _, tc := range m.ToolCalls {
				args, _ := tc.ArgumentsText()
				var v map[string]any
				if json.Unmarshal([]byte(args), &v) != nil {
					r := refuse(m.Index, args)
					return &r
				}
			}
		}
		return nil
	}}
}

// argumentsString refuses tool call arguments sent as anything but a JSON
// string, as OpenAI's schema types them.
func argumentsString(source string, refuse func(i, j int) Refusal) Rule {
	return Rule{Name: "tool call arguments are a string", Source: source, Check: func(req *Request, _ *Issued) *Refusal {
		for _, m := range req.Messages {
			for j, tc := range m.ToolCalls {
				if _, isString := tc.ArgumentsText(); !isString {
					r := refuse(m.Index, j)
					return &r
				}
			}
		}
		return nil
	}}
}
