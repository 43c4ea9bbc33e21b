// Package providertest provides fakes of the popular OpenAI-compatible model
// providers, each written from that provider's own documentation and known
// refusals: New starts an HTTP server on 127.0.0.1 that speaks one
// provider's dialect (its base path, its response fields, its tool call ids,
// its usage fields and its error bodies) and refuses a request that breaks
// one of the provider's documented rules exactly as the provider does. The
// fake records every raw request body and every violation, so a test can
// print what the provider would have refused.
//
// Replies are scripted in provider-neutral terms (text, tool calls); the
// fake renders them in the provider's shapes and remembers what it handed
// out (reasoning, thought signatures, reasoning details) to check that it
// comes back unchanged on the assistant message it belongs to.
package providertest

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Profile is one provider's dialect: where it listens, what it renders and
// which rules it enforces.
type Profile struct {
	// Name identifies the provider in violations ("deepseek").
	Name string
	// BasePath is the path of the documented base URL ("/v1",
	// "/v1beta/openai", "/compatible-mode/v1").
	BasePath string
	// Model is a model the provider serves, for a client's configuration.
	Model string
	// NoAuth accepts requests without an API key (local servers).
	NoAuth bool
	// APIKeyHeader, when set, is accepted as well as a Bearer token
	// (Azure's api-key).
	APIKeyHeader string
	// Rules are checked in order on every request; the first refusal wins.
	Rules []Rule
	// Render says how replies are rendered.
	Render Render
	// Error renders the provider's error body for a refusal.
	Error func(r Refusal) []byte
	// ContextError is the provider's refusal of a prompt of n tokens over a
	// window of max.
	ContextError func(n, max int) Refusal
}

// Render says how a provider renders a reply.
type Render struct {
	// Reasoning is the message field that carries the model's reasoning
	// ("reasoning_content", "reasoning"); "" renders none.
	Reasoning string
	// ReasoningDetails renders OpenRouter's reasoning_details array.
	ReasoningDetails bool
	// ThoughtSignature renders extra_content.google.thought_signature on
	// the first tool call of a reply.
	ThoughtSignature bool
	// ID is the id of the n-th tool call the server hands out (n counts
	// from 0 across the server's life), index its place in the reply.
	ID func(n, index int, name string) string
	// ArgumentsObject renders tool call arguments as a JSON object rather
	// than a string.
	ArgumentsObject bool
	// Usage renders the usage object.
	Usage func(prompt, completion, cached int) map[string]any
}

// Rule is one documented rule of a provider.
type Rule struct {
	// Name is a short label ("reasoning_content back on tool calls").
	Name string
	// Source is where the rule is documented or observed.
	Source string
	// Check returns the provider's refusal of req, nil when req keeps the
	// rule. issued is what the server handed out so far.
	Check func(req *Request, issued *Issued) *Refusal
}

// Refusal is a provider's answer to a request it refuses.
type Refusal struct {
	Status  int
	Message string
	// Code is the provider's code or type, where its error shape has one.
	Code string
	// Param names the offending part, where the shape has one.
	Param string
	// Body, when set, is sent as is instead of the profile's error shape.
	Body []byte
	// RetryDelay is put in Google's RetryInfo detail (Gemini 429).
	RetryDelay string
}

// Violation is a request a rule refused.
type Violation struct {
	Provider string
	Rule     string
	Source   string
	Request  int // 1-based number of the request
	Status   int
	Message  string
}

func (v Violation) String() string {
	return fmt.Sprintf("%s request %d refused by rule %q (HTTP %d): %s [%s]", v.Provider, v.Request, v.Rule, v.Status, v.Message, v.Source)
}

// ScriptedCall is a scripted tool call.
type ScriptedCall struct {
	Name      string
	Arguments string // JSON
}

// Reply is one scripted answer.
type Reply struct {
	Text      string
	ToolCalls []ScriptedCall
	// Reasoning is the reasoning rendered where the profile has a field for
	// it; empty: one is made up.
	Reasoning string
	// Refuse answers with this refusal in the profile's error shape.
	Refuse *Refusal
	// Status and Body, when Body is set, are sent as they are (200 when
	// Status is 0): error bodies inside a 200, malformed replies.
	Status int
	Body   string
}

// Issued is what the server handed out, looked up by tool call id.
type Issued struct {
	mu    sync.Mutex
	calls map[string]IssuedCall
}

// IssuedCall is what came with one tool call the server handed out.
type IssuedCall struct {
	Name      string
	Arguments string
	// Reasoning of the assistant message that carried the call.
	Reasoning string
	// Signature is the thought signature on the call, "" when none.
	Signature string
	// Details is the reasoning_details array of the message.
	Details json.RawMessage
}

// Lookup returns what was handed out with the tool call id.
func (is *Issued) Lookup(id string) (IssuedCall, bool) {
	is.mu.Lock()
	defer is.mu.Unlock()
	c, ok := is.calls[id]
	return c, ok
}

func (is *Issued) add(id string, c IssuedCall) {
	is.mu.Lock()
	defer is.mu.Unlock()
	if is.calls == nil {
		is.calls = map[string]IssuedCall{}
	}
	is.calls[id] = c
}

