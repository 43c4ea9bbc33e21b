package cli_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/openai/openaitest"
	"github.com/nanobot-go/nanobot/channels/cli"
)

// noHistory records nothing.
type noHistory struct{}

func (noHistory) Recent(context.Context, string, int) ([]agent.Message, error) { return nil, nil }
func (noHistory) Commit(context.Context, agent.Turn, agent.Record) error       { return nil }

// fetch is a tool that fails for one URL.
type fetch struct{}

func (fetch) Spec() agent.ToolSpec {
	return agent.ToolSpec{Name: "web_fetch", Parameters: json.RawMessage(`{"type":"object","properties":{"url":{"type":"string"}}}`)}
}

func (fetch) Run(_ context.Context, args json.RawMessage) (string, error) {
	if strings.Contains(string(args), "down") {
		return "Error: host unreachable", nil
	}
	return "a page", nil
}

// toolTurn answers with a real loop over a model that fetches twice.
func toolTurn(t *testing.T) loopAnswerer {
	model := openaitest.NewScripted(
		openaitest.Reply{ToolCalls: []agent.ToolCall{{ID: "1", Name: "web_fetch", Arguments: `{"url":"https://example.com/page"}`}}},
		openaitest.Reply{ToolCalls: []agent.ToolCall{{ID: "2", Name: "web_fetch", Arguments: `{"url":"https://down.example/\u001b[31mred"}`}}},
		openaitest.Reply{Text: "fetched"},
	)
	return loopAnswerer{agent.New(model, noHistory{}, []agent.Tool{fetch{}}, agent.Config{Workspace: t.TempDir()})}
}

// A terminal shows a dimmed line per tool call; plain output keeps the
// answers alone.
func TestChatShowsToolCalls(t *testing.T) {
	tests := []struct {
		name  string
		chat  cli.Chat
		lines []string
	}{
		{"terminal", cli.Chat{Dim: true}, []string{
			"\x1b[2m  · web_fetch example.com/page (", "s)\x1b[0m",
			"\x1b[2m  · web_fetch down.example/[31mred (", "s, failed)\x1b[0m",
		}},
		{"no colours", cli.Chat{}, []string{"  · web_fetch example.com/page (", "  · web_fetch down.example/[31mred ("}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			c := tt.chat
			c.In, c.Out, c.Turns = strings.NewReader("fetch it\n"), &out, engine(t, toolTurn(t))
			if err := c.Run(t.Context()); err != nil {
				t.Fatal(err)
			}
			got := out.String()
			for _, want := range tt.lines {
				if !strings.Contains(got, want) {
					t.Errorf("output %q lacks %q", got, want)
				}
			}
			if strings.Count(got, "\x1b[") != 2*strings.Count(got, "\x1b[2m") || (!c.Dim && strings.Contains(got, "\x1b")) {
				t.Errorf("output %q holds escapes other than the dimming", got)
			}
			if !strings.Contains(got, "\nfetched\n") {
				t.Errorf("output %q lacks the answer", got)
			}
		})
	}

	var out strings.Builder
	c := &cli.Chat{In: strings.NewReader("fetch it\n"), Out: &out, Turns: engine(t, toolTurn(t)), Plain: true, Dim: true}
	if err := c.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "fetched\n" {
		t.Errorf("plain output = %q, want the answer alone", got)
	}
}
