package agent

// keepCallsTogether moves assistant answers recorded between an assistant's
// tool calls and their results after those results. A session can get such
// an answer from outside its turn (a scheduled job's message delivered into
// the chat's conversation while a turn of that chat ran tools); the model
// must see every call followed by its results. When calls at the end have
// no results yet (a turn a crash interrupted), the answers go before them,
// so the calls stay last for Resume to close.
func keepCallsTogether(msgs []Message) []Message {
	var (
		out     []Message
		held    []Message
		pending = map[string]bool{}
		open    = -1 // index in out of the assistant message whose calls are pending
		moved   = false
	)
	flush := func() {
		out = append(out, held...)
		held = nil
		clear(pending)
		open = -1
	}
	for _, m := range msgs {
		switch {
		case m.Role == RoleAssistant && len(m.ToolCalls) > 0:
			flush()
			out = append(out, m)
			open = len(out) - 1
			for _, c := range m.ToolCalls {
				pending[c.ID] = true
			}
		case m.Role == RoleTool && len(pending) > 0:
			out = append(out, m)
			delete(pending, m.ToolCallID)
			if len(pending) == 0 {
				flush()
			}
		case m.Role == RoleAssistant && len(pending) > 0:
			held = append(held, m)
			moved = true
		default:
			flush()
			out = append(out, m)
		}
	}
	if !moved {
		return msgs
	}
	if open >= 0 && len(held) > 0 {
		tail := append(append([]Message(nil), held...), out[open:]...)
		return append(out[:open], tail...)
	}
	return append(out, held...)
}
