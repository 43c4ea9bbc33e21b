package tools

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/agent"
)

func TestSaveMemory(t *testing.T) {
	now := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	tests := []struct {
		name        string
		args        map[string]string
		want        string
		wantErr     string
		wantHistory []string
		wantDoc     string
	}{
		{
			name: "history entry gets a date", args: map[string]string{"history_entry": "Talked about the trip to Rome."},
			want: "History entry saved.", wantHistory: []string{"[2026-01-02 15:04] Talked about the trip to Rome."},
		},
		{
			name: "dated history entry kept", args: map[string]string{"history_entry": "[2025-12-31 23:59] New year plans."},
			want: "History entry saved.", wantHistory: []string{"[2025-12-31 23:59] New year plans."},
		},
		{
			name: "memory replaced", args: map[string]string{"memory_update": "# User\n- Name: Ada\n"},
			want: "Memory updated (18 characters).", wantDoc: "# User\n- Name: Ada",
		},
		{
			name: "both", args: map[string]string{"history_entry": "Ada said her name.", "memory_update": "- Name: Ada"},
			want:        "History entry saved. Memory updated (11 characters).",
			wantHistory: []string{"[2026-01-02 15:04] Ada said her name."}, wantDoc: "- Name: Ada",
		},
		{
			name: "over the cap is saved with a warning", args: map[string]string{"memory_update": strings.Repeat("fact ", 10)},
			want:    "Memory updated (49 characters). It is over the limit of 40 characters: it was saved, but condense it next time (merge related facts, drop stale ones).",
			wantDoc: strings.TrimSpace(strings.Repeat("fact ", 10)),
		},
		{name: "nothing", args: map[string]string{}, wantErr: `give "history_entry", "memory_update" or both`},
		{name: "only whitespace", args: map[string]string{"history_entry": "  ", "memory_update": "\n"}, wantErr: `give "history_entry"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := newFakeMemory()
			got, err := call(t, SaveMemory{store.tools(now, 40)}, tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("save_memory = %q, %v; want error containing %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("save_memory = %q, %v; want %q", got, err, tt.want)
			}
			var history []string
			for _, h := range store.history["global"] {
				history = append(history, h.Text)
				if !h.At.Equal(now) {
					t.Errorf("entry dated %v, want %v", h.At, now)
				}
			}
			if strings.Join(history, "|") != strings.Join(tt.wantHistory, "|") {
				t.Errorf("history = %q, want %q", history, tt.wantHistory)
			}
			if store.docs["global"] != tt.wantDoc {
				t.Errorf("memory = %q, want %q", store.docs["global"], tt.wantDoc)
			}
		})
	}
}

func TestSaveMemoryScope(t *testing.T) {
	store := newFakeMemory()
	tool := SaveMemory{store.tools(time.Now(), 0)}
	ctx := agent.WithTurn(t.Context(), agent.Turn{Session: "telegram:7"})
	if _, err := tool.Run(ctx, []byte(`{"memory_update": "chat fact"}`)); err != nil {
		t.Fatal(err)
	}
	if store.docs["chat:telegram:7"] != "chat fact" || store.docs["global"] != "" {
		t.Errorf("memory docs = %q, want the fact in chat:telegram:7 only", store.docs)
	}
}

func TestSaveMemoryFailures(t *testing.T) {
	boom := errors.New("disk full")
	m := newFakeMemory().tools(time.Now(), 0)
	m.Save = func(context.Context, string, string) error { return boom }
	_, err := call(t, SaveMemory{m}, map[string]string{"history_entry": "x", "memory_update": "y"})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "the history entry was saved, but updating memory failed") {
		t.Errorf("error = %v, want one saying the entry was saved and memory failed", err)
	}
	_, err = call(t, SaveMemory{Memory{}}, map[string]string{"history_entry": "x"})
	if err == nil || err.Error() != "history is not available" {
		t.Errorf("without a store: error = %v", err)
	}
}
