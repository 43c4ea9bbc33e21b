package backoff

import (
	"context"
	"testing"
	"time"
)

func TestNext(t *testing.T) {
	tests := []struct{ prev, want time.Duration }{
		{0, Min},
		{-time.Second, Min},
		{Min, 2 * Min},
		{time.Second, 2 * time.Second},
		{20 * time.Second, Max},
		{Max, Max},
		{time.Hour, Max},
	}
	for _, tt := range tests {
		if got := Next(tt.prev); got != tt.want {
			t.Errorf("Next(%s) = %s, want %s", tt.prev, got, tt.want)
		}
	}
}

func TestSleep(t *testing.T) {
	if !Sleep(t.Context(), time.Millisecond) {
		t.Error("Sleep with a live context = false, want true")
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if Sleep(ctx, time.Hour) {
		t.Error("Sleep with an ended context = true, want false")
	}
}
