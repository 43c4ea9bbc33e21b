package agent

import (
	"strings"
	"time"
)

// stampLayout is how a user message tells when it was sent.
const stampLayout = "Monday, 2006-01-02 15:04 MST"

// stamped returns msgs with the time each user message was sent put in
// front of its text, in loc. The time is part of the message rather than
// of the system prompt, so that the prompt and every earlier message stay
// byte for byte what the provider saw before and its prompt cache can
// serve them. The messages are copies; the session keeps the text.
func stamped(msgs []Message, loc *time.Location) []Message {
	out := make([]Message, len(msgs))
	for i, m := range msgs {
		if m.Role == RoleUser && !m.CreatedAt.IsZero() {
			m.Content = "[" + m.CreatedAt.In(loc).Format(stampLayout) + "]\n" + m.Content
		}
		out[i] = m
	}
	return out
}

// endedEarly stands, in a request, for the answer a turn never gave: it
// ended after tool results (stopped, interrupted, the model unreachable),
// and the next user message would otherwise follow a tool message, which
// some providers refuse.
const endedEarly = "(This turn ended before an answer: it was stopped or interrupted.)"

// readingSteer stands, in a request, between a round's tool results and
// the words the user wrote while the round ran (Steered).
const readingSteer = "(Before going on, I read what you wrote in the meantime.)"

// stoppedEarly stands, in the closing request of a turn that is being
// stopped, between the last tool results and the request to sum up.
const stoppedEarly = "(I stop here, before answering.)"

// inOrder returns msgs in an order every provider accepts: a tool result
// is followed by another tool result or an assistant message, never by a
// user message. The reflection prompt of sessions recorded before it was
// delivered with the tool results is merged into the result before it; a
// user message that starts a turn after an unanswered tool round gets
// endedEarly before it, and words written during a turn readingSteer.
// msgs is not modified.
func inOrder(msgs []Message, reflection string) []Message {
	var out []Message
	for i, m := range msgs {
		if m.Role != RoleUser || i == 0 || msgs[i-1].Role != RoleTool {
			if out != nil {
				out = append(out, m)
			}
			continue
		}
		if out == nil {
			out = append(make([]Message, 0, len(msgs)+1), msgs[:i]...)
		}
		if reflection != "" && strings.TrimSpace(m.Content) == reflection && i+1 < len(msgs) && msgs[i+1].Role == RoleAssistant {
			last := &out[len(out)-1]
			last.Content = withReflection(last.Content, m.Content)
			continue
		}
		note := endedEarly
		if Steered(m) {
			note = readingSteer
		}
		out = append(out, Message{Role: RoleAssistant, Content: note, CreatedAt: m.CreatedAt}, m)
	}
	if out == nil {
		return msgs
	}
	return out
}

// withReflection appends the reflection prompt to the last tool result of
// a round: the model reads it after the results, and no provider refuses
// it there.
func withReflection(result, reflection string) string {
	return result + "\n\n" + reflection
}
