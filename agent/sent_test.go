package agent_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/nanobot-go/nanobot/agent"
)

// sendTool delivers its text to the turn's chat, as the message tool does.
type sendTool struct{}

func (sendTool) Spec() agent.ToolSpec {
	return agent.ToolSpec{Name: "send", Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)}
}

func (sendTool) Run(ctx context.Context, args json.RawMessage) (string, error) {
	var p struct{ Text string }
	if err := json.Unmarshal(args, &p); err != nil {
		return "", err
	}
	t, _ := agent.TurnFrom(ctx)
	agent.NoteSent(ctx, t.ChatID, p.Text)
	return "sent", nil
}

// TestAnswerRepeatingASentMessageIsQuiet: the last record of a turn whose
// answer repeats (or is empty after) what a tool sent is marked quiet.
func TestAnswerRepeatingASentMessageIsQuiet(t *testing.T) {
	send := func(text string) agent.Response {
		args, _ := json.Marshal(map[string]string{"text": text})
		return calls(agent.ToolCall{ID: "s", Name: "send", Arguments: string(args)})
	}
	tests := []struct {
		name   string
		sent   string
		answer string
		quiet  bool
	}{
		{"same text", "The build is green.", "The build is green.", true},
		{"same text, other spacing", "The build\nis green.", " The build is green. ", true},
		{"part of what was sent", "Step 1 done. The build is green.", "The build is green.", true},
		{"empty after a send", "The build is green.", "", true},
		{"something new", "Working on it.", "The build is green.", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &script{replies: []agent.Response{send(tt.sent), text(tt.answer)}}
			h := newHistory()
			res, err := newLoop(p, h, sendTool{}).Run(t.Context(), turn, agent.Message{Content: "build it"})
			if err != nil {
				t.Fatal(err)
			}
			recs := h.recs()
			last := recs[len(recs)-1]
			if !last.Last || last.Quiet != tt.quiet || res.Quiet != tt.quiet {
				t.Errorf("last record quiet %v (result %v), want %v", last.Quiet, res.Quiet, tt.quiet)
			}
		})
	}
	// Without any send, an empty answer is not quiet: the turn's Fallback
	// may stand in for it.
	p := &script{replies: []agent.Response{text("")}}
	h := newHistory()
	if res, _ := newLoop(p, h).Run(t.Context(), turn, agent.Message{Content: "hi"}); res.Quiet {
		t.Error("an empty answer without any send is quiet")
	}
}
