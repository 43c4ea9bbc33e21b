//go:build bench

// Command openai is the baseline plus github.com/sashabaranov/go-openai as
// agent/openai uses it: a client on a configured base URL and HTTP client,
// non-streaming chat completions with tools, forced tool choice, image
// parts and the reasoning-model check, transcriptions, and its error types.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/nanobot-go/nanobot/bench/depcost/internal/base"
)

func main() {
	ctx, _, stop := base.Run()
	defer stop()
	cc := goopenai.DefaultConfig(os.Getenv("OPENAI_API_KEY"))
	cc.BaseURL = os.Getenv("BASE_URL")
	cc.HTTPClient = &http.Client{Transport: http.DefaultTransport}
	client := goopenai.NewClientWithConfig(cc)

	req := goopenai.ChatCompletionRequest{
		Model:     "gpt-4o-mini",
		MaxTokens: 4096,
		Messages: []goopenai.ChatCompletionMessage{
			{Role: goopenai.ChatMessageRoleSystem, Content: "You are nanobot."},
			{Role: goopenai.ChatMessageRoleUser, MultiContent: []goopenai.ChatMessagePart{
				{Type: goopenai.ChatMessagePartTypeText, Text: "hello"},
				{Type: goopenai.ChatMessagePartTypeImageURL, ImageURL: &goopenai.ChatMessageImageURL{URL: "data:image/png;base64,"}},
			}},
			{Role: goopenai.ChatMessageRoleTool, Content: "a.txt", ToolCallID: "c1", Name: "list_dir"},
		},
		Tools: []goopenai.Tool{{Type: goopenai.ToolTypeFunction, Function: &goopenai.FunctionDefinition{
			Name: "list_dir", Description: "List a directory.", Parameters: json.RawMessage(`{"type":"object"}`),
		}}},
	}
	if len(os.Args) > 2 {
		req.ToolChoice = goopenai.ToolChoice{Type: goopenai.ToolTypeFunction, Function: goopenai.ToolFunction{Name: "save_memory"}}
	}
	if goopenai.NewReasoningValidator().Validate(req) != nil {
		req.MaxCompletionTokens, req.MaxTokens = req.MaxTokens, 0
	}
	resp, err := client.CreateChatCompletion(ctx, req)
	report(err)
	for _, c := range resp.Choices {
		for _, tc := range c.Message.ToolCalls {
			fmt.Println(tc.ID, tc.Function.Name, tc.Function.Arguments, c.FinishReason == goopenai.FinishReasonToolCalls)
		}
		fmt.Println(c.Message.Content, resp.Usage.PromptTokens, resp.Usage.CompletionTokens)
	}
	tr, err := client.CreateTranscription(ctx, goopenai.AudioRequest{
		Model: "whisper-1", FilePath: "voice.ogg", Reader: bytes.NewReader(nil), Format: goopenai.AudioResponseFormatText,
	})
	report(err)
	fmt.Println(tr.Text)
}

func report(err error) {
	var apiErr *goopenai.APIError
	var reqErr *goopenai.RequestError
	switch {
	case errors.As(err, &apiErr):
		fmt.Println(apiErr.HTTPStatusCode, apiErr.Message)
	case errors.As(err, &reqErr):
		fmt.Println(reqErr.HTTPStatusCode, reqErr.Err)
	case err != nil:
		fmt.Println(err)
	}
}
