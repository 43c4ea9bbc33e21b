package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/agent"
)

// journal is the order in which calls started and ended.
type journal struct {
	mu      sync.Mutex
	entries []string
}

func (j *journal) add(s string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.entries = append(j.entries, s)
}

func (j *journal) index(s string) int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Index(j.entries, s)
}

// stepTool writes "start id" and "end id" into its journal; a read-only
// one waits, before it ends, until peers reads are running at once (or
// gives up after a while, which the test then sees in the journal).
type stepTool struct {
	name     string
	readOnly bool
	log      *journal
	peers    int
	mu       sync.Mutex
	running  int
	together chan struct{}
}

func (s *stepTool) Spec() agent.ToolSpec {
	return agent.ToolSpec{Name: s.name, Description: s.name, Parameters: json.RawMessage(`{"type":"object"}`)}
}

func (s *stepTool) ReadOnly() bool { return s.readOnly }

func (s *stepTool) Run(ctx context.Context, args json.RawMessage) (string, error) {
	var p struct{ ID string }
	if err := json.Unmarshal(args, &p); err != nil {
		return "", err
	}
	s.log.add("start " + p.ID)
	defer s.log.add("end " + p.ID)
	if s.peers > 1 {
		s.mu.Lock()
		s.running++
		if s.running == s.peers {
			close(s.together)
		}
		s.mu.Unlock()
		select {
		case <-s.together:
		case <-time.After(2 * time.Second):
			return "", fmt.Errorf("%s ran alone", p.ID)
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	return "result " + p.ID, nil
}

func call(id, name string) agent.ToolCall {
	return agent.ToolCall{ID: id, Name: name, Arguments: `{"id":"` + id + `"}`}
}

// TestReadOnlyCallsRunTogether: the read-only calls of one reply run at
// the same time, and their results come back in the order of the calls.
func TestReadOnlyCallsRunTogether(t *testing.T) {
	log := &journal{}
	read := &stepTool{name: "read", readOnly: true, log: log, peers: 3, together: make(chan struct{})}
	p := &script{replies: []agent.Response{calls(call("a", "read"), call("b", "read"), call("c", "read")), text("ok")}}
	h := newHistory()
	res, err := newLoop(p, h, read).Run(t.Context(), turn, agent.Message{Content: "x"})
	if err != nil || res.Text != "ok" {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	var ids, outs []string
	for _, m := range h.all(turn.Session) {
		if m.Role == agent.RoleTool {
			ids = append(ids, m.ToolCallID)
			outs = append(outs, strings.SplitN(m.Content, "\n", 2)[0])
		}
	}
	if !slices.Equal(ids, []string{"a", "b", "c"}) || !slices.Equal(outs, []string{"result a", "result b", "result c"}) {
		t.Errorf("results %v %q, want a, b, c in order, each its own (journal %v)", ids, outs, log.entries)
	}
}

// TestCallsWithSideEffectsWaitForTheReadsBefore: a write starts after the
// reads before it have ended and before the reads after it start; two
// writes keep their order; a tool that does not say is taken as a write.
func TestCallsWithSideEffectsWaitForTheReadsBefore(t *testing.T) {
	log := &journal{}
	read := &stepTool{name: "read", readOnly: true, log: log, peers: 2, together: make(chan struct{})}
	read2 := &stepTool{name: "read2", readOnly: true, log: log, peers: 2, together: make(chan struct{})}
	write := &stepTool{name: "write", log: log}
	p := &script{replies: []agent.Response{calls(
		call("r1", "read"), call("r2", "read"),
		call("w1", "write"), call("w2", "write"),
		call("r3", "read2"), call("r4", "read2"),
		call("e", "echo"),
	), text("ok")}}
	h := newHistory()
	echo := &echoTool{}
	if _, err := newLoop(p, h, read, read2, write, echo).Run(t.Context(), turn, agent.Message{Content: "x"}); err != nil {
		t.Fatal(err)
	}
	before := func(a, b string) {
		t.Helper()
		if i, j := log.index(a), log.index(b); i < 0 || j < 0 || i > j {
			t.Errorf("%q should come before %q: %v", a, b, log.entries)
		}
	}
	before("end r1", "start w1")
	before("end r2", "start w1")
	before("end w1", "start w2")
	before("end w2", "start r3")
	before("end w2", "start r4")
	if echo.runs != 1 {
		t.Errorf("echo ran %d times", echo.runs)
	}
	for _, m := range h.all(turn.Session) {
		if m.Role == agent.RoleTool && strings.HasPrefix(m.Content, "Error:") {
			t.Errorf("%s: %s (reads that should have run together ran alone)", m.ToolCallID, m.Content)
		}
	}
}

// TestProgressTellsEachCall: the turn's reporter hears every model call
// and each call's start and end, by id, and is never called twice at once.
func TestProgressTellsEachCall(t *testing.T) {
	log := &journal{}
	read := &stepTool{name: "read", readOnly: true, log: log, peers: 2, together: make(chan struct{})}
	p := &script{replies: []agent.Response{calls(call("a", "read"), call("b", "read")), calls(agent.ToolCall{ID: "c", Name: "echo", Arguments: `{"text":"fail"}`}), text("ok")}}
	var mu sync.Mutex
	busy := false
	var got []string
	report := func(ev agent.ProgressEvent) {
		mu.Lock()
		if busy {
			t.Error("reporter called while busy")
		}
		busy = true
		mu.Unlock()
		s := fmt.Sprintf("%s %d", ev.Kind, ev.Round)
		if ev.Kind != agent.ProgressModel {
			s += fmt.Sprintf(" %s %s %d/%d failed=%v", ev.ID, ev.Tool, ev.Call, ev.Calls, ev.Failed)
		}
		mu.Lock()
		got = append(got, s)
		busy = false
		mu.Unlock()
	}
	ctx := agent.WithProgress(t.Context(), report)
	if _, err := newLoop(p, newHistory(), read, &echoTool{}).Run(ctx, turn, agent.Message{Content: "x"}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"model 0",
		"tool 1 a read 0/2 failed=false", "tool 1 b read 1/2 failed=false",
		"tool_done 1 a read 0/2 failed=false", "tool_done 1 b read 1/2 failed=false",
		"model 1",
		"tool 2 c echo 0/1 failed=false", "tool_done 2 c echo 0/1 failed=true",
		"model 2",
	}
	sorted := func(s []string) []string { // the parallel round's events may come in any order
		s = slices.Clone(s)
		slices.Sort(s[1:5])
		return s
	}
	if !slices.Equal(sorted(got), sorted(want)) {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for i, id := range []string{"a", "b"} {
		suffix := fmt.Sprintf(" 1 %s read %d/2 failed=false", id, i)
		if slices.Index(got, "tool"+suffix) > slices.Index(got, "tool_done"+suffix) {
			t.Errorf("%s ended before it started: %v", id, got)
		}
	}
}

// TestSteeredWordsJoinTheTurn: what the chat wrote during a tool round is
// read at the next model call, after the results and a note, recorded in
// the record of that call with its inbox item, and told to the reporter.
func TestSteeredWordsJoinTheTurn(t *testing.T) {
	p := &script{replies: []agent.Response{calls(agent.ToolCall{ID: "a", Name: "echo", Arguments: `{"text":"x"}`}), text("ok")}}
	h := newHistory()
	handed := 0
	ctx := agent.WithSteering(t.Context(), func() []agent.Steer {
		handed++
		if handed > 1 {
			return nil
		}
		return []agent.Steer{{Inbox: 7, Message: agent.Message{Content: "use y instead"}}}
	})
	var events []agent.ProgressKind
	ctx = agent.WithProgress(ctx, func(ev agent.ProgressEvent) { events = append(events, ev.Kind) })
	res, err := newLoop(p, h, &echoTool{}).Run(ctx, turn, agent.Message{Content: "do x"})
	if err != nil || res.Text != "ok" || res.Steered != 1 {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	reqs := p.reqs()
	msgs := reqs[1].Messages
	n := len(msgs)
	if msgs[n-3].Role != agent.RoleTool || msgs[n-2].Role != agent.RoleAssistant || msgs[n-1].Role != agent.RoleUser ||
		!strings.HasSuffix(msgs[n-1].Content, agent.SteeredMark+"use y instead") {
		t.Errorf("second request ends %+v", msgs[n-3:])
	}
	var taken []int64
	for _, r := range h.recs() {
		for _, m := range r.Messages {
			if agent.Steered(m) {
				taken = append(taken, r.Inbox...)
			}
		}
	}
	if !slices.Equal(taken, []int64{7}) {
		t.Errorf("the record holding the words takes items %v, want [7]", taken)
	}
	if !slices.Contains(events, agent.ProgressSteered) {
		t.Errorf("events %v lack steered", events)
	}
}
