package main

import (
	"strings"
	"sync"
	"testing"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/openai/openaitest"
	"github.com/nanobot-go/nanobot/schedule/scheduletest"
)

// taskModel answers the chat's turns and the background tasks' turns of
// one stub, told apart by what they are asked.
type taskModel struct {
	mu   sync.Mutex
	chat func(last string, req goopenai.ChatCompletionRequest) openaitest.Reply
	task func(req goopenai.ChatCompletionRequest) openaitest.Reply
}

func isTask(req goopenai.ChatCompletionRequest) bool {
	for _, m := range req.Messages {
		if m.Role == "user" && strings.HasPrefix(said(m), "[You are a background task") {
			return true
		}
	}
	return false
}

// lastContent is the text of the last message of a request.
func lastContent(req goopenai.ChatCompletionRequest) string {
	if len(req.Messages) == 0 {
		return ""
	}
	return said(req.Messages[len(req.Messages)-1])
}

func (m *taskModel) reply(req goopenai.ChatCompletionRequest) openaitest.Reply {
	m.mu.Lock()
	chat, task := m.chat, m.task
	m.mu.Unlock()
	if isTask(req) {
		return task(req)
	}
	return chat(lastContent(req), req)
}

func spawnCall(id, task, label string) agent.ToolCall {
	return agent.ToolCall{ID: id, Name: "spawn", Arguments: `{"task":"` + task + `","label":"` + label + `"}`}
}

// reports are the system messages of background tasks the chat's turns got.
func reports(reqs []goopenai.ChatCompletionRequest) []string {
	var out []string
	for _, r := range reqs {
		if last := lastContent(r); !isTask(r) && strings.HasPrefix(last, "[Background task") {
			out = append(out, last)
		}
	}
	return out
}

func taskRequests(reqs []goopenai.ChatCompletionRequest) int {
	n := 0
	for _, r := range reqs {
		if isTask(r) {
			n++
		}
	}
	return n
}

// TestBackgroundTaskReportsAfterTheChatGoesOn: spawn returns at once, the
// chat gets a normal answer while the task works, and the task's result
// comes afterwards through a turn of the chat.
func TestBackgroundTaskReportsAfterTheChatGoesOn(t *testing.T) {
	h := startGatewayAt(t, scheduletest.New(cronStart), nil)
	release := make(chan struct{})
	m := &taskModel{
		task: func(req goopenai.ChatCompletionRequest) openaitest.Reply {
			return openaitest.Reply{Hold: release, Text: "Lyon has about 520,000 inhabitants (2021)."}
		},
		chat: func(last string, req goopenai.ChatCompletionRequest) openaitest.Reply {
			switch {
			case last == "research the population of Lyon":
				return openaitest.Reply{ToolCalls: []agent.ToolCall{spawnCall("s1", "Find the population of Lyon and its source.", "Lyon population")}}
			case strings.HasPrefix(last, "Started background task"):
				return openaitest.Reply{Text: "I started the research in the background."}
			case last == "how are you?":
				return openaitest.Reply{Text: "Fine, thanks."}
			case strings.HasPrefix(last, "[Background task"):
				return openaitest.Reply{Text: "The research is done: Lyon has about 520,000 inhabitants."}
			}
			return openaitest.Reply{Text: "?"}
		},
	}
	h.model.SetFunc(m.reply)

	h.askFor(owner, "research the population of Lyon", "started the research")
	h.askFor(owner, "/subagents", `1 background task running:`)
	h.askFor(owner, "how are you?", "Fine, thanks.")
	close(release)
	waitSentContaining(t, h.tg, owner, "The research is done")

	sent := h.tg.Sent()
	fine, done := -1, -1
	for i, s := range sent {
		if strings.Contains(s.Text, "Fine, thanks.") {
			fine = i
		}
		if strings.Contains(s.Text, "The research is done") {
			done = i
		}
	}
	if fine < 0 || done < fine {
		t.Errorf("the chat's answer (%d) must come before the task's report (%d)", fine, done)
	}
	got := reports(h.model.Requests())
	if len(got) != 1 || !strings.HasPrefix(got[0], `[Background task "Lyon population" finished]`) || !strings.Contains(got[0], "520,000") {
		t.Errorf("reports %q", got)
	}
	// The task had no chat history: its request holds its instructions only.
	for _, r := range h.model.Requests() {
		if isTask(r) {
			for _, msg := range r.Messages {
				if strings.Contains(msg.Content, "how are you?") || strings.Contains(msg.Content, "research the population") {
					t.Error("the background task sees the chat's conversation")
				}
			}
			for _, tool := range r.Tools {
				if name := tool.Function.Name; name == "spawn" || name == "cron" || name == "message" {
					t.Errorf("the background task was offered %s", name)
				}
			}
		}
	}
}

