package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nanobot-go/nanobot/agent"
)

// Spawner starts background tasks for the calling turn's chat.
type Spawner interface {
	// Spawn starts task and returns its id at once; errors are sentences
	// for the model (a limit reached).
	Spawn(ctx context.Context, t agent.Turn, task, label string) (int64, string, error)
}

// Spawn is the spawn tool: start a background task that reports back to
// this chat when it ends.
type Spawn struct{ Spawner Spawner }

var _ agent.Tool = Spawn{}

type spawnParams struct {
	Task  string `json:"task"`
	Label string `json:"label"`
}

// Spec describes spawn.
func (Spawn) Spec() agent.ToolSpec {
	return agent.ToolSpec{
		Name: "spawn",
		Description: "Start a background task for long work (research, a long check) while the chat goes on. " +
			"It has file, shell and web tools but not this conversation: put all it needs in task. " +
			"Returns at once; the result comes to this chat later, for you to tell the user.",
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "task": {"type": "string", "description": "What to do and what to report."},
    "label": {"type": "string", "description": "Short name shown to the user."}
  },
  "required": ["task"],
  "additionalProperties": false
}`),
	}
}

// Run starts the task.
func (s Spawn) Run(ctx context.Context, args json.RawMessage) (string, error) {
	var p spawnParams
	if err := decodeArgs(args, &p); err != nil {
		return "", err
	}
	t, ok := agent.TurnFrom(ctx)
	if !ok || t.ChatID == "" || t.Channel == "" || s.Spawner == nil {
		return "", errors.New("background tasks need a chat to report to, and this conversation has none")
	}
	id, label, err := s.Spawner.Spawn(ctx, t, p.Task, p.Label)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("Started background task %d (%q). It works on its own; its result comes to this chat when it ends. Tell the user it has started; do not wait for it.", id, label), nil
}
