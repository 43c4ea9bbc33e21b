// Package openaitest provides test doubles of an OpenAI-compatible model
// API: Server, an HTTP stub on 127.0.0.1 that scripts replies and records
// every request, and Scripted, an in-process agent.Provider with the same
// script semantics for benchmarks that should not pay for HTTP.
package openaitest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/nanobot-go/nanobot/agent"
)

// Reply is one scripted answer of the model.
type Reply struct {
	// Text is the assistant's content.
	Text string
	// ToolCalls are returned verbatim; an empty ID is sent as no id at all.
	ToolCalls []agent.ToolCall
	// Status, when not 0 or 200, fails the request with that HTTP status.
	Status int
	// RetryAfter is sent as the Retry-After header when set.
	RetryAfter string
	// Body, when set, replaces the whole response body (malformed replies,
	// empty choices, custom error bodies).
	Body string
	// Delay holds the reply back; it ends early when the client gives up.
	Delay time.Duration
	// Hold, when set, holds the reply back until it is closed or the client
	// gives up.
	Hold <-chan struct{}
	// Usage is reported in the reply; its CachedTokens, when not 0, as
	// usage.prompt_tokens_details.cached_tokens, where OpenAI puts them.
	Usage agent.Usage
	// Cut sends the status line, the headers and half the body, then
	// closes the connection: a reply broken off mid-response.
	Cut bool
}

// script is the reply queue shared by Server and Scripted.
type script struct {
	queue []Reply
	def   *Reply
}

func (s *script) next() Reply {
	if len(s.queue) > 0 {
		r := s.queue[0]
		s.queue = s.queue[1:]
		return r
	}
	if s.def != nil {
		return *s.def
	}
	return Reply{Text: "ok"}
}

// wait holds a reply back as its Delay and Hold say. It returns false when
// ctx or stop ended the wait first.
func (r Reply) wait(ctx context.Context, stop <-chan struct{}) bool {
	if r.Delay > 0 {
		t := time.NewTimer(r.Delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return false
		case <-stop:
			return false
		}
	}
	if r.Hold != nil {
		select {
		case <-r.Hold:
		case <-ctx.Done():
			return false
		case <-stop:
			return false
		}
	}
	return true
}

// Transcription is one request received on /audio/transcriptions.
type Transcription struct {
	Model    string
	Filename string
	Audio    []byte
}

// Server is an OpenAI-compatible HTTP stub. It is safe for concurrent use.
type Server struct {
	srv  *httptest.Server
	stop chan struct{} // closed at cleanup so held replies let Close finish

	mu             sync.Mutex
	script         script
	requests       []goopenai.ChatCompletionRequest
	bodies         [][]byte
	authorizations []string
	transcript     string
	transcriptions []Transcription
	arrived        chan struct{} // closed and replaced whenever a request is recorded
	fn             func(goopenai.ChatCompletionRequest) Reply
}

// NewServer starts a stub on 127.0.0.1 that is closed when the test ends.
func NewServer(t testing.TB) *Server {
	t.Helper()
	s := &Server{
		stop:       make(chan struct{}),
		transcript: "transcribed text",
		arrived:    make(chan struct{}),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", s.route)
	s.srv = httptest.NewServer(mux)
	t.Cleanup(func() {
		close(s.stop)
		s.srv.Close()
	})
	return s
}

// URL is the base URL to configure a client with; it ends in /v1.
func (s *Server) URL() string { return s.srv.URL + "/v1" }

// Script queues replies, answered in order.
func (s *Server) Script(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script.queue = append(s.script.queue, replies...)
}

// SetDefault sets the reply used when the script is empty (by default the
// text "ok").
func (s *Server) SetDefault(r Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script.def = &r
}

// SetFunc answers requests with f when the script is empty, before the
// default reply: a model whose answer depends on what it is asked. f is
// called without the server's lock held and may run concurrently.
func (s *Server) SetFunc(f func(req goopenai.ChatCompletionRequest) Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fn = f
}

// SetTranscription sets the text /audio/transcriptions returns.
func (s *Server) SetTranscription(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.transcript = text
}

// Requests returns every chat request received so far, in arrival order,
// including those answered with a failure status. A body that is not JSON
// is answered 400 and not recorded.
func (s *Server) Requests() []goopenai.ChatCompletionRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Bodies returns the raw JSON body of every chat request in Requests, as
// it arrived.
func (s *Server) Bodies() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.bodies)
}

// RequestCount is the number of chat requests received so far.
func (s *Server) RequestCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

// LastRequest returns the latest chat request, and false if none arrived.
func (s *Server) LastRequest() (goopenai.ChatCompletionRequest, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.requests) == 0 {
		return goopenai.ChatCompletionRequest{}, false
	}
	return s.requests[len(s.requests)-1], true
}

