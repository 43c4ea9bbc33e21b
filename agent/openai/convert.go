package openai

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"net/url"
	"strings"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/internal/lazyre"
)

// emptyObjectSchema is sent for tools without parameters: the API rejects a
// null schema.
var emptyObjectSchema = json.RawMessage(`{"type":"object","properties":{}}`)

// errNoChoices is returned when a 200 reply holds no message at all.
var errNoChoices = errors.New("the model service returned no answer")

// dialect is what an endpoint needs beyond OpenAI's wire format, known from
// its host and model name. Everything else is sent the same way to every
// endpoint, in a form all of them accept.
type dialect struct {
	// shortIDs: tool call ids must be exactly 9 letters and digits
	// (Mistral's models, on its API or served elsewhere).
	shortIDs bool
	// cacheKey: prompt_cache_key routes a chat's requests to the same
	// cache (OpenAI, Azure OpenAI); others may refuse the field.
	cacheKey bool
	// breakpoints: Anthropic-style cache_control marks in the content
	// (Claude models behind OpenRouter or a LiteLLM-style gateway).
	breakpoints bool
}

var mistralModel = lazyre.New(`(?i)(^|[/:_-])(mistral|mixtral|magistral|devstral|codestral|ministral|pixtral|voxtral)`)

func dialectOf(baseURL, model string) dialect {
	host := ""
	if u, err := url.Parse(baseURL); err == nil {
		host = strings.ToLower(u.Hostname())
	}
	return dialect{
		shortIDs:    host == "api.mistral.ai" || mistralModel.MatchString(model),
		cacheKey:    host == "api.openai.com" || strings.HasSuffix(host, ".openai.azure.com"),
		breakpoints: strings.Contains(strings.ToLower(model), "claude") && host != "api.anthropic.com",
	}
}

// responseOnly are the fields of a reply's message that describe the reply
// and are not part of the message when it is sent back: OpenAI refuses
// unknown fields of input messages.
var responseOnly = []string{"role", "content", "tool_calls", "function_call", "refusal", "annotations", "audio"}

// chatRequest maps an agent request onto the wire request and what the
// wire layer adds to its body. plain leaves out every field go-openai does
// not know (for an endpoint that refused them).
func (p *Provider) chatRequest(session string, req agent.Request, plain bool) (goopenai.ChatCompletionRequest, *bodyPatch) {
	out := goopenai.ChatCompletionRequest{
		Model:     p.cfg.Model,
		Messages:  make([]goopenai.ChatCompletionMessage, 0, len(req.Messages)),
		MaxTokens: p.cfg.MaxTokens,
	}
	if p.sendsTemperature() {
		// Unset, the model's own default applies: some accept no other
		// (Kimi K2.5 and later: 1).
		out.Temperature = *p.cfg.Temperature
		if out.Temperature == 0 {
			// go-openai omits a zero temperature; the smallest positive
			// value means "0".
			out.Temperature = math.SmallestNonzeroFloat32
		}
	}
	patch := &bodyPatch{}
	ids := callIDs{short: p.dialect.shortIDs}
	withTools := segmentsWithTools(req.Messages)
	for i, m := range req.Messages {
		out.Messages = append(out.Messages, p.chatMessage(m, &ids))
		if plain || m.Role != agent.RoleAssistant {
			continue
		}
		// A provider needs its fields back on the messages of a turn that
		// made tool calls (DeepSeek, Kimi: the reasoning; Gemini,
		// OpenRouter: signatures and reasoning details); those of a turn
		// without tools may be left out, and are.
		if len(m.Extra) > 0 && withTools[i] {
			patch.set(i, len(req.Messages), m.Extra)
		}
		for j, c := range m.ToolCalls {
			if len(c.Extra) > 0 {
				patch.setCall(i, j, len(req.Messages), len(m.ToolCalls), c.Extra)
			}
		}
	}
	for _, t := range req.Tools {
		params := t.Parameters
		if len(params) == 0 {
			params = emptyObjectSchema
		}
		out.Tools = append(out.Tools, goopenai.Tool{
			Type: goopenai.ToolTypeFunction,
			Function: &goopenai.FunctionDefinition{
				Name:        t.Name,
				Description: t.Description,
				Parameters:  params,
			},
		})
	}
	switch {
	case req.ForceTool != "":
		out.ToolChoice = goopenai.ToolChoice{
			Type:     goopenai.ToolTypeFunction,
			Function: goopenai.ToolFunction{Name: req.ForceTool},
		}
	case req.NoToolCalls && len(out.Tools) > 0:
		out.ToolChoice = "none"
	}
	if goopenai.NewReasoningValidator().Validate(out) != nil {
		// Reasoning models (o1, o3, gpt-5, ...) want max_completion_tokens
		// and no sampling temperature.
		out.MaxCompletionTokens, out.MaxTokens = out.MaxTokens, 0
		out.Temperature = 0
	}
	if !plain {
		if p.dialect.cacheKey && session != "" {
			patch.top = map[string]any{"prompt_cache_key": cacheKey(session)}
		}
		if p.dialect.breakpoints && len(out.Messages) > 0 {
			// The end of the system prompt and the newest message: the
			// next request of the chat starts with both.
			patch.breakpoints = []int{0, len(out.Messages) - 1}
		}
	}
	return out, patch
}

func (b *bodyPatch) set(i, n int, extra json.RawMessage) {
	if b.messages == nil {
		b.messages = make([]json.RawMessage, n)
	}
	b.messages[i] = extra
}

