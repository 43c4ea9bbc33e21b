package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// called is the outcome of one tool call of a round.
type called struct {
	out string
	ev  ToolEvent
}

// runRound runs the calls of one reply and returns their outcomes in the
// order of the calls. Consecutive read-only calls run in parallel; a call
// with side effects (or of a tool that does not say) runs alone, after
// every call before it has returned, and before any call after it starts.
// So a write never races a read of the same reply, and the calls with
// side effects keep the order the model gave them.
func (l *Loop) runRound(ctx context.Context, s setup, t Turn, round int, calls []ToolCall, prog *progress) []called {
	out := make([]called, len(calls))
	run := func(i int) {
		call := calls[i]
		pe := ProgressEvent{Kind: ProgressTool, Round: round, Call: i, Calls: len(calls),
			ID: call.ID, Tool: call.Name, Args: l.redact(call.Arguments)}
		prog.tell(pe)
		out[i].out, out[i].ev = l.runTool(ctx, s, t, call)
		pe.Kind, pe.Duration, pe.Failed = ProgressToolDone, out[i].ev.Duration, out[i].ev.Failed
		prog.tell(pe)
	}
	for i := 0; i < len(calls); {
		j := i
		for j < len(calls) && readOnly(s, calls[j]) {
			j++
		}
		if j-i < 2 {
			run(i) // a call with side effects, or a read alone
			i++
			continue
		}
		var wg sync.WaitGroup
		for k := i; k < j; k++ {
			wg.Go(func() { run(k) })
		}
		wg.Wait()
		i = j
	}
	return out
}

// readOnly reports whether call is of a tool that says it changes nothing.
func readOnly(s setup, call ToolCall) bool {
	ro, ok := s.tools[call.Name].(ReadOnlyTool)
	return ok && ro.ReadOnly()
}

// runTool runs one call and turns every failure into a result the model
// can read. It never panics.
func (l *Loop) runTool(ctx context.Context, s setup, t Turn, call ToolCall) (out string, event ToolEvent) {
	ev := &ToolEvent{Turn: t, Tool: call.Name, Args: l.redact(call.Arguments)}
	start := time.Now()
	defer func() {
		if p := recover(); p != nil {
			out = fmt.Sprintf("Error: tool %s crashed: %v", call.Name, p)
			l.logger.Error("tool panic", "turn_id", t.ID, "tool", call.Name, "panic", fmt.Sprint(p))
		}
		ev.Duration = time.Since(start)
		ev.Result = out
		ev.Failed = strings.HasPrefix(out, "Error:")
		if l.hooks.ToolCall != nil {
			l.hooks.ToolCall(ctx, *ev)
		}
		event = *ev
	}()

	tool, ok := s.tools[call.Name]
	if !ok {
		ev.Unknown = true
		names := make([]string, 0, len(s.tools))
		for n := range s.tools {
			names = append(names, n)
		}
		sort.Strings(names)
		return fmt.Sprintf("Error: unknown tool %q; available tools: %s", call.Name, strings.Join(names, ", ")), event
	}
	args := json.RawMessage(call.Arguments)
	if strings.TrimSpace(call.Arguments) == "" {
		args = json.RawMessage("{}")
	}
	if len(call.Arguments) > MaxArgsBytes && wasCut(call.Arguments) {
		return fmt.Sprintf("Error: the arguments are larger than the limit of %d KB and were not used; send smaller arguments (write large content in parts)", MaxArgsBytes>>10), event
	}
	if !json.Valid(args) {
		return "Error: the arguments are not valid JSON; send a JSON object that matches the tool's schema", event
	}
	if ctx.Err() != nil {
		ev.Verdict, ev.Reason = "unknown", "not run: the turn had ended"
		return "Error: not run: the turn was stopped or ran out of time before this call started.", event
	}
	r, ok := l.callTool(ctx, s, t, tool, *ev, args)
	if !ok {
		ev.Verdict, ev.Reason = "unknown", "left running: the turn ended before it returned"
		return "Error: the turn was stopped or ran out of time while this call was running, and it did not return; it may or may not have done its work, and its output is lost. Check before running it again.", event
	}
	*ev = r.ev
	if r.panicked != nil {
		panic(r.panicked) // reported by the recover above, as one on this goroutine
	}
	if r.err != nil {
		return Truncate(l.redact("Error: "+r.err.Error()), s.cfg.MaxToolOutput), event
	}
	return Truncate(l.redact(r.text), s.cfg.MaxToolOutput), event
}

// loopDetector notices the same call with the same result three times in
// a row.
type loopDetector struct {
	last  string
	count int
}

func (d *loopDetector) add(c ToolCall, result string) {
	key := c.Name + "\x00" + c.Arguments + "\x00" + result
	if key == d.last {
		d.count++
		return
	}
	d.last, d.count = key, 1
}

func (d *loopDetector) looping() bool { return d.count >= 3 }