// TestBackgroundTaskAtItsLimitSaysSo: a task that used all its steps is
// reported as not done.
func TestBackgroundTaskAtItsLimitSaysSo(t *testing.T) {
	h := startGatewayAt(t, scheduletest.New(cronStart), map[string]string{"agent.subagents.max_iterations": "2"})
	m := &taskModel{
		task: func(req goopenai.ChatCompletionRequest) openaitest.Reply {
			if req.ToolChoice == "none" { // the wrap-up call after the last step
				return openaitest.Reply{Text: "I listed the workspace twice but did not find the file."}
			}
			return openaitest.Reply{ToolCalls: []agent.ToolCall{{ID: "l", Name: "list_dir", Arguments: `{"path":"."}`}}}
		},
		chat: func(last string, req goopenai.ChatCompletionRequest) openaitest.Reply {
			switch {
			case last == "find the tax file":
				return openaitest.Reply{ToolCalls: []agent.ToolCall{spawnCall("s1", "Find the tax file in the workspace.", "tax file")}}
			case strings.HasPrefix(last, "Started background task"):
				return openaitest.Reply{Text: "Looking for it."}
			case strings.HasPrefix(last, "[Background task"):
				return openaitest.Reply{Text: "I could not find the tax file."}
			}
			return openaitest.Reply{Text: "?"}
		},
	}
	h.model.SetFunc(m.reply)
	h.askFor(owner, "find the tax file", "Looking for it.")
	waitSentContaining(t, h.tg, owner, "could not find the tax file")
	got := reports(h.model.Requests())
	if len(got) != 1 {
		t.Fatalf("reports %q, want 1", got)
	}
	for _, want := range []string{`[Background task "tax file" stopped at its step limit (2 steps) before it finished: the task is NOT done]`,
		"did not find the file", "It made 2 tool calls: list_dir", "say plainly that the task was not completed"} {
		if !strings.Contains(got[0], want) {
			t.Errorf("report lacks %q:\n%s", want, got[0])
		}
	}
	if strings.Contains(got[0], "finished]") {
		t.Errorf("a task at its limit was reported as finished:\n%s", got[0])
	}
}