// WaitRequests waits until at least n chat requests have arrived and
// returns them all.
func (s *Server) WaitRequests(ctx context.Context, n int) ([]goopenai.ChatCompletionRequest, error) {
	for {
		s.mu.Lock()
		if len(s.requests) >= n {
			reqs := slices.Clone(s.requests)
			s.mu.Unlock()
			return reqs, nil
		}
		arrived := s.arrived
		s.mu.Unlock()
		select {
		case <-arrived:
		case <-ctx.Done():
			return nil, fmt.Errorf("wait for %d model requests (got %d): %w", n, s.RequestCount(), ctx.Err())
		}
	}
}

// Authorizations returns the Authorization header of every request
// (chat and audio), in arrival order.
func (s *Server) Authorizations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.authorizations)
}

// Transcriptions returns every transcription request received.
func (s *Server) Transcriptions() []Transcription {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.transcriptions)
}

func (s *Server) route(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method != http.MethodPost:
		writeError(w, http.StatusMethodNotAllowed, "method not allowed")
	case strings.HasSuffix(r.URL.Path, "/chat/completions"):
		s.chat(w, r)
	case strings.HasSuffix(r.URL.Path, "/audio/transcriptions"):
		s.transcribe(w, r)
	default:
		writeError(w, http.StatusNotFound, "unknown endpoint "+r.URL.Path)
	}
}

// recordLocked notes an arrival; s.mu must be held.
func (s *Server) recordLocked(r *http.Request) {
	s.authorizations = append(s.authorizations, r.Header.Get("Authorization"))
	close(s.arrived)
	s.arrived = make(chan struct{})
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	var req goopenai.ChatCompletionRequest
	body, err := io.ReadAll(r.Body)
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid JSON body: "+err.Error())
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.bodies = append(s.bodies, body)
	s.recordLocked(r)
	var reply Reply
	fn := s.fn
	if len(s.script.queue) > 0 || fn == nil {
		reply, fn = s.script.next(), nil
	}
	s.mu.Unlock()
	if fn != nil {
		reply = fn(req)
	}

	if !reply.wait(r.Context(), s.stop) {
		return
	}
	if reply.RetryAfter != "" {
		w.Header().Set("Retry-After", reply.RetryAfter)
	}
	status := reply.Status
	if status == 0 {
		status = http.StatusOK
	}
	if reply.Cut {
		cut(w, completion(req.Model, reply))
		return
	}
	if reply.Body != "" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, reply.Body)
		return
	}
	if status != http.StatusOK {
		writeError(w, status, fmt.Sprintf("scripted failure %d", status))
		return
	}
	writeJSON(w, completion(req.Model, reply))
}

// cut writes half of v as a 200 response that announces all of it, then
// closes the connection.
func cut(w http.ResponseWriter, v any) {
	body, _ := json.Marshal(v)
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(body))
	buf.Write(body[:len(body)/2])
	buf.Flush()
}

func completion(model string, r Reply) goopenai.ChatCompletionResponse {
	msg := goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleAssistant, Content: r.Text}
	finish := goopenai.FinishReasonStop
	for _, tc := range r.ToolCalls {
		msg.ToolCalls = append(msg.ToolCalls, goopenai.ToolCall{
			ID:       tc.ID,
			Type:     goopenai.ToolTypeFunction,
			Function: goopenai.FunctionCall{Name: tc.Name, Arguments: tc.Arguments},
		})
		finish = goopenai.FinishReasonToolCalls
	}
	usage := goopenai.Usage{
		PromptTokens:     r.Usage.PromptTokens,
		CompletionTokens: r.Usage.CompletionTokens,
		TotalTokens:      r.Usage.Total(),
	}
	if r.Usage.CachedTokens != 0 {
		// Providers without a prompt cache send no details at all.
		usage.PromptTokensDetails = &goopenai.PromptTokensDetails{CachedTokens: r.Usage.CachedTokens}
	}
	return goopenai.ChatCompletionResponse{
		ID:      "chatcmpl-stub",
		Object:  "chat.completion",
		Created: time.Now().Unix(),
		Model:   model,
		Choices: []goopenai.ChatCompletionChoice{{Message: msg, FinishReason: finish}},
		Usage:   usage,
	}
}

func (s *Server) transcribe(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseMultipartForm(32 << 20); err != nil {
		writeError(w, http.StatusBadRequest, "invalid multipart body: "+err.Error())
		return
	}
	var tr Transcription
	tr.Model = r.FormValue("model")
	if f, h, err := r.FormFile("file"); err == nil {
		tr.Filename = h.Filename
		tr.Audio, _ = io.ReadAll(f)
		f.Close()
	}
	s.mu.Lock()
	s.transcriptions = append(s.transcriptions, tr)
	s.recordLocked(r)
	text := s.transcript
	s.mu.Unlock()

	if tr.Model == "" || len(tr.Audio) == 0 {
		writeError(w, http.StatusBadRequest, "model and file are required")
		return
	}
	if f := r.FormValue("response_format"); f != "" && f != "json" && f != "verbose_json" {
		io.WriteString(w, text)
		return
	}
	writeJSON(w, map[string]string{"text": text})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{
		"error": map[string]string{"message": msg, "type": "stub_error"},
	})
}
