package heartbeat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/schedule"
)

// maxDoc bounds how much of the checklist a decision call carries.
const maxDoc = 8000

const decisionPrompt = `You decide, for a personal assistant that checks its owner's checklist periodically, whether anything on the checklist needs doing right now.
Call the heartbeat tool once: action "skip" when nothing needs doing now, or action "run" with tasks, the items to do now copied from the list.
Scheduled items marked "due now" are due by their schedule; do them unless the checklist says otherwise. Items without a schedule need your judgement: run one only when the current time or its last run make it worth doing now. When in doubt, skip.`

// decisionTool is the one tool a decision call offers.
var decisionTool = agent.ToolSpec{
	Name:        "heartbeat",
	Description: "Say whether the checklist needs anything done now.",
	Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "action": {"type": "string", "enum": ["skip", "run"]},
    "tasks": {"type": "array", "items": {"type": "string"}, "description": "run: the checklist items to do now."}
  },
  "required": ["action"],
  "additionalProperties": false
}`),
}

// decide makes the one small call that says whether to run, and keeps the
// decision for status.
func (h *Heartbeat) decide(ctx context.Context, cfg Config, doc string, items []schedule.Item, states map[string]itemState, due []schedule.Item, now time.Time) Decision {
	isDue := map[string]bool{}
	for _, it := range due {
		isDue[it.Key] = true
	}
	var list strings.Builder
	for i, it := range items {
		fmt.Fprintf(&list, "%d. ", i+1)
		switch {
		case it.Scheduled && isDue[it.Key]:
			fmt.Fprintf(&list, "[%s, due now] ", it.Schedule())
		case it.Scheduled:
			fmt.Fprintf(&list, "[%s, not due] ", it.Schedule())
		default:
			list.WriteString("[needs judgement] ")
		}
		list.WriteString(it.Text)
		if run := states[it.Key].Run; run.IsZero() {
			list.WriteString(" (never run)\n")
		} else {
			fmt.Fprintf(&list, " (last run %s)\n", run.In(cfg.Zone).Format(schedule.ShowFormat))
		}
	}
	if r := []rune(doc); len(r) > maxDoc {
		doc = string(r[:maxDoc]) + "\n[… the rest of the file is left out]"
	}
	req := agent.Request{
		Messages: []agent.Message{
			{Role: agent.RoleSystem, Content: decisionPrompt},
			{Role: agent.RoleUser, Content: fmt.Sprintf("Current time: %s.\n\nThe checklist file (%s):\n%s\n\nIts items:\n%s",
				now.In(cfg.Zone).Format("Monday, 2006-01-02 15:04 MST"), fileName(cfg.File), strings.TrimSpace(doc), list.String())},
		},
		Tools:     []agent.ToolSpec{decisionTool},
		ForceTool: decisionTool.Name,
	}
	d := Decision{At: now}
	resp, err := h.provider().Complete(agent.WithTurn(ctx, agent.Turn{ID: "heartbeat", Session: Session, Channel: cfg.Channel, ChatID: cfg.Chat}), req)
	if err == nil {
		d.Usage = resp.Usage
		if h.hooks.Tokens != nil {
			h.hooks.Tokens(resp.Usage)
		}
		d.Outcome, d.Tasks, err = parseDecision(resp.Message)
	}
	if err != nil {
		d.Outcome, d.Error = OutcomeError, err.Error()
		h.log.Warn("heartbeat decision failed", "err", err)
	}
	h.log.Info("heartbeat decision", "outcome", d.Outcome, "tasks", len(d.Tasks), "due", len(due),
		"prompt_tokens", d.Usage.PromptTokens, "completion_tokens", d.Usage.CompletionTokens)
	data, _ := json.Marshal(d)
	if err := h.store.SetState(ctx, keyDecision, string(data)); err != nil {
		h.log.Warn("save heartbeat decision", "err", err)
	}
	return d
}

// parseDecision reads the heartbeat call of a decision reply.
func parseDecision(m agent.Message) (outcome string, tasks []string, err error) {
	for _, c := range m.ToolCalls {
		if c.Name != decisionTool.Name {
			continue
		}
		var p struct {
			Action string          `json:"action"`
			Tasks  json.RawMessage `json:"tasks"`
		}
		if err := json.Unmarshal([]byte(c.Arguments), &p); err != nil {
			return "", nil, fmt.Errorf("decision arguments: %w", err)
		}
		if len(p.Tasks) > 0 && string(p.Tasks) != "null" {
			if json.Unmarshal(p.Tasks, &tasks) != nil {
				var one string
				if json.Unmarshal(p.Tasks, &one) != nil {
					return "", nil, errors.New("decision tasks are neither a list nor a string")
				}
				tasks = strings.Split(one, "\n")
			}
		}
		tasks = cleanTasks(tasks)
		switch strings.ToLower(strings.TrimSpace(p.Action)) {
		case "skip":
			return OutcomeSkip, nil, nil
		case "run":
			return OutcomeRun, tasks, nil
		}
		return "", nil, fmt.Errorf("decision action %.40q is neither skip nor run", p.Action)
	}
	return "", nil, errors.New("the model did not call the heartbeat tool")
}

func cleanTasks(in []string) []string {
	var out []string
	for _, t := range in {
		if t = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(t), "-*")); t != "" {
			out = append(out, t)
		}
	}
	return out
}
