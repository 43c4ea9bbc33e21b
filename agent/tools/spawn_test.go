package tools

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/agent"
)

type fakeSpawner struct{ got []string }

func (f *fakeSpawner) Spawn(_ context.Context, t agent.Turn, task, label string) (int64, string, error) {
	if task == "too many" {
		return 0, "", errors.New("3 background tasks are already running in this chat")
	}
	f.got = append(f.got, t.ChatID+": "+task+" / "+label)
	if label == "" {
		label = "auto"
	}
	return 7, label, nil
}

func TestSpawn(t *testing.T) {
	chat := agent.Turn{Channel: "telegram", ChatID: "42"}
	tests := []struct {
		name, args string
		turn       agent.Turn
		want       string
		wantErr    string
	}{
		{name: "with label", turn: chat, args: `{"task":"Find the population of Lyon.","label":"Lyon"}`,
			want: `Started background task 7 ("Lyon"). It works on its own`},
		{name: "without label", turn: chat, args: `{"task":"Find it."}`, want: `Started background task 7 ("auto")`},
		{name: "limit", turn: chat, args: `{"task":"too many"}`, wantErr: "already running in this chat"},
		{name: "no chat", turn: agent.Turn{Session: "cli:default"}, args: `{"task":"x"}`, wantErr: "need a chat to report to"},
		{name: "unknown field", turn: chat, args: `{"task":"x","priority":1}`, wantErr: `unknown field "priority"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Spawn{Spawner: &fakeSpawner{}}.Run(agent.WithTurn(t.Context(), tt.turn), []byte(tt.args))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("spawn(%s) = %q, %v; want error containing %q", tt.args, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || !strings.HasPrefix(got, tt.want) {
				t.Fatalf("spawn(%s) = %q, %v; want prefix %q", tt.args, got, err, tt.want)
			}
		})
	}
}
