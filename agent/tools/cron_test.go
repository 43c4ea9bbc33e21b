package tools

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/schedule"
)

// fakeJobs records what the cron tool asked for.
type fakeJobs struct{ calls []string }

func (f *fakeJobs) Add(_ context.Context, t agent.Turn, message string, when schedule.Input) (string, error) {
	f.calls = append(f.calls, fmt.Sprintf("add %s:%s %q %+v", t.Channel, t.ChatID, message, when))
	return "added", nil
}

func (f *fakeJobs) List(_ context.Context, t agent.Turn) (string, error) {
	f.calls = append(f.calls, "list "+t.Channel+":"+t.ChatID)
	return "listed", nil
}

func (f *fakeJobs) Remove(_ context.Context, t agent.Turn, id int64) (string, error) {
	f.calls = append(f.calls, fmt.Sprintf("remove %s:%s %d", t.Channel, t.ChatID, id))
	return "removed", nil
}

func TestCron(t *testing.T) {
	chat := agent.Turn{Channel: "telegram", ChatID: "42", SenderID: "42"}
	tests := []struct {
		name     string
		turn     agent.Turn
		args     string
		want     string
		wantCall string
		wantErr  string
	}{
		{name: "add", turn: chat, args: `{"action":"add","message":"water","cron_expr":"0 9 * * *","tz":"Europe/Berlin"}`,
			want: "added", wantCall: `add telegram:42 "water" {CronExpr:0 9 * * * EverySeconds:0 At: TZ:Europe/Berlin}`},
		{name: "list", turn: chat, args: `{"action":"list"}`, want: "listed", wantCall: "list telegram:42"},
		{name: "remove by number", turn: chat, args: `{"action":"remove","job_id":7}`, want: "removed", wantCall: "remove telegram:42 7"},
		{name: "remove by string", turn: chat, args: `{"action":"remove","job_id":"7"}`, want: "removed", wantCall: "remove telegram:42 7"},
		{name: "remove without id", turn: chat, args: `{"action":"remove"}`, wantErr: "remove needs job_id"},
		{name: "bad id", turn: chat, args: `{"action":"remove","job_id":"seven"}`, wantErr: "job_id must be a job's number"},
		{name: "no action", turn: chat, args: `{}`, wantErr: `action is required: "add", "list" or "remove"`},
		{name: "unknown action", turn: chat, args: `{"action":"pause"}`, wantErr: `action "pause" is not one of`},
		{name: "unknown field", turn: chat, args: `{"action":"list","when":"now"}`, wantErr: `unknown field "when"`},
		{name: "no chat", turn: agent.Turn{Session: "cli:default"}, args: `{"action":"list"}`, wantErr: "need a chat to deliver to"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			jobs := &fakeJobs{}
			got, err := Cron{Jobs: jobs}.Run(agent.WithTurn(t.Context(), tt.turn), []byte(tt.args))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("cron(%s) = %q, %v; want error containing %q", tt.args, got, err, tt.wantErr)
				}
				if len(jobs.calls) != 0 {
					t.Errorf("calls %q after an error", jobs.calls)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("cron(%s) = %q, %v; want %q", tt.args, got, err, tt.want)
			}
			if len(jobs.calls) != 1 || jobs.calls[0] != tt.wantCall {
				t.Errorf("calls %q, want [%s]", jobs.calls, tt.wantCall)
			}
		})
	}
}
