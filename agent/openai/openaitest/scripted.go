package openaitest

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/nanobot-go/nanobot/agent"
)

// StatusError is what Scripted returns for a Reply with a failure Status.
type StatusError struct {
	Status int
}

// Error names the scripted status.
func (e *StatusError) Error() string {
	return fmt.Sprintf("the model service failed (HTTP %d)", e.Status)
}

// Scripted is an in-process agent.Provider answering from a script, with
// the semantics of Server but without HTTP. Reply.Body and Reply.RetryAfter
// mean nothing here. It is safe for concurrent use.
type Scripted struct {
	mu       sync.Mutex
	script   script
	record   bool
	requests []agent.Request
	count    int
	arrived  chan struct{}
}

var _ agent.Provider = (*Scripted)(nil)

// NewScripted returns a Scripted provider that will answer with replies
// first, then with its default.
func NewScripted(replies ...Reply) *Scripted {
	return &Scripted{script: script{queue: slices.Clone(replies)}, record: true}
}

// Script queues replies, answered in order.
func (s *Scripted) Script(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script.queue = append(s.script.queue, replies...)
}

// SetDefault sets the reply used when the script is empty (by default the
// text "ok").
func (s *Scripted) SetDefault(r Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script.def = &r
}

// SetRecording turns keeping the requests on or off; benchmarks turn it off
// so that memory does not grow with b.N. Counting continues.
func (s *Scripted) SetRecording(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.record = on
}

// Complete answers req with the next reply of the script.
func (s *Scripted) Complete(ctx context.Context, req agent.Request) (agent.Response, error) {
	s.mu.Lock()
	if s.record {
		req.Messages = slices.Clone(req.Messages) // the caller may reuse its slice
		s.requests = append(s.requests, req)
	}
	s.count++
	if s.arrived != nil { // only made when someone waits, to keep calls cheap
		close(s.arrived)
		s.arrived = nil
	}
	reply := s.script.next()
	s.mu.Unlock()

	if !reply.wait(ctx, nil) {
		return agent.Response{}, fmt.Errorf("scripted model call: %w", ctx.Err())
	}
	if reply.Status != 0 && reply.Status != 200 {
		return agent.Response{}, &StatusError{Status: reply.Status}
	}
	msg := agent.Message{Role: agent.RoleAssistant, Content: reply.Text, Usage: reply.Usage}
	if len(reply.ToolCalls) > 0 {
		msg.ToolCalls = slices.Clone(reply.ToolCalls)
	}
	return agent.Response{Message: msg, Usage: reply.Usage}, nil
}

// Requests returns the recorded requests, in order.
func (s *Scripted) Requests() []agent.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// RequestCount is the number of calls so far, recorded or not.
func (s *Scripted) RequestCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count
}

// WaitRequests waits until at least n calls have arrived and returns the
// recorded requests.
func (s *Scripted) WaitRequests(ctx context.Context, n int) ([]agent.Request, error) {
	for {
		s.mu.Lock()
		if s.count >= n {
			reqs := slices.Clone(s.requests)
			s.mu.Unlock()
			return reqs, nil
		}
		if s.arrived == nil {
			s.arrived = make(chan struct{})
		}
		arrived := s.arrived
		s.mu.Unlock()
		select {
		case <-arrived:
		case <-ctx.Done():
			return nil, fmt.Errorf("wait for %d model calls (got %d): %w", n, s.RequestCount(), ctx.Err())
		}
	}
}
