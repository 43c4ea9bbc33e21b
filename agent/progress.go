package agent

import (
	"context"
	"sync"
	"time"
)

// ProgressKind says what a ProgressEvent reports.
type ProgressKind string

// The events of a running turn.
const (
	// ProgressModel: a model call starts (Round 0 is the turn's first).
	ProgressModel ProgressKind = "model"
	// ProgressTool: a tool call starts.
	ProgressTool ProgressKind = "tool"
	// ProgressToolDone: a tool call returned (Duration, Failed).
	ProgressToolDone ProgressKind = "tool_done"
	// ProgressSteered: words the chat sent during the turn were handed
	// to it (Text).
	ProgressSteered ProgressKind = "steered"
)

// ProgressEvent is one step of a running turn, for the chat to show while
// the user waits. Args are redacted; they are what the model wrote, not a
// summary, so a channel shortens them for display.
type ProgressEvent struct {
	Kind  ProgressKind
	Round int // the tool round, from 1; for ProgressModel, the rounds done before the call
	// Call is the call's index in its round, Calls the round's size.
	Call, Calls int
	ID          string // the tool call's id
	Tool        string
	Args        string
	// Elapsed is the time since the turn started.
	Elapsed  time.Duration
	Duration time.Duration // of the call (ProgressToolDone)
	Failed   bool          // the call's result is an error (ProgressToolDone)
	Text     string        // the words handed to the turn (ProgressSteered)
}

type progressKey struct{}

// WithProgress returns a context whose turn tells report what it does.
// report is called one event at a time, from the turn's goroutines, and
// must return quickly.
func WithProgress(ctx context.Context, report func(ProgressEvent)) context.Context {
	return context.WithValue(ctx, progressKey{}, report)
}

// progress serializes a turn's events to its reporter.
type progress struct {
	mu     sync.Mutex
	report func(ProgressEvent)
	start  time.Time
}

func progressFrom(ctx context.Context) *progress {
	r, _ := ctx.Value(progressKey{}).(func(ProgressEvent))
	return &progress{report: r, start: time.Now()}
}

func (p *progress) tell(ev ProgressEvent) {
	if p == nil || p.report == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	ev.Elapsed = time.Since(p.start)
	p.report(ev)
}
