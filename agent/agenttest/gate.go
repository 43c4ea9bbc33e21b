// Package agenttest holds doubles for tests of turns: a tool that holds a
// turn at a tool round until it is released, and a model that calls it.
package agenttest

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"

	"github.com/nanobot-go/nanobot/agent"
)

// Gate is the tool "gate": each call tells Started, then waits until
// Release is closed or receives.
type Gate struct{ Started, Release chan struct{} }

// NewGate returns a gate whose Started holds up to buffered calls that
// nobody waits for yet.
func NewGate(buffered int) Gate {
	return Gate{Started: make(chan struct{}, buffered), Release: make(chan struct{})}
}

// Spec describes the gate.
func (g Gate) Spec() agent.ToolSpec {
	return agent.ToolSpec{Name: "gate", Description: "waits", Parameters: json.RawMessage(`{"type":"object"}`)}
}

// Run waits at the gate.
func (g Gate) Run(ctx context.Context, _ json.RawMessage) (string, error) {
	select {
	case g.Started <- struct{}{}:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	select {
	case <-g.Release:
		return "gate open", nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// GateModel calls the gate after each message that starts a turn, then
// answers "answered: " and the words of the last user message (after the
// line with its time). It keeps every request.
type GateModel struct {
	mu   sync.Mutex
	reqs []agent.Request
}

// Complete answers req.
func (m *GateModel) Complete(_ context.Context, req agent.Request) (agent.Response, error) {
	m.mu.Lock()
	m.reqs = append(m.reqs, req)
	m.mu.Unlock()
	last := req.Messages[len(req.Messages)-1]
	if last.Role == agent.RoleUser && !strings.Contains(last.Content, agent.SteeredMark) { // the content starts with its time
		return agent.Response{Message: agent.Message{Role: agent.RoleAssistant,
			ToolCalls: []agent.ToolCall{{ID: "g", Name: "gate", Arguments: `{}`}}}}, nil
	}
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if m := req.Messages[i]; m.Role == agent.RoleUser {
			_, words, _ := strings.Cut(m.Content, "\n")
			return agent.Response{Message: agent.Message{Role: agent.RoleAssistant, Content: "answered: " + words}}, nil
		}
	}
	return agent.Response{}, nil
}

// Requests returns the requests so far.
func (m *GateModel) Requests() []agent.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.reqs)
}
