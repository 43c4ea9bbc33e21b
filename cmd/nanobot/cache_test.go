package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/openai/openaitest"
	"github.com/nanobot-go/nanobot/schedule/scheduletest"
)

// cacheRun is what a chat of many turns sent to the model.
type cacheRun struct {
	first    int   // bytes of the body of the chat's first request
	inputs   []int // per chat request: bytes of its input (tool schemas and messages)
	prefixes []int // per chat request after the first: bytes of its input an earlier request began with
	turns    int
	full     int // index in prefixes of the first request sent after history was first left out
}

// steady is the share of each request's input an earlier request began
// with, from when the budget was first full.
func (r cacheRun) steady() []float64 {
	var out []float64
	for i, p := range r.prefixes[r.full:] {
		out = append(out, float64(p)/float64(r.inputs[r.full+i+1]))
	}
	return out
}

// cachedShare is the share of all input bytes from when the budget was
// first full that an earlier request began with: what a provider's cache
// serves, in bytes.
func (r cacheRun) cachedShare() float64 {
	var hit, all int
	for i, p := range r.prefixes[r.full:] {
		hit += p
		all += r.inputs[r.full+i+1]
	}
	return float64(hit) / float64(all)
}

// cacheInput is a request's input as a provider's prompt cache sees it:
// the tool schemas, then each message, byte for byte as sent. (Providers
// render the tools ahead of the conversation; the body's field order
// puts them after it.) ok is false for a request that is not one of the
// chat's own: a consolidation, which forces save_memory.
func cacheInput(body []byte) (input []byte, ok bool) {
	var r struct {
		Messages   []json.RawMessage `json:"messages"`
		Tools      json.RawMessage   `json:"tools"`
		ToolChoice json.RawMessage   `json:"tool_choice"`
	}
	if json.Unmarshal(body, &r) != nil || bytes.Contains(r.ToolChoice, []byte(`"save_memory"`)) {
		return nil, false
	}
	var b bytes.Buffer
	b.Write(r.Tools)
	for _, m := range r.Messages {
		b.WriteByte('\n')
		b.Write(m)
	}
	return b.Bytes(), true
}

func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// prefixes measures, for each input after the first, how many of its
// bytes an earlier one began with.
func prefixes(inputs [][]byte) []int {
	out := make([]int, 0, len(inputs))
	for i := 1; i < len(inputs); i++ {
		best := 0
		for _, earlier := range inputs[:i] {
			best = max(best, commonPrefix(inputs[i], earlier))
		}
		out = append(out, best)
	}
	return out
}

