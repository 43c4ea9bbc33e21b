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

func TestSearchHistory(t *testing.T) {
	store := newFakeMemory()
	day := time.Date(2026, 1, 2, 15, 4, 0, 0, time.UTC)
	store.history["global"] = []HistoryHit{
		{At: day, Text: "[2026-01-02 15:04] Planned the trip to Rome with Bob."},
		{At: day.Add(time.Hour), Text: "Imported entry about Rome without a date."},
		{At: day.Add(2 * time.Hour), Text: "Fixed the printer."},
	}
	for i := range 60 {
		store.history["global"] = append(store.history["global"], HistoryHit{At: day, Text: fmt.Sprintf("many %d", i)})
	}
	tool := SearchHistory{store.tools(time.Now(), 0)}

	tests := []struct {
		name      string
		args      string
		want      string
		wantLimit int
		wantErr   string
		lines     int
	}{
		{
			name: "found, newest first, dated", args: `{"query": "rome"}`, wantLimit: 5,
			want: "[2026-01-02 16:04] Imported entry about Rome without a date.\n[2026-01-02 15:04] Planned the trip to Rome with Bob.",
		},
		{name: "nothing", args: `{"query": "zebra"}`, want: `no entries match "zebra"`, wantLimit: 5},
		{name: "default limit", args: `{"query": "many"}`, wantLimit: 5, lines: 5},
		{name: "limit", args: `{"query": "many", "limit": 7}`, wantLimit: 7, lines: 7},
		{name: "limit capped", args: `{"query": "many", "limit": 500}`, wantLimit: 50, lines: 50},
		{name: "zero limit", args: `{"query": "many", "limit": 0}`, wantLimit: 5, lines: 5},
		{name: "empty query", args: `{"query": " "}`, wantErr: `"query" is required`},
		{name: "missing query", args: `{}`, wantErr: `"query" is required`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store.limits = nil
			got, err := tool.Run(t.Context(), []byte(tt.args))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("search_history(%s) = %q, %v; want error %q", tt.args, got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.want != "" && got != tt.want {
				t.Errorf("search_history(%s) = %q, want %q", tt.args, got, tt.want)
			}
			if tt.lines > 0 && strings.Count(got, "\n")+1 != tt.lines {
				t.Errorf("search_history(%s) gave %d lines, want %d", tt.args, strings.Count(got, "\n")+1, tt.lines)
			}
			if len(store.limits) != 1 || store.limits[0] != tt.wantLimit {
				t.Errorf("store asked for limits %v, want [%d]", store.limits, tt.wantLimit)
			}
		})
	}
}

func TestSearchHistoryError(t *testing.T) {
	boom := errors.New("database is locked")
	m := newFakeMemory().tools(time.Now(), 0)
	m.Search = func(context.Context, string, string, int) ([]HistoryHit, error) { return nil, boom }
	if _, err := call(t, SearchHistory{m}, map[string]string{"query": "x"}); !errors.Is(err, boom) {
		t.Errorf("error = %v, want %v", err, boom)
	}
}

func TestSearchHistoryPastMessages(t *testing.T) {
	store := newFakeMemory()
	day := time.Date(2026, 3, 1, 14, 2, 0, 0, time.UTC)
	store.history["chat:telegram:1"] = []HistoryHit{{At: day, Text: "[2026-03-01 14:00] Talked about the cabin."}}
	store.messages["telegram:1"] = []PastMessage{
		{ID: 12345, Role: "user", At: day, Text: "the wifi password at the cabin is moose-42"},
		{ID: 12346, Role: "assistant", At: day.Add(time.Minute), Text: "Noted, the cabin wifi."},
	}
	store.messages["telegram:2"] = []PastMessage{{ID: 9, Role: "user", At: day, Text: "my cabin is elsewhere"}}
	for i := range 80 {
		store.messages["telegram:3"] = append(store.messages["telegram:3"],
			PastMessage{ID: int64(100 + i), Role: "user", At: day, Text: "many " + strings.Repeat("long words ", 30)})
	}
	tool := SearchHistory{store.tools(time.Now(), 0)}

	tests := []struct {
		name, chat, args, want string
		maxBytes               int
	}{
		{
			name: "both sections", chat: "telegram:1", args: `{"query": "cabin"}`,
			want: "HISTORY:\n[2026-03-01 14:00] Talked about the cabin.\n\n" +
				"Past messages:\n[2026-03-01 14:03] #12346 assistant: Noted, the cabin wifi.\n" +
				"[2026-03-01 14:02] #12345 user: the wifi password at the cabin is moose-42",
		},
		{
			name: "messages only", chat: "telegram:1", args: `{"query": "moose", "limit": 1}`,
			want: "Past messages:\n[2026-03-01 14:02] #12345 user: the wifi password at the cabin is moose-42",
		},
		{
			name: "another chat's messages are not found", chat: "telegram:2", args: `{"query": "moose"}`,
			want: `no entries or messages match "moose"`,
		},
		{name: "bounded", chat: "telegram:3", args: `{"query": "many", "limit": 50}`, maxBytes: maxSearchOutput},
		{
			name: "no chat: HISTORY alone", args: `{"query": "cabin"}`, want: "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			if tt.chat != "" {
				ctx = agent.WithTurn(ctx, agent.Turn{Session: tt.chat})
			}
			got, err := tool.Run(ctx, []byte(tt.args))
			if err != nil {
				t.Fatal(err)
			}
			if tt.chat != "" && tt.want != "" && got != tt.want {
				t.Errorf("search_history(%s) =\n%s\nwant\n%s", tt.args, got, tt.want)
			}
			if tt.chat == "" && strings.Contains(got, "Past messages") {
				t.Errorf("search_history(%s) outside a chat = %q, want no past messages", tt.args, got)
			}
			if tt.maxBytes > 0 && (len(got) > tt.maxBytes || !strings.HasSuffix(got, "(more not shown)")) {
				t.Errorf("search_history(%s) gave %d bytes ending %q, want at most %d, saying more were cut",
					tt.args, len(got), got[max(0, len(got)-30):], tt.maxBytes)
			}
		})
	}
}

func TestSearchHistoryPastMessagesError(t *testing.T) {
	boom := errors.New("database is locked")
	m := newFakeMemory().tools(time.Now(), 0)
	m.Find = func(context.Context, string, string, int) ([]MessageHit, error) { return nil, boom }
	ctx := agent.WithTurn(t.Context(), agent.Turn{Session: "telegram:1"})
	if _, err := (SearchHistory{m}).Run(ctx, []byte(`{"query": "x"}`)); !errors.Is(err, boom) {
		t.Errorf("error = %v, want %v", err, boom)
	}
}

func TestSearchHistoryIsReadOnly(t *testing.T) {
	var tool agent.Tool = SearchHistory{}
	if ro, ok := tool.(agent.ReadOnlyTool); !ok || !ro.ReadOnly() {
		t.Error("search_history is not read-only")
	}
}
