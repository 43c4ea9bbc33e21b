package agent

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

const reflect = "Reflect on the results and decide next steps."

// show renders messages compactly: "u:hi a:ok c:1 t:1".
func show(msgs []Message) string {
	parts := make([]string, len(msgs))
	for i, m := range msgs {
		switch {
		case m.Role == RoleAssistant && len(m.ToolCalls) > 0:
			parts[i] = "c:" + m.ToolCalls[0].ID
		case m.Role == RoleTool:
			parts[i] = "t:" + m.Content
		default:
			parts[i] = string(m.Role)[:1] + ":" + m.Content
		}
	}
	return strings.Join(parts, " ")
}

func TestInOrder(t *testing.T) {
	u := func(s string) Message { return Message{Role: RoleUser, Content: s} }
	a := func(s string) Message { return Message{Role: RoleAssistant, Content: s} }
	c := func(id string) Message {
		return Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: id, Name: "exec"}}}
	}
	r := func(s string) Message { return Message{Role: RoleTool, ToolCallID: s, Content: s} }
	tests := []struct {
		name string
		in   []Message
		want string
	}{
		{"plain", []Message{u("hi"), a("ok"), u("more")}, "u:hi a:ok u:more"},
		{"round with its reflection inside", []Message{u("go"), c("1"), r("x\n\n" + reflect), a("done")},
			"u:go c:1 t:x\n\n" + reflect + " a:done"},
		{"recorded reflection joins the result", []Message{u("go"), c("1"), r("x"), u(reflect), a("done")},
			"u:go c:1 t:x\n\n" + reflect + " a:done"},
		{"turn that ended after its tools", []Message{u("go"), c("1"), r("x"), u("next")},
			"u:go c:1 t:x a:" + endedEarly + " u:next"},
		{"the reflection text from the user is kept as theirs", []Message{u("go"), c("1"), r("x"), u(reflect)},
			"u:go c:1 t:x a:" + endedEarly + " u:" + reflect},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := show(tt.in)
			got := inOrder(tt.in, reflect)
			if show(got) != tt.want {
				t.Errorf("inOrder =\n%s\nwant\n%s", show(got), tt.want)
			}
			if show(tt.in) != before {
				t.Errorf("inOrder changed its input: %s", show(tt.in))
			}
			for i := 1; i < len(got); i++ {
				if got[i].Role == RoleUser && got[i-1].Role == RoleTool {
					t.Errorf("user message after a tool result at %d: %s", i, show(got))
				}
			}
		})
	}
}

func TestStamped(t *testing.T) {
	at := time.Date(2026, 12, 3, 8, 40, 0, 0, time.UTC)
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skipf("no time zone data: %v", err)
	}
	in := []Message{
		{Role: RoleUser, Content: "hi", CreatedAt: at},
		{Role: RoleAssistant, Content: "ok", CreatedAt: at},
		{Role: RoleUser, Content: "no time"},
	}
	got := stamped(in, berlin)
	if want := "[Thursday, 2026-12-03 09:40 CET]\nhi"; got[0].Content != want {
		t.Errorf("user message = %q, want %q", got[0].Content, want)
	}
	if got[1].Content != "ok" || got[2].Content != "no time" {
		t.Errorf("only user messages with a time are stamped: %q, %q", got[1].Content, got[2].Content)
	}
	if in[0].Content != "hi" {
		t.Errorf("stamped changed its input: %q", in[0].Content)
	}
}

// The history sent starts at the same message turn after turn and moves
// on in steps, so that consecutive requests share their prefix; within
// the budget every time.
func TestStepStartMovesInSteps(t *testing.T) {
	var history []Message
	const avail = 400
	starts := map[int]bool{}
	moves := 0
	last := 0
	for turn := range 60 {
		history = append(history,
			Message{Role: RoleUser, Content: fmt.Sprintf("question %d %s", turn, strings.Repeat("x", 80))},
			Message{Role: RoleAssistant, Content: strings.Repeat("answer ", 20)})
		start := stepStart(history, avail, avail/2)
		if history[start].Role != RoleUser {
			t.Fatalf("turn %d: history starts at a %s message", turn, history[start].Role)
		}
		used := 0
		for _, m := range history[start:] {
			used += EstimateTokens(m)
		}
		if used > avail {
			t.Fatalf("turn %d: %d tokens sent, over %d", turn, used, avail)
		}
		if start < last {
			t.Fatalf("turn %d: start went back from %d to %d", turn, last, start)
		}
		if start != last {
			moves++
		}
		last = start
		starts[start] = true
	}
	// Sliding would move on every turn once the budget is full (about 55
	// of the 60 here); steps of half the budget move once per half budget
	// of conversation.
	total := 0
	for _, m := range history {
		total += EstimateTokens(m)
	}
	if bound := total/(avail/2) + 1; moves > bound {
		t.Errorf("the start moved on %d of 60 turns, want at most %d", moves, bound)
	}
	if moves < 2 {
		t.Errorf("the start moved %d times, want it to follow the conversation", moves)
	}
}

// A turn's own messages are never left out, however small the budget.
func TestFitKeepsTheTurn(t *testing.T) {
	system := strings.Repeat("system prompt ", 400) // about 1400 tokens
	msgs := []Message{
		{Role: RoleUser, Content: "earlier question"},
		{Role: RoleAssistant, Content: "earlier answer"},
		{Role: RoleUser, Content: "list the files"},
		{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "1", Name: "list_dir", Arguments: "{}"}}},
		{Role: RoleTool, ToolCallID: "1", Content: "a.txt b.txt\n\n" + reflect},
	}
	got := fit(system, msgs, 2, nil, Config{ContextTokens: 1000})
	if want := "s:" + system + " u:list the files c:1 t:a.txt b.txt\n\n" + reflect; show(got) != want {
		t.Errorf("fit = %s", show(got)[len(system)+2:])
	}
	got = fit(system, msgs, 2, nil, Config{ContextTokens: 32000})
	if len(got) != 6 {
		t.Errorf("with room, fit = %s, want all history", show(got)[len(system)+2:])
	}
}

// The reasoning and signatures a provider wants back are part of what a
// request costs, so the budget counts them.
func TestEstimateCountsProviderFields(t *testing.T) {
	plain := Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c", Name: "list_dir", Arguments: `{}`}}}
	with := plain
	with.Extra = json.RawMessage(`{"reasoning_content":"` + strings.Repeat("think ", 200) + `"}`)
	with.ToolCalls = []ToolCall{{ID: "c", Name: "list_dir", Arguments: `{}`, Extra: json.RawMessage(`{"extra_content":{"google":{"thought_signature":"` + strings.Repeat("A", 400) + `"}}}`)}}
	if got, base := EstimateTokens(with), EstimateTokens(plain); got-base < 300 {
		t.Errorf("estimate %d with 1,600 bytes of provider fields, %d without; want them counted", got, base)
	}
}
