// Package backoff spaces out the retries of an unattended daemon: waits
// that double within bounds, and a wait that ends with its context.
package backoff

import (
	"context"
	"time"
)

// The bounds of Next: a first retry soon, none further apart than Max.
const (
	Min = 250 * time.Millisecond
	Max = 30 * time.Second
)

// Next doubles prev within [Min, Max]; a zero prev gives Min.
func Next(prev time.Duration) time.Duration {
	if prev < Min {
		return Min
	}
	return min(prev*2, Max)
}

// Sleep waits d; it reports false when ctx ended first.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
