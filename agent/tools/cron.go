package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/schedule"
)

// Jobs is the scheduled-jobs service as the cron tool sees it. Every call
// is for the chat of the calling turn, so a chat only ever sees and removes
// its own jobs. Results are text for the model; errors are sentences it can
// act on.
type Jobs interface {
	Add(ctx context.Context, t agent.Turn, message string, when schedule.Input) (string, error)
	List(ctx context.Context, t agent.Turn) (string, error)
	Remove(ctx context.Context, t agent.Turn, id int64) (string, error)
}

// Cron is the cron tool: add, list and remove the chat's scheduled jobs.
type Cron struct{ Jobs Jobs }

var _ agent.Tool = Cron{}

type cronParams struct {
	Action       string `json:"action"`
	Message      string `json:"message"`
	CronExpr     string `json:"cron_expr"`
	EverySeconds int    `json:"every_seconds"`
	At           string `json:"at"`
	TZ           string `json:"tz"`
	JobID        jobID  `json:"job_id"`
}

// jobID takes an id as a number or as a string of digits: models send both.
type jobID int64

func (j *jobID) UnmarshalJSON(b []byte) error {
	b = bytes.Trim(bytes.TrimSpace(b), `"`)
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil || n <= 0 {
		return fmt.Errorf("job_id must be a job's number, as list shows it, not %s", b)
	}
	*j = jobID(n)
	return nil
}

// Spec describes cron.
func (Cron) Spec() agent.ToolSpec {
	return agent.ToolSpec{
		Name: "cron",
		Description: "Reminders and recurring tasks of this chat. " +
			"add: message (an instruction to yourself) and one of cron_expr, every_seconds, at; when due, you get the message in a turn of its own and your answer goes to this chat. " +
			"list: jobs with id, schedule and next run. remove: job_id.",
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "action": {"type": "string", "enum": ["add", "list", "remove"]},
    "message": {"type": "string"},
    "cron_expr": {"type": "string", "description": "5 fields, e.g. \"0 9 * * 1-5\": weekdays 09:00."},
    "every_seconds": {"type": "integer", "minimum": 60},
    "at": {"type": "string", "description": "Once: RFC 3339, local \"2026-03-01 09:00\", or a delay (20m, 2h30m, 1d)."},
    "tz": {"type": "string", "description": "IANA zone of cron_expr and local times (e.g. Europe/Berlin); default: the assistant's."},
    "job_id": {"type": "integer"}
  },
  "required": ["action"],
  "additionalProperties": false
}`),
	}
}

// Run does the action for the calling turn's chat.
func (c Cron) Run(ctx context.Context, args json.RawMessage) (string, error) {
	var p cronParams
	if err := decodeArgs(args, &p); err != nil {
		return "", err
	}
	t, ok := agent.TurnFrom(ctx)
	if !ok || t.ChatID == "" || t.Channel == "" {
		return "", errors.New("scheduled jobs need a chat to deliver to, and this conversation has none")
	}
	if c.Jobs == nil {
		return "", errors.New("scheduled jobs are turned off (cron.enabled is false)")
	}
	switch strings.ToLower(strings.TrimSpace(p.Action)) {
	case "add":
		return c.Jobs.Add(ctx, t, p.Message, schedule.Input{CronExpr: p.CronExpr, EverySeconds: p.EverySeconds, At: p.At, TZ: p.TZ})
	case "list":
		return c.Jobs.List(ctx, t)
	case "remove":
		if p.JobID == 0 {
			return "", errors.New("remove needs job_id: the number list shows for the job")
		}
		return c.Jobs.Remove(ctx, t, int64(p.JobID))
	case "":
		return "", errors.New(`action is required: "add", "list" or "remove"`)
	default:
		return "", fmt.Errorf(`action %q is not one of "add", "list", "remove"`, p.Action)
	}
}
