package agent

import (
	"strings"
	"testing"
)

func TestKeepCallsTogether(t *testing.T) {
	call := func(ids ...string) Message {
		m := Message{Role: RoleAssistant, Content: "calls " + strings.Join(ids, ",")}
		for _, id := range ids {
			m.ToolCalls = append(m.ToolCalls, ToolCall{ID: id, Name: "exec"})
		}
		return m
	}
	result := func(id string) Message { return Message{Role: RoleTool, ToolCallID: id, Content: "result " + id} }
	user := func(s string) Message { return Message{Role: RoleUser, Content: s} }
	answer := func(s string) Message { return Message{Role: RoleAssistant, Content: s} }
	show := func(msgs []Message) string {
		parts := make([]string, len(msgs))
		for i, m := range msgs {
			parts[i] = m.Content
		}
		return strings.Join(parts, " | ")
	}
	tests := []struct {
		name string
		in   []Message
		want string
	}{
		{name: "in order", in: []Message{user("q"), call("a"), result("a"), answer("done")},
			want: "q | calls a | result a | done"},
		{name: "answer between call and result", in: []Message{user("q"), call("a", "b"), result("a"), answer("reminder"), result("b"), answer("done")},
			want: "q | calls a,b | result a | result b | reminder | done"},
		{name: "calls without results stay last", in: []Message{user("q"), call("a"), answer("reminder")},
			want: "q | reminder | calls a"},
		{name: "a user message ends the wait", in: []Message{user("q"), call("a"), user("next"), answer("reply")},
			want: "q | calls a | next | reply"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := show(keepCallsTogether(tt.in)); got != tt.want {
				t.Errorf("keepCallsTogether = %s\nwant %s", got, tt.want)
			}
		})
	}
}
