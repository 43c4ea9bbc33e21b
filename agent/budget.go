package agent

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"
)

// Token counts are estimated: about four characters a token for text, a
// fixed cost per message and per image. Good enough to stay inside a
// budget with a margin; no tokenizer is shipped.
const (
	perMessageTokens = 4
	perImageTokens   = 800
)

// EstimateTokens returns the estimated size of a message. The provider's
// own fields (reasoning, signatures) count as well: they are sent back
// with turns that made tool calls.
func EstimateTokens(m Message) int {
	n := perMessageTokens + textTokens(m.Content) + len(m.Images)*perImageTokens + len(m.Extra)/4
	for _, c := range m.ToolCalls {
		n += textTokens(c.Name) + textTokens(c.Arguments) + len(c.Extra)/4 + perMessageTokens
	}
	return n
}

func textTokens(s string) int { return (utf8.RuneCountInString(s) + 3) / 4 }

func specsTokens(specs []ToolSpec) int {
	n := 0
	for _, s := range specs {
		n += textTokens(s.Name) + textTokens(s.Description) + len(s.Parameters)/4 + perMessageTokens
	}
	return n
}

// fit builds the messages of a request: the system prompt, the newest
// history that fits the budget and the turn's own messages (msgs[turn:]),
// which are never left out. History is cut only where a user message
// starts, so a tool call is never separated from its results, and in
// steps (see stepStart), so that consecutive requests share their prefix.
// When the turn alone exceeds the budget its largest tool results are cut.
func fit(system string, msgs []Message, turn int, specs []ToolSpec, cfg Config) []Message {
	sys := Message{Role: RoleSystem, Content: system}
	avail := cfg.ContextTokens - cfg.ReserveTokens - EstimateTokens(sys) - specsTokens(specs)
	turn = min(max(turn, 0), len(msgs))
	turnTokens := 0
	for _, m := range msgs[turn:] {
		turnTokens += EstimateTokens(m)
	}
	start := stepStart(msgs[:turn], avail-turnTokens, avail/2)
	out := make([]Message, 0, len(msgs)-start+1)
	out = append(out, sys)
	out = append(out, msgs[start:]...)
	if turnTokens > avail {
		shrink(out[1+turn-start:], avail)
	}
	return out
}

// stepStart chooses where the history sent with a request starts: all of
// it when it fits in avail tokens, else the earliest of its anchors from
// which the rest fits (len(history) when none does). The anchors are the
// user messages at which the history's running token count first reaches
// each multiple of step, counted from the history's first message, so they
// stay where they are as the conversation grows: the start stays put,
// turn after turn, and moves on by about step tokens at once when it must.
func stepStart(history []Message, avail, step int) int {
	total := 0
	for _, m := range history {
		total += EstimateTokens(m)
	}
	if total <= avail {
		return 0
	}
	step = max(step, 1)
	next, cum := 0, 0 // next: the running count at which the next anchor lies
	for i, m := range history {
		if cum >= next && m.Role == RoleUser {
			if total-cum <= avail {
				return i
			}
			next = (cum/step + 1) * step
		}
		cum += EstimateTokens(m)
	}
	return len(history)
}

func lastUser(msgs []Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == RoleUser && !Steered(msgs[i]) {
			return i
		}
	}
	return len(msgs)
}

// shrink cuts the largest tool results of a turn that alone exceeds the
// budget, so the request still fits. The messages are copies; the session
// keeps the full results.
func shrink(msgs []Message, avail int) {
	total := 0
	for _, m := range msgs {
		total += EstimateTokens(m)
	}
	for total > avail {
		big := -1
		for i, m := range msgs {
			if m.Role == RoleTool && (big < 0 || len(m.Content) > len(msgs[big].Content)) {
				big = i
			}
		}
		if big < 0 || utf8.RuneCountInString(msgs[big].Content) < 400 {
			return
		}
		before := EstimateTokens(msgs[big])
		keep := utf8.RuneCountInString(msgs[big].Content) / 2
		msgs[big].Content = Truncate(msgs[big].Content, keep)
		total -= before - EstimateTokens(msgs[big])
	}
}

// ContextUsage estimates how many tokens the next request of the turn's
// session would use, against the configured budget.
func (l *Loop) ContextUsage(ctx context.Context, t Turn) (used, limit int, err error) {
	s := l.current()
	msgs, err := l.history.Recent(ctx, t.Session, s.cfg.HistoryLimit)
	if err != nil {
		return 0, 0, fmt.Errorf("read session: %w", err)
	}
	system, err := l.systemPrompt(ctx, s, t)
	if err != nil {
		return 0, 0, err
	}
	used = specsTokens(s.specs)
	msgs = stamped(inOrder(msgs, s.cfg.ReflectionPrompt), l.now().Location())
	for _, m := range fit(system, msgs, len(msgs), s.specs, s.cfg) {
		used += EstimateTokens(m)
	}
	return used, s.cfg.ContextTokens, nil
}

// smallerWindow is the budget to try after the endpoint refused req as too
// large: what the endpoint named as its window with a margin for the
// estimate, else half of what was sent.
func smallerWindow(err error, req Request, cfg Config) int {
	const floor = 1000
	var lim interface{ ContextLimit() int }
	if errors.As(err, &lim) && lim.ContextLimit() > 0 {
		return max(floor, min(cfg.ContextTokens-1, lim.ContextLimit()*3/4))
	}
	sent := specsTokens(req.Tools)
	for _, m := range req.Messages {
		sent += EstimateTokens(m)
	}
	return max(floor, min(cfg.ContextTokens, sent)/2)
}
