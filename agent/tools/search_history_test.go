package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
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