// Server is a fake provider on 127.0.0.1.
type Server struct {
	t      testing.TB
	p      Profile
	srv    *httptest.Server
	issued Issued
	key    string

	mu         sync.Mutex
	queue      []Reply
	def        *Reply
	poison     []poison
	requests   [][]byte
	violations []Violation
	calls      int // tool calls handed out
	changed    chan struct{}
}

type poison struct {
	text string
	r    Refusal
}

// Option adjusts a Server.
type Option func(*Server)

// WithAPIKey makes the server refuse any other key.
func WithAPIKey(key string) Option { return func(s *Server) { s.key = key } }

// New starts a fake of p, closed when the test ends.
func New(t testing.TB, p Profile, opts ...Option) *Server {
	t.Helper()
	s := &Server{t: t, p: p}
	for _, o := range opts {
		o(s)
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	t.Cleanup(s.srv.Close)
	return s
}

// URL is the base URL a client is configured with.
func (s *Server) URL() string { return s.srv.URL + s.p.BasePath }

// Profile is the profile the server speaks.
func (s *Server) Profile() Profile { return s.p }

// Script queues replies, answered in order.
func (s *Server) Script(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, replies...)
}

// SetDefault is the reply once the script is used up; without one the
// server answers a short text.
func (s *Server) SetDefault(r Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.def = &r
}

// RefuseContaining refuses every request any message of which contains
// text, as a provider refuses a history it cannot take however often it is
// sent.
func (s *Server) RefuseContaining(text string, r Refusal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.poison = append(s.poison, poison{text, r})
}

// Requests are the raw bodies of every chat completion request.
func (s *Server) Requests() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.requests...)
}

// Violations are the requests a rule refused.
func (s *Server) Violations() []Violation {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Violation(nil), s.violations...)
}

// WaitRequests waits until n requests have arrived.
func (s *Server) WaitRequests(ctx context.Context, n int) ([][]byte, error) {
	for {
		s.mu.Lock()
		if len(s.requests) >= n {
			r := append([][]byte(nil), s.requests...)
			s.mu.Unlock()
			return r, nil
		}
		if s.changed == nil {
			s.changed = make(chan struct{})
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, fmt.Errorf("%d of %d requests: %w", len(s.Requests()), n, ctx.Err())
		}
	}
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != s.p.BasePath+"/chat/completions" {
		s.fail(w, Refusal{Status: http.StatusNotFound, Message: "unknown path " + r.URL.Path, Code: "not_found"})
		return
	}
	if !s.authorized(r) {
		s.fail(w, Refusal{Status: http.StatusUnauthorized, Message: "Incorrect API key provided.", Code: "invalid_api_key"})
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	n := s.record(body)
	req, err := parseRequest(body)
	if err != nil {
		s.fail(w, Refusal{Status: http.StatusBadRequest, Message: err.Error(), Code: "invalid_request_error"})
		return
	}
	for _, rule := range s.p.Rules {
		if ref := rule.Check(req, &s.issued); ref != nil {
			s.violate(n, rule, *ref)
			s.fail(w, *ref)
			return
		}
	}
	reply, poisoned := s.next(req)
	switch {
	case poisoned != nil:
		s.fail(w, *poisoned)
	case reply.Refuse != nil:
		s.fail(w, *reply.Refuse)
	case reply.Body != "":
		status := reply.Status
		if status == 0 {
			status = http.StatusOK
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, reply.Body)
	default:
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(s.render(req, reply, n))
	}
}

func (s *Server) authorized(r *http.Request) bool {
	if s.p.NoAuth {
		return true
	}
	got := ""
	if h := r.Header.Get("Authorization"); strings.HasPrefix(h, "Bearer ") {
		got = strings.TrimPrefix(h, "Bearer ")
	}
	if got == "" && s.p.APIKeyHeader != "" {
		got = r.Header.Get(s.p.APIKeyHeader)
	}
	return got != "" && (s.key == "" || got == s.key)
}

func (s *Server) record(body []byte) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, body)
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
	return len(s.requests)
}

func (s *Server) violate(n int, rule Rule, r Refusal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.violations = append(s.violations, Violation{Provider: s.p.Name, Rule: rule.Name, Source: rule.Source, Request: n, Status: r.Status, Message: r.Message})
}

func (s *Server) next(req *Request) (Reply, *Refusal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.poison {
		if req.Contains(p.text) {
			r := p.r
			return Reply{}, &r
		}
	}
	if len(s.queue) > 0 {
		r := s.queue[0]
		s.queue = s.queue[1:]
		return r, nil
	}
	if s.def != nil {
		return *s.def, nil
	}
	return Reply{Text: "(no scripted reply)"}, nil
}

func (s *Server) fail(w http.ResponseWriter, r Refusal) {
	body := r.Body
	if body == nil {
		body = s.p.Error(r)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(r.Status)
	w.Write(body)
}

// nextCallNumber reserves k tool call numbers.
func (s *Server) nextCallNumber(k int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.calls
	s.calls += k
	return n
}

// digest is a short stable token derived from parts, for made-up
// signatures and reasoning that a test can recognise.
func digest(parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return fmt.Sprintf("%x", h[:24])
}
