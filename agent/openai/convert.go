package openai

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"math"
	"strings"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/nanobot-go/nanobot/agent"
)

// emptyObjectSchema is sent for tools without parameters: the API rejects a
// null schema.
var emptyObjectSchema = json.RawMessage(`{"type":"object","properties":{}}`)

// errNoChoices is returned when a 200 reply holds no message at all.
var errNoChoices = errors.New("the model service returned no answer")

// chatRequest maps an agent request onto the wire request.
func (p *Provider) chatRequest(req agent.Request) goopenai.ChatCompletionRequest {
	out := goopenai.ChatCompletionRequest{
		Model:       p.cfg.Model,
		Messages:    make([]goopenai.ChatCompletionMessage, 0, len(req.Messages)),
		MaxTokens:   p.cfg.MaxTokens,
		Temperature: p.cfg.Temperature,
	}
	if out.Temperature == 0 {
		// go-openai omits a zero temperature, which servers read as their
		// default (usually 1); the smallest positive value means "0".
		out.Temperature = math.SmallestNonzeroFloat32
	}
	for _, m := range req.Messages {
		out.Messages = append(out.Messages, p.chatMessage(m))
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
	if req.ForceTool != "" {
		out.ToolChoice = goopenai.ToolChoice{
			Type:     goopenai.ToolTypeFunction,
			Function: goopenai.ToolFunction{Name: req.ForceTool},
		}
	}
	if goopenai.NewReasoningValidator().Validate(out) != nil {
		// Reasoning models (o1, o3, gpt-5, ...) want max_completion_tokens
		// and no sampling temperature.
		out.MaxCompletionTokens, out.MaxTokens = out.MaxTokens, 0
		out.Temperature = 0
	}
	return out
}

func (p *Provider) chatMessage(m agent.Message) goopenai.ChatCompletionMessage {
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
				ID:       tc.ID,
				Type:     goopenai.ToolTypeFunction,
				Function: goopenai.FunctionCall{Name: tc.Name, Arguments: tc.Arguments},
			})
		}
		if len(out.ToolCalls) > 0 {
			return out
		}
	case agent.RoleTool:
		out.ToolCallID = m.ToolCallID
		out.Name = m.Name
	}
	if out.Content == "" {
		// go-openai drops an empty content field, and servers reject user,
		// tool and plain assistant messages without one.
		out.Content = "(empty)"
	}
	return out
}

// response maps the wire reply back onto the agent's types.
func response(r goopenai.ChatCompletionResponse) (agent.Response, error) {
	if len(r.Choices) == 0 {
		return agent.Response{}, errNoChoices
	}
	m := r.Choices[0].Message
	usage := agent.Usage{PromptTokens: r.Usage.PromptTokens, CompletionTokens: r.Usage.CompletionTokens}
	msg := agent.Message{Role: agent.RoleAssistant, Content: m.Content, Usage: usage}
	if msg.Content == "" && len(m.MultiContent) > 0 {
		var b strings.Builder
		for _, part := range m.MultiContent {
			b.WriteString(part.Text)
		}
		msg.Content = b.String()
	}
	for _, tc := range m.ToolCalls {
		id := tc.ID
		if id == "" {
			// Some compatible servers omit ids; the tool result must still
			// be matched to its call.
			id = "call_" + rand.Text()
		}
		msg.ToolCalls = append(msg.ToolCalls, agent.ToolCall{
			ID: id, Name: tc.Function.Name, Arguments: tc.Function.Arguments,
		})
	}
	return agent.Response{Message: msg, Usage: usage}, nil
}