// TestStopCancelsBackgroundTasksAndTheLimitHolds: a fourth task is refused
// with a clear result, /stop cancels the running ones, and none reports.
func TestStopCancelsBackgroundTasksAndTheLimitHolds(t *testing.T) {
	h := startGatewayAt(t, scheduletest.New(cronStart), nil)
	hold := make(chan struct{})
	defer close(hold)
	m := &taskModel{
		task: func(req goopenai.ChatCompletionRequest) openaitest.Reply {
			return openaitest.Reply{Hold: hold, Text: "never"}
		},
		chat: func(last string, req goopenai.ChatCompletionRequest) openaitest.Reply {
			switch {
			case last == "start four tasks":
				return openaitest.Reply{ToolCalls: []agent.ToolCall{spawnCall("a", "one", "one"), spawnCall("b", "two", "two"),
					spawnCall("c", "three", "three"), spawnCall("d", "four", "four")}}
			case strings.HasPrefix(last, "Error:") || strings.HasPrefix(last, "Started background task"):
				return openaitest.Reply{Text: "Three started, the fourth was refused."}
			}
			return openaitest.Reply{Text: "ok then"}
		},
	}
	h.model.SetFunc(m.reply)
	h.askFor(owner, "start four tasks", "Three started")
	reqs := h.model.Requests()
	var results []string
	for _, r := range reqs {
		if !isTask(r) {
			for _, id := range []string{"a", "b", "c", "d"} {
				if res := resultIn(r, id); res != "" {
					results = append(results, res)
				}
			}
			if len(results) == 4 {
				break
			}
			results = nil
		}
	}
	if len(results) != 4 || !strings.HasPrefix(results[2], "Started background task") ||
		!strings.Contains(results[3], "3 background tasks are already running in this chat, the most allowed (agent.subagents.max_per_chat)") {
		t.Fatalf("spawn results %q", results)
	}
	h.askFor(owner, "/subagents", "3 background tasks running:")
	h.askFor(owner, "/stop", `Cancelled 3 background tasks: "one", "two", "three".`)
	h.askFor(owner, "anything new?", "ok then")
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	if got := reports(h.model.Requests()); len(got) != 0 {
		t.Errorf("cancelled tasks reported %q", got)
	}
	var cancelled int
	h.db().QueryRow(`SELECT count(*) FROM subagents WHERE state = 'cancelled'`).Scan(&cancelled)
	if cancelled != 3 {
		t.Errorf("%d tasks recorded as cancelled, want 3", cancelled)
	}
}

// TestInterruptedBackgroundTaskIsReportedAfterRestart: a task running when
// the daemon stops is reported as interrupted at the next start, with what
// it had done, and not run again.
func TestInterruptedBackgroundTaskIsReportedAfterRestart(t *testing.T) {
	clock := scheduletest.New(cronStart)
	h := startGatewayAt(t, clock, nil)
	hold := make(chan struct{})
	defer close(hold)
	m := &taskModel{
		task: func(req goopenai.ChatCompletionRequest) openaitest.Reply {
			if last := req.Messages[len(req.Messages)-1]; last.Role == "user" && strings.HasPrefix(said(last), "[You are") {
				return openaitest.Reply{ToolCalls: []agent.ToolCall{{ID: "w", Name: "write_file", Arguments: `{"path":"notes.md","content":"draft"}`}}}
			}
			return openaitest.Reply{Hold: hold, Text: "never"}
		},
		chat: func(last string, req goopenai.ChatCompletionRequest) openaitest.Reply {
			switch {
			case last == "write the notes":
				return openaitest.Reply{ToolCalls: []agent.ToolCall{spawnCall("s", "Write the meeting notes to notes.md.", "notes")}}
			case strings.HasPrefix(last, "Started background task"):
				return openaitest.Reply{Text: "Writing them in the background."}
			case strings.HasPrefix(last, "[Background task"):
				return openaitest.Reply{Text: "Sorry, the notes task was interrupted by a restart; a draft is in notes.md."}
			}
			return openaitest.Reply{Text: "?"}
		},
	}
	h.model.SetFunc(m.reply)
	h.askFor(owner, "write the notes", "Writing them")
	if _, err := h.model.WaitRequests(waitCtx(t), 4); err != nil { // the task's second call is held
		t.Fatal(err)
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	before := taskRequests(h.model.Requests())
	h.start()
	waitSentContaining(t, h.tg, owner, "interrupted by a restart")
	got := reports(h.model.Requests())
	if len(got) != 1 || !strings.HasPrefix(got[0], `[Background task "notes" was interrupted by a restart`) ||
		!strings.Contains(got[0], "It made 1 tool call: write_file") {
		t.Errorf("reports %q", got)
	}
	if after := taskRequests(h.model.Requests()); after != before {
		t.Errorf("the interrupted task ran again: %d task requests before the restart, %d after", before, after)
	}
	var state string
	h.db().QueryRow(`SELECT state FROM subagents WHERE id = 1`).Scan(&state)
	if state != "interrupted" {
		t.Errorf("task state %q, want interrupted", state)
	}
}
