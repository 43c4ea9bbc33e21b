package mcp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/nanobot-go/nanobot/agent"
)

// maxDescription bounds a tool's description: it is sent with every request.
const maxDescription = 1024

// tool is one tool of a server, as the model sees it.
type tool struct {
	srv    *server
	remote string // the server's name for it
	spec   agent.ToolSpec
	// readOnly: the server marks the tool as changing nothing in its
	// environment (annotations.readOnlyHint).
	readOnly bool
}

var _ agent.ReadOnlyTool = (*tool)(nil)

func newTool(s *server, name string, t toolInfo) *tool {
	desc := strings.TrimSpace(t.Description)
	if desc == "" {
		desc = t.Title
	}
	if utf8.RuneCountInString(desc) > maxDescription {
		desc = string([]rune(desc)[:maxDescription-1]) + "…"
	}
	return &tool{srv: s, remote: t.Name, spec: agent.ToolSpec{Name: name, Description: desc, Parameters: CleanSchema(t.InputSchema)},
		readOnly: t.Annotations.ReadOnlyHint}
}

// ReadOnly reports whether the server marks the tool as read-only and its
// calls need nobody's approval: such calls of one reply run in parallel.
// The mark is the server's word; it decides only what runs at once,
// never what is allowed.
func (t *tool) ReadOnly() bool {
	a := t.srv.cfg.Approval
	return t.readOnly && (a == ApprovalAllow || a == "")
}

func (t *tool) Spec() agent.ToolSpec { return t.spec }

// Run calls the tool on its server, after the owner's approval when the
// server needs it. Its result is marked as content from outside.
func (t *tool) Run(ctx context.Context, args json.RawMessage) (string, error) {
	cfg := t.srv.cfg
	ev := agent.EventFrom(ctx)
	if ev == nil {
		ev = &agent.ToolEvent{}
	}
	ev.Category, ev.Reason = "mcp", "server "+cfg.Name
	if err := t.authorize(ctx, args, ev); err != nil {
		return "", err
	}
	sess, err := t.srv.current()
	if err != nil {
		return "", err
	}
	callCtx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	res, err := sess.callTool(callCtx, t.remote, args)
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return "", fmt.Errorf("stopped while MCP server %s was working: %w", cfg.Name, ctx.Err())
	case callCtx.Err() != nil:
		return "", fmt.Errorf("MCP server %s did not answer within %s; the call was cancelled", cfg.Name, cfg.Timeout)
	default:
		var rpc *rpcError
		if !errors.As(err, &rpc) {
			t.srv.broken(sess) // not the server's answer but a transport failure: reconnect
		}
		return "", fmt.Errorf("MCP server %s: %v", cfg.Name, err)
	}
	text := renderResult(res)
	if res.IsError {
		return "", fmt.Errorf("%s failed: %s", t.remote, text)
	}
	return agent.Untrusted(text), nil
}

// authorize applies the server's approval setting.
func (t *tool) authorize(ctx context.Context, args json.RawMessage, ev *agent.ToolEvent) error {
	cfg := t.srv.cfg
	switch cfg.Approval {
	case ApprovalAllow, "":
		ev.Verdict = "allow"
		return nil
	case ApprovalOwner:
	default:
		ev.Verdict = "deny"
		return fmt.Errorf("calls to MCP server %s are not allowed (approval: %s)", cfg.Name, cfg.Approval)
	}
	ap := t.srv.m.opts.Approver
	if ap == nil {
		ev.Verdict = "deny"
		return fmt.Errorf("calls to MCP server %s need the owner's approval, and nobody can be asked here", cfg.Name)
	}
	actx, cancel := context.WithTimeout(ctx, t.srv.m.opts.ApprovalTimeout)
	defer cancel()
	approved, who, err := ap.Approve(actx, t.spec.Name+" "+string(args), fmt.Sprintf("MCP server %s asks for approval of every call (approval: owner)", cfg.Name))
	ev.Approver = who
	switch {
	case err == nil && approved:
		ev.Verdict, ev.Approval = "ask", agent.ApprovalApproved
		return nil
	case ctx.Err() != nil:
		ev.Verdict, ev.Approval = "deny", agent.ApprovalFailed
		return fmt.Errorf("stopped while waiting for the owner's approval: %w", ctx.Err())
	case err != nil:
		ev.Verdict, ev.Approval = "deny", agent.ApprovalFailed
		return fmt.Errorf("the call to %s was not run: asking the owner failed (%v), which counts as a denial", t.spec.Name, err)
	case actx.Err() != nil:
		ev.Verdict, ev.Approval = "deny", agent.ApprovalTimedOut
		return fmt.Errorf("the call to %s was not run: the owner did not answer in time, which counts as a denial", t.spec.Name)
	default:
		ev.Verdict, ev.Approval = "deny", agent.ApprovalDenied
		return fmt.Errorf("the call to %s was not run: the owner denied it", t.spec.Name)
	}
}

