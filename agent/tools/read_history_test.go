package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/agent"
)

func TestReadHistory(t *testing.T) {
	store := newFakeMemory()
	day := time.Date(2026, 3, 1, 14, 0, 0, 0, time.UTC)
	for i := range 100 {
		role := []string{"user", "assistant"}[i%2]
		store.messages["telegram:1"] = append(store.messages["telegram:1"],
			PastMessage{ID: int64(1000 + i), Role: role, At: day.Add(time.Duration(i) * time.Minute), Text: fmt.Sprintf("line %d", i)})
	}
	store.messages["telegram:1"] = append(store.messages["telegram:1"],
		PastMessage{ID: 2000, Role: "user", At: day, Text: "first\nsecond"},
		PastMessage{ID: 2001, Role: "assistant", At: day, Text: strings.Repeat("ü", 5000)})
	store.messages["telegram:2"] = []PastMessage{{ID: 5, Role: "user", At: day, Text: "B's secret"}}
	tool := ReadHistory{store.tools(time.Now(), 0)}

	tests := []struct {
		name, args string
		want       string
		lines      int
		wantErr    string
	}{
		{
			name: "around", args: `{"around": 1010, "before": 1, "after": 1}`,
			want: "[2026-03-01 14:09] #1009 assistant: line 9\n[2026-03-01 14:10] #1010 user: line 10\n[2026-03-01 14:11] #1011 assistant: line 11",
		},
		{name: "defaults", args: `{"around": 1050}`, lines: 11},
		{name: "forward", args: `{"around": 1050, "before": 0, "after": 3}`, lines: 4},
		{name: "the most", args: `{"around": 1050, "before": 25, "after": 24}`, lines: 50},
		{name: "too many", args: `{"around": 1050, "before": 40, "after": 40}`, wantErr: "at most 49"},
		{name: "negative counts", args: `{"around": 1050, "before": -2, "after": -1}`, lines: 1},
		{name: "lines of a message indented", args: `{"around": 2000, "before": 0, "after": 0}`, want: "[2026-03-01 14:00] #2000 user: first\n    second"},
		{name: "long message cut", args: `{"around": 2001, "before": 0, "after": 0}`, want: "[2026-03-01 14:00] #2001 assistant: " + strings.Repeat("ü", maxReadMessage) + "… (cut)"},
		{name: "another chat's message", args: `{"around": 5}`, wantErr: "message #5 is not a message of this chat"},
		{name: "unknown id", args: `{"around": 999999}`, wantErr: "message #999999 is not a message of this chat"},
		{name: "no id", args: `{}`, wantErr: `"around" is required`},
		{name: "zero id", args: `{"around": 0}`, wantErr: `"around" is required`},
	}
	ctx := agent.WithTurn(t.Context(), agent.Turn{Session: "telegram:1"})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tool.Run(ctx, []byte(tt.args))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("read_history(%s) = %q, %v; want error %q", tt.args, got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.want != "" && got != tt.want {
				t.Errorf("read_history(%s) = %q, want %q", tt.args, got, tt.want)
			}
			if tt.lines > 0 && strings.Count(got, "\n")+1 != tt.lines {
				t.Errorf("read_history(%s) gave %d lines, want %d", tt.args, strings.Count(got, "\n")+1, tt.lines)
			}
			if len(got) > maxReadOutput {
				t.Errorf("read_history(%s) gave %d bytes, want at most %d", tt.args, len(got), maxReadOutput)
			}
		})
	}
}

func TestReadHistoryUnavailable(t *testing.T) {
	boom := errors.New("database is locked")
	m := newFakeMemory().tools(time.Now(), 0)
	m.Read = func(context.Context, string, int64, int, int) ([]PastMessage, error) { return nil, boom }
	inChat := agent.WithTurn(t.Context(), agent.Turn{Session: "telegram:1"})
	tests := []struct {
		name string
		tool ReadHistory
		ctx  context.Context
		want error
		text string
	}{
		{name: "store fails", tool: ReadHistory{m}, ctx: inChat, want: boom},
		{name: "no chat", tool: ReadHistory{m}, ctx: t.Context(), text: "not available"},
		{name: "not wired", tool: ReadHistory{}, ctx: inChat, text: "not available"},
	}
	for _, tt := range tests {
		_, err := tt.tool.Run(tt.ctx, []byte(`{"around": 1}`))
		if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) || !strings.Contains(err.Error(), tt.text) {
			t.Errorf("%s: error = %v, want %v %q", tt.name, err, tt.want, tt.text)
		}
	}
}

func TestReadHistoryIsReadOnly(t *testing.T) {
	var tool agent.Tool = ReadHistory{}
	if ro, ok := tool.(agent.ReadOnlyTool); !ok || !ro.ReadOnly() {
		t.Error("read_history is not read-only")
	}
}