// runCachedChat drives turns messages through a real gateway, minutes
// apart on its clock, every third with a tool round that reads a file,
// with agent.context_tokens at budget, and returns what the model was
// sent.
func runCachedChat(t *testing.T, turns, budget int) cacheRun {
	t.Helper()
	clock := scheduletest.New(cronStart)
	h := startGatewayAt(t, clock, map[string]string{"agent.context_tokens": fmt.Sprint(budget)})
	writeWorkspaceFile(t, filepath.Join(h.dir, "workspace", "notes.md"), strings.Repeat("- a note on the garden, the boat and the week's plans\n", 25))
	memoryDoc := "- Ada lives in Lisbon.\n- Likes sailing and tea.\n"
	h.model.SetFunc(func(req goopenai.ChatCompletionRequest) openaitest.Reply {
		if tc, ok := req.ToolChoice.(map[string]any); ok && fmt.Sprint(tc["function"]) == "map[name:save_memory]" {
			args, _ := json.Marshal(map[string]string{"history_entry": "[2026-03-28 08:00] Talked about the garden and the boat.", "memory_update": memoryDoc})
			return openaitest.Reply{ToolCalls: []agent.ToolCall{{ID: "m", Name: "save_memory", Arguments: string(args)}}}
		}
		last := req.Messages[len(req.Messages)-1]
		if last.Role == "user" && strings.HasPrefix(said(last), "tool question") {
			return openaitest.Reply{ToolCalls: []agent.ToolCall{{ID: fmt.Sprintf("r%d", len(req.Messages)), Name: "read_file", Arguments: `{"path":"notes.md"}`}}}
		}
		return openaitest.Reply{Text: fmt.Sprintf("Here is a considered answer (%d): ", len(req.Messages)) + strings.Repeat("the plan holds, the boat is ready, the garden needs water; ", 8)}
	})
	for i := range turns {
		clock.Set(cronStart.Add(time.Duration(i) * 7 * time.Minute))
		kind := "plain question"
		if i%3 == 2 {
			kind = "tool question"
		}
		h.ask(fmt.Sprintf("%s %d: what should I do about the garden and the boat this week, given what you know?", kind, i))
	}

	var run cacheRun
	var inputs [][]byte
	run.turns = turns
	run.full = -1
	for _, body := range h.model.Bodies() {
		in, ok := cacheInput(body)
		if !ok {
			continue
		}
		if len(inputs) == 0 {
			run.first = len(body)
		}
		if run.full < 0 && len(inputs) > 0 && !bytes.Contains(body, []byte("plain question 0:")) {
			run.full = len(inputs) - 1
		}
		inputs = append(inputs, in)
		run.inputs = append(run.inputs, len(in))
	}
	run.prefixes = prefixes(inputs)
	return run
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// Consecutive requests of a chat share their prefix, so a provider's
// prompt cache serves most of each: the time goes with each user message
// and the history window moves in steps. Measured over turns minutes
// apart on the daemon's clock, with a budget small enough to fill.
func TestRequestsShareTheirPrefix(t *testing.T) {
	run := runCachedChat(t, 36, 6000)
	if run.full < 0 {
		t.Fatal("the history never outgrew the budget; the measurement needs it full")
	}
	// The first request of a fresh chat, with the built-in skills and
	// every built-in tool of the gateway, stays within 8 KB.
	if run.first > 8<<10 {
		t.Errorf("the chat's first request is %d bytes, over 8 KB", run.first)
	}
	steady := run.steady()
	if m := median(steady); m < 0.9 {
		t.Errorf("median prefix share %.1f%% with the budget full, want at least 90%%: %.2f", 100*m, steady)
	}
	t.Log(run.summary(6000))
}

func (r cacheRun) summary(budget int) string {
	steady := r.steady()
	met := 0
	for _, s := range steady {
		if s >= 0.9 {
			met++
		}
	}
	total := 0
	for _, n := range r.inputs {
		total += n
	}
	return fmt.Sprintf("cache budget=%d turns=%d requests=%d first_bytes=%d median_share=%.1f%% lowest_share=%.1f%% at_least_90=%d/%d cached_bytes=%.1f%% input_bytes_per_turn=%d",
		budget, r.turns, len(r.inputs), r.first, 100*median(steady), 100*slices.Min(steady), met, len(steady), 100*r.cachedShare(), total/r.turns)
}

// TestCacheFigures measures a 100-turn chat at two budgets for
// bench/run (section cache); it runs only when NANOBOT_CACHE_FIGURES is
// set, and prints one "cache ..." line a budget.
func TestCacheFigures(t *testing.T) {
	if os.Getenv("NANOBOT_CACHE_FIGURES") == "" {
		t.Skip("NANOBOT_CACHE_FIGURES is not set; bench/run sets it")
	}
	for _, budget := range []int{6000, 32000} {
		run := runCachedChat(t, 100, budget)
		if run.full < 0 {
			t.Logf("cache budget=%d: the history never outgrew the budget in %d turns", budget, run.turns)
			continue
		}
		t.Log(run.summary(budget))
	}
}

// With a budget the system prompt and the tool schemas nearly fill, the
// request after a tool call still holds the user's message, the call and
// its result: a turn's own messages are never left out.
func TestSmallBudgetKeepsTheTurn(t *testing.T) {
	h := startGateway(t, map[string]string{"agent.context_tokens": "2000"})
	writeWorkspaceFile(t, filepath.Join(h.dir, "workspace", "todo.md"), "water the plants\n")
	h.model.Script(
		openaitest.Reply{ToolCalls: []agent.ToolCall{{ID: "r1", Name: "read_file", Arguments: `{"path":"todo.md"}`}}},
		openaitest.Reply{Text: "You have to water the plants."},
	)
	if got := h.ask("What is on my todo list?"); got.Text != "You have to water the plants." {
		t.Fatalf("answer %q", got.Text)
	}
	req := h.model.Requests()[1]
	var user, call bool
	for _, m := range req.Messages {
		user = user || (m.Role == "user" && said(m) == "What is on my todo list?")
		call = call || (m.Role == "assistant" && len(m.ToolCalls) == 1 && m.ToolCalls[0].ID == "r1")
	}
	if !user || !call || !strings.Contains(resultIn(req, "r1"), "water the plants") {
		t.Errorf("the request after the tool call holds the question %v, the call %v, the result %q; want all three", user, call, resultIn(req, "r1"))
	}
}