// renderResult is the text of a result: text content as it is, other
// content described in a line, the structured content when there is no
// other.
func renderResult(res *callResult) string {
	var parts []string
	for _, c := range res.Content {
		switch c.Type {
		case "text":
			parts = append(parts, c.Text)
		case "image":
			parts = append(parts, fmt.Sprintf("[image: %s, %d bytes, not shown]", c.MIMEType, base64Len(c.Data)))
		case "audio":
			parts = append(parts, fmt.Sprintf("[audio: %s, %d bytes, not played]", c.MIMEType, base64Len(c.Data)))
		case "resource_link":
			parts = append(parts, fmt.Sprintf("[resource link: %s %s]", c.URI, c.Name))
		case "resource":
			if r := c.Resource; r != nil && r.Text != "" {
				parts = append(parts, fmt.Sprintf("[resource %s]\n%s", r.URI, r.Text))
			} else if r != nil {
				parts = append(parts, fmt.Sprintf("[resource: %s, %s, %d bytes, not shown]", r.URI, r.MIMEType, base64Len(r.Blob)))
			}
		default:
			parts = append(parts, fmt.Sprintf("[%s content, not shown]", truncate(c.Type, 40)))
		}
	}
	if len(parts) == 0 && len(res.StructuredContent) > 0 && string(res.StructuredContent) != "null" {
		var b bytes.Buffer
		if json.Compact(&b, res.StructuredContent) == nil {
			parts = append(parts, b.String())
		}
	}
	if len(parts) == 0 {
		return "(no output)"
	}
	return strings.Join(parts, "\n")
}

// base64Len is the number of bytes base64 text s holds.
func base64Len(s string) int {
	return len(strings.TrimRight(s, "=")) * 6 / 8
}

var notNameChar = regexp.MustCompile(`[^A-Za-z0-9_-]`)

// maxToolName is what OpenAI-compatible endpoints accept.
const maxToolName = 64

// toolName is mcp_<server>_<tool> in the characters function names may
// hold, within 64 of them; a long or clashing name ends in a short hash.
func toolName(server, remote string, taken map[string]bool) string {
	name := "mcp_" + notNameChar.ReplaceAllString(server, "_") + "_" + notNameChar.ReplaceAllString(remote, "_")
	if len(name) <= maxToolName && !taken[name] {
		return name
	}
	sum := sha256.Sum256([]byte(server + "\x00" + remote))
	suffix := "_" + hex.EncodeToString(sum[:4])
	return name[:min(len(name), maxToolName-len(suffix))] + suffix
}

// CleanSchema turns a tool's input schema into one OpenAI-compatible
// endpoints accept: an object with properties, local $refs inlined,
// keywords they reject ($schema, $id, $defs, ...) dropped, and required
// names limited to the properties that exist.
func CleanSchema(in any) json.RawMessage {
	var v any
	switch s := in.(type) {
	case nil:
	case json.RawMessage:
		_ = json.Unmarshal(s, &v)
	default:
		if b, err := json.Marshal(s); err == nil {
			_ = json.Unmarshal(b, &v)
		}
	}
	root, _ := v.(map[string]any)
	if root == nil {
		root = map[string]any{}
	}
	defs := map[string]any{}
	for _, k := range []string{"$defs", "definitions"} {
		if d, ok := root[k].(map[string]any); ok {
			for name, s := range d {
				defs["#/"+k+"/"+name] = s
			}
		}
	}
	out, _ := clean(root, defs, 0).(map[string]any)
	out["type"] = "object"
	if _, ok := out["properties"].(map[string]any); !ok {
		out["properties"] = map[string]any{}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return json.RawMessage(`{"type":"object","properties":{}}`)
	}
	return b
}

// dropped are keywords some endpoints refuse in a function's parameters.
var dropped = map[string]bool{"$schema": true, "$id": true, "$comment": true, "$anchor": true, "$defs": true, "definitions": true,
	"$vocabulary": true, "$dynamicRef": true, "$dynamicAnchor": true}

// maxSchemaDepth stops inlining recursive $refs.
const maxSchemaDepth = 12

func clean(v any, defs map[string]any, depth int) any {
	switch s := v.(type) {
	case map[string]any:
		if ref, ok := s["$ref"].(string); ok {
			if target, found := defs[ref]; found && depth < maxSchemaDepth {
				return clean(target, defs, depth+1)
			}
			return map[string]any{} // unresolvable or recursive: anything goes
		}
		out := make(map[string]any, len(s))
		for k, val := range s {
			if dropped[k] {
				continue
			}
			out[k] = clean(val, defs, depth+1)
		}
		if props, ok := out["properties"].(map[string]any); ok {
			if req, ok := out["required"].([]any); ok {
				kept := []any{}
				for _, r := range req {
					if name, ok := r.(string); ok && props[name] != nil {
						kept = append(kept, name)
					}
				}
				out["required"] = kept
			}
		}
		return out
	case []any:
		out := make([]any, len(s))
		for i, e := range s {
			out[i] = clean(e, defs, depth+1)
		}
		return out
	default:
		return v
	}
}