func (b *bodyPatch) setCall(i, j, n, calls int, extra json.RawMessage) {
	if b.calls == nil {
		b.calls = make([][]json.RawMessage, n)
	}
	if b.calls[i] == nil {
		b.calls[i] = make([]json.RawMessage, calls)
	}
	b.calls[i][j] = extra
}

// cacheKey names a chat to the provider's cache router without telling it
// the chat: a hash of the session.
func cacheKey(session string) string {
	sum := sha256.Sum256([]byte("nanobot prompt cache\x00" + session))
	return "nanobot-" + hex.EncodeToString(sum[:12])
}

// segmentsWithTools marks the assistant messages of turns (the messages
// between two user messages) that made tool calls.
func segmentsWithTools(msgs []agent.Message) []bool {
	out := make([]bool, len(msgs))
	start := 0
	flush := func(end int) {
		tools := false
		for _, m := range msgs[start:end] {
			tools = tools || len(m.ToolCalls) > 0
		}
		for i := start; i < end; i++ {
			out[i] = tools
		}
	}
	for i, m := range msgs {
		if m.Role == agent.RoleUser {
			flush(i)
			start = i + 1
		}
	}
	flush(len(msgs))
	return out
}

// callIDs maps the ids of tool calls to what the endpoint accepts, the
// same way in every request, so a call and its result keep matching.
type callIDs struct{ short bool }

var shortID = lazyre.New(`^[a-zA-Z0-9]{9}$`)

func (c callIDs) of(id string) string {
	if !c.short || shortID.MatchString(id) {
		return id
	}
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	sum := sha256.Sum256([]byte(id))
	b := make([]byte, 9)
	for i := range b {
		b[i] = letters[int(sum[i])%len(letters)]
	}
	return string(b)
}

// validArgs returns args when they are a JSON object, else "{}": some
// servers refuse a history holding arguments they cannot parse, and the
// model was told at the time that they were invalid.
func validArgs(args string) string {
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(args), &obj) != nil || obj == nil {
		return "{}"
	}
	return args
}

func (p *Provider) chatMessage(m agent.Message, ids *callIDs) goopenai.ChatCompletionMessage {
	out := goopenai.ChatCompletionMessage{Role: string(m.Role), Content: m.Content}
	switch m.Role {
	case agent.RoleUser:
		if p.cfg.Vision && len(m.Images) > 0 {
			out.Content = ""
			if m.Content != "" {
				out.MultiContent = append(out.MultiContent, goopenai.ChatMessagePart{
					Type: goopenai.ChatMessagePartTypeText, Text: m.Content,
				})
			}
			for _, img := range m.Images {
				out.MultiContent = append(out.MultiContent, goopenai.ChatMessagePart{
					Type:     goopenai.ChatMessagePartTypeImageURL,
					ImageURL: &goopenai.ChatMessageImageURL{URL: img},
				})
			}
			return out
		}
	case agent.RoleAssistant:
		for _, tc := range m.ToolCalls {
			out.ToolCalls = append(out.ToolCalls, goopenai.ToolCall{
				ID:       ids.of(tc.ID),
				Type:     goopenai.ToolTypeFunction,
				Function: goopenai.FunctionCall{Name: tc.Name, Arguments: validArgs(tc.Arguments)},
			})
		}
		if len(out.ToolCalls) > 0 {
			return out
		}
	case agent.RoleTool:
		// No name: it is optional for OpenAI and refused by some (xAI
		// refuses a name on any message but the user's).
		out.ToolCallID = ids.of(m.ToolCallID)
	}
	if out.Content == "" {
		// go-openai drops an empty content field, and servers reject user,
		// tool and plain assistant messages without one.
		out.Content = "(empty)"
	}
	return out
}

// response maps the wire reply back onto the agent's types. raw is the
// reply as it came (nil when not at hand), for the fields go-openai drops.
func response(r goopenai.ChatCompletionResponse, raw []byte) (agent.Response, error) {
	if len(r.Choices) == 0 {
		return agent.Response{}, errNoChoices
	}
	var w wireReply
	if len(raw) > 0 {
		json.Unmarshal(raw, &w) // best effort: go-openai read it already
	}
	m := r.Choices[0].Message
	usage := agent.Usage{PromptTokens: r.Usage.PromptTokens, CompletionTokens: r.Usage.CompletionTokens, CachedTokens: w.Usage.cached()}
	if usage.CachedTokens == 0 && r.Usage.PromptTokensDetails != nil {
		usage.CachedTokens = r.Usage.PromptTokensDetails.CachedTokens
	}
	msg := agent.Message{Role: agent.RoleAssistant, Content: m.Content, Usage: usage}
	if msg.Content == "" && len(m.MultiContent) > 0 {
		var b strings.Builder
		for _, part := range m.MultiContent {
			b.WriteString(part.Text)
		}
		msg.Content = b.String()
	}
	var rawMsg struct {
		ToolCalls []json.RawMessage `json:"tool_calls"`
	}
	if len(w.Choices) > 0 {
		msg.Extra = fieldsOf(w.Choices[0].Message, responseOnly...)
		json.Unmarshal(w.Choices[0].Message, &rawMsg)
	}
	for i, tc := range m.ToolCalls {
		id := tc.ID
		if id == "" {
			// Some compatible servers omit ids; the tool result must still
			// be matched to its call.
			id = "call_" + rand.Text()
		}
		call := agent.ToolCall{ID: id, Name: tc.Function.Name, Arguments: tc.Function.Arguments}
		if i < len(rawMsg.ToolCalls) {
			call.Extra = fieldsOf(rawMsg.ToolCalls[i], "id", "type", "function", "index")
		}
		msg.ToolCalls = append(msg.ToolCalls, call)
	}
	return agent.Response{Message: msg, Usage: usage}, nil
}
