package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits on what the model writes into a tool call. Everything the model
// asks for is recorded (the session, the audit trail), logged and counted
// before any tool judges it, so a hostile reply must not be able to make
// those records large: a call is cut to these sizes as soon as it arrives.
const (
	// MaxCallsPerReply is how many tool calls of one reply are kept; the
	// rest are dropped before anything records them.
	MaxCallsPerReply = 64
	// MaxToolNameBytes is how much of a tool name that no tool has is kept.
	MaxToolNameBytes = 64
	// MaxCallIDBytes is how much of a call id is kept.
	MaxCallIDBytes = 128
	// MaxUnknownArgsBytes is how much of the arguments of a call to an
	// unknown tool is kept: nothing runs them, the head shows what the
	// model meant.
	MaxUnknownArgsBytes = 1 << 10
	// MaxArgsBytes is the largest arguments a known tool is given; larger
	// ones are cut and the call fails.
	MaxArgsBytes = 256 << 10

	// maxModelBytes is how much of the model name an answer reports is
	// kept.
	maxModelBytes = 128
)

// cutMark ends a value that boundCalls cut; a cut argument text is never
// valid JSON, so such a call cannot run.
const cutMark = " bytes cut]"

// boundCalls cuts the calls of a model reply to the limits above. Names of
// known tools and arguments within the limits are left exactly as written.
func boundCalls(calls []ToolCall, known map[string]Tool) ([]ToolCall, int) {
	dropped := 0
	if len(calls) > MaxCallsPerReply {
		dropped = len(calls) - MaxCallsPerReply
		calls = calls[:MaxCallsPerReply]
	}
	out := make([]ToolCall, len(calls))
	for i, c := range calls {
		c.ID = cutBytes(c.ID, MaxCallIDBytes)
		limit := MaxArgsBytes
		if _, ok := known[c.Name]; !ok {
			c.Name = cutBytes(c.Name, MaxToolNameBytes)
			limit = MaxUnknownArgsBytes
		}
		c.Arguments = cutBytes(c.Arguments, limit)
		out[i] = c
	}
	return out, dropped
}

// cutBytes keeps at most n bytes of s (whole characters), followed by a
// note of how much was cut.
func cutBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	keep := n
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	return fmt.Sprintf("%s…[%d%s", s[:keep], len(s)-keep, cutMark)
}

// wasCut reports whether boundCalls cut s.
func wasCut(s string) bool { return strings.HasSuffix(s, cutMark) }

// toolResult is what one tool call returned, with its own audit event.
type toolResult struct {
	text     string
	err      error
	panicked any
	ev       ToolEvent
}

// callTool runs tool on a goroutine of its own, so that a tool that ignores
// ctx and blocks cannot hold the turn: once ctx ends the loop waits
// ToolStopGrace more, then goes on without it and reports ok false. The
// call works on its own copy of the audit event, handed back only when it
// returns in time, so a call left behind never writes into the turn.
func (l *Loop) callTool(ctx context.Context, s setup, t Turn, tool Tool, ev ToolEvent, args json.RawMessage) (toolResult, bool) {
	done := make(chan toolResult, 1) // never blocks a late return
	start := time.Now()
	go func() {
		r := toolResult{ev: ev}
		defer func() {
			r.panicked = recover()
			done <- r
		}()
		r.text, r.err = tool.Run(WithEvent(WithTurn(ctx, t), &r.ev), args)
	}()
	select {
	case r := <-done:
		return r, true
	case <-ctx.Done():
	}
	grace := time.NewTimer(s.cfg.ToolStopGrace)
	defer grace.Stop()
	select {
	case r := <-done:
		return r, true
	case <-grace.C:
		l.logger.Warn("tool left running after the turn ended", "turn_id", t.ID, "tool", ev.Tool, "dur", time.Since(start))
		return toolResult{}, false
	}
}
