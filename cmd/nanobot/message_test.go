package main

import (
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/openai/openaitest"
	"github.com/nanobot-go/nanobot/schedule/scheduletest"
)

func messageCall(id, args string) openaitest.Reply {
	return openaitest.Reply{ToolCalls: []agent.ToolCall{{ID: id, Name: "message", Arguments: args}}}
}

// TestMessageToolAndDuplicateAnswer: message delivers through the outbox at
// once, and a final answer that repeats it is not sent again.
func TestMessageToolAndDuplicateAnswer(t *testing.T) {
	h := startGatewayAt(t, scheduletest.New(cronStart), map[string]string{"channels.telegram.allow_from": "[111, 333]"})
	release := make(chan struct{})
	h.model.Script(
		messageCall("m1", `{"content":"Working on it, this takes a minute."}`),
		openaitest.Reply{Hold: release, ToolCalls: []agent.ToolCall{{ID: "m2", Name: "message", Arguments: `{"content":"The answer is 42."}`}}},
		openaitest.Reply{Text: "The answer is 42."},
	)
	h.tg.SendText(owner, owner, "ada", "what is the answer?")
	// The progress message arrives while the turn still runs.
	waitSentContaining(t, h.tg, owner, "Working on it")
	close(release)
	waitSentContaining(t, h.tg, owner, "The answer is 42.")

	// A later answer shows everything of the turn was delivered.
	h.model.Script(openaitest.Reply{Text: "You're welcome."})
	h.askFor(owner, "thanks", "You're welcome.")
	if got := sentTo(h.tg, owner, "The answer is 42."); got != 1 {
		t.Errorf("the answer was sent %d times, want once: %+v", got, h.tg.Sent())
	}
	if got := sentTo(h.tg, owner, "Working on it"); got != 1 {
		t.Errorf("the progress message was sent %d times", got)
	}

	// The owner may write to another allowed user's chat; that user may not
	// write back through the tool.
	h.model.Script(messageCall("o", `{"content":"Dinner at 8!","chat_id":333}`), openaitest.Reply{Text: "Told them."})
	h.askFor(owner, "tell 333 dinner is at 8", "Told them.")
	waitSentContaining(t, h.tg, 333, "Dinner at 8!")
	h.model.Script(messageCall("g", `{"content":"hi boss","chat_id":111}`), openaitest.Reply{Text: "I can't."})
	h.askFor(333, "message the owner", "I can't.")
	reqs := h.model.Requests()
	if got := resultIn(reqs[len(reqs)-1], "g"); !strings.Contains(got, "only the owner may send to another chat") {
		t.Errorf("a guest's message to another chat: %q", got)
	}
	if got := sentTo(h.tg, owner, "hi boss"); got != 0 {
		t.Error("a guest reached the owner's chat through the message tool")
	}
}
