package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// protocolVersions are the MCP revisions the client speaks, newest first:
// it asks for the first and accepts a server that answers with any of
// them. They differ in what a server may offer, not in the initialize,
// tools/list and tools/call messages the client sends.
var protocolVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// maxMessage bounds one message read from a server: a stdio line, a JSON
// body or the data of an SSE event. Past it the connection is broken.
const maxMessage = 4 << 20

// maxPages bounds the pages of a tools/list, against a server whose
// cursor never ends.
const maxPages = 100

// noticeTimeout bounds sending what no caller waits for: the answer to a
// server's request, a cancellation.
const noticeTimeout = 5 * time.Second

// JSON-RPC error codes the client sends.
const codeMethodNotFound = -32601

// A transport carries the messages of one session to a server and those
// of the server back to the session's handle function.
type transport interface {
	// send delivers one message. With call set (a request), a transport
	// that reads the answer as part of sending (HTTP) fails when the
	// server gave none.
	send(ctx context.Context, msg []byte, call bool) error
	// ready tells the transport the session is initialized with version.
	ready(version string)
	// done is closed when the connection has ended; err then says why.
	done() <-chan struct{}
	err() error
	// close ends the connection and waits for everything it started.
	close() error
}

// session is a connection to one server: JSON-RPC 2.0 over a transport,
// initialized, with calls matched to their answers and the server's own
// requests answered.
type session struct {
	t   transport
	log *slog.Logger

	mu      sync.Mutex
	nextID  int64
	waiting map[string]chan *message // by request id
	closed  bool                     // no new notices once set

	changed chan struct{}  // holds a token when the server's tools changed
	notices sync.WaitGroup // cancellations being sent
}

func newSession(log *slog.Logger) *session {
	return &session{log: log, waiting: map[string]chan *message{}, changed: make(chan struct{}, 1)}
}

// dial starts or reaches the server of cfg and initializes a session with
// it. A stdio server's stderr goes to stderr.
func dial(ctx context.Context, cfg Server, version string, stderr io.Writer, log *slog.Logger) (*session, error) {
	s := newSession(log)
	if cfg.URL != "" {
		s.t = newHTTPTransport(cfg.URL, cfg.Headers, s.handle)
	} else {
		t, err := startStdio(cfg, stderr)
		if err != nil {
			return nil, err
		}
		s.t = t
		t.start(s.handle)
	}
	if err := s.initialize(ctx, version); err != nil {
		_ = s.close()
		return nil, err
	}
	return s, nil
}

// message is any JSON-RPC message: a request has a method and an id, a
// notification a method only, a response an id and a result or an error.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

// hasID tells a request or a response from a notification (or from an
// error about a message the server could not read, whose id is null).
func (m *message) hasID() bool { return len(m.ID) > 0 && string(m.ID) != "null" }

// rpcError is a server's error answer to a call: the server refused it,
// the connection is fine.
type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// maxErrorText bounds the text of a server's error that is passed on.
const maxErrorText = 2000

func (e *rpcError) Error() string {
	return fmt.Sprintf("%s (code %d)", truncate(e.Message, maxErrorText), e.Code)
}

// truncate cuts s to at most n bytes on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

var (
	errClosed      = errors.New("the connection was closed")
	errNoAnswer    = errors.New("the server ended its reply without answering")
	errTooLarge    = fmt.Errorf("the server sent a message larger than %d MB", maxMessage>>20)
	errSessionGone = errors.New("the server ended the session (HTTP 404)")
)

// call sends a request and decodes its answer's result into result. The
// error is an *rpcError when the server answered with one; any other
// means the connection failed or ctx ended. When ctx ends first the
// server is told the request is cancelled, and a late answer is dropped.
func (s *session) call(ctx context.Context, method string, params, result any) error {
	s.mu.Lock()
	s.nextID++
	id := strconv.FormatInt(s.nextID, 10)
	answer := make(chan *message, 1)
	s.waiting[id] = answer
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.waiting, id)
		s.mu.Unlock()
	}()

	msg, err := encode(message{ID: json.RawMessage(id), Method: method}, params)
	if err != nil {
		return fmt.Errorf("encode %s: %w", method, err)
	}
	err = s.t.send(ctx, msg, true)
	if err == nil {
		select {
		case m := <-answer:
			return decodeAnswer(method, m, result)
		default:
		}
		select {
		case m := <-answer:
			return decodeAnswer(method, m, result)
		case <-ctx.Done():
		case <-s.t.done():
			return fmt.Errorf("%s: %w", method, s.t.err())
		}
	}
	if ctx.Err() == nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	if method != "initialize" { // the one request a client must not cancel
		s.mu.Lock()
		if !s.closed {
			s.notices.Add(1)
			go s.cancelled(id, ctx.Err())
		}
		s.mu.Unlock()
	}
	return fmt.Errorf("%s: %w", method, ctx.Err())
}

// encode is m with params as one line of JSON.
func encode(m message, params any) ([]byte, error) {
	m.JSONRPC = "2.0"
	if params != nil {
		p, err := json.Marshal(params)
		if err != nil {
			return nil, err
		}
		m.Params = p
	}
	return json.Marshal(m)
}

func decodeAnswer(method string, m *message, result any) error {
	if m.Error != nil {
		return m.Error
	}
	if result == nil || len(m.Result) == 0 {
		return nil
	}
	if err := json.Unmarshal(m.Result, result); err != nil {
		return fmt.Errorf("decode the answer to %s: %w", method, err)
	}
	return nil
}

// cancelled tells the server a request of ours is no longer awaited. It
// runs on its own, so that a server slow to take it does not hold up the
// caller.
func (s *session) cancelled(id string, why error) {
	defer s.notices.Done()
	ctx, cancel := context.WithTimeout(context.Background(), noticeTimeout)
	defer cancel()
	params := map[string]any{"requestId": json.RawMessage(id), "reason": why.Error()}
	if err := s.notify(ctx, "notifications/cancelled", params); err != nil {
		s.log.Debug("mcp cancellation not sent", "err", err)
	}
}

// notify sends a notification.
func (s *session) notify(ctx context.Context, method string, params any) error {
	msg, err := encode(message{Method: method}, params)
	if err != nil {
		return fmt.Errorf("encode %s: %w", method, err)
	}
	if err := s.t.send(ctx, msg, false); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	return nil
}

// handle takes one message from the server, from a goroutine of the
// transport, and reports whether it was an answer.
func (s *session) handle(raw []byte) bool {
	var m message
	if err := json.Unmarshal(raw, &m); err != nil {
		s.log.Debug("mcp message not understood; dropped", "err", err, "bytes", len(raw))
		return false
	}
	switch {
	case m.Method == "" && m.hasID():
		key := string(bytes.TrimSpace(m.ID))
		s.mu.Lock()
		answer := s.waiting[key]
		delete(s.waiting, key)
		s.mu.Unlock()
		if answer == nil {
			s.log.Debug("mcp answer nobody waits for; dropped", "id", truncate(key, 40))
		} else {
			answer <- &m // buffered, and only one message per id gets here
		}
		return true
	case m.Method == "":
		s.log.Debug("mcp error without a request id; dropped", "err", m.Error)
	case m.hasID():
		s.answer(&m)
	case m.Method == "notifications/tools/list_changed":
		select {
		case s.changed <- struct{}{}:
		default: // a relist is already due
		}
	}
	return false
}

// answer replies to a request of the server: a ping with an empty
// result, anything else (sampling, roots, elicitation: capabilities the
// client does not claim) with method not found.
func (s *session) answer(req *message) {
	out := message{ID: req.ID}
	if req.Method == "ping" {
		out.Result = json.RawMessage("{}")
	} else {
		out.Error = &rpcError{Code: codeMethodNotFound, Message: "method not found: " + truncate(req.Method, 100)}
	}
	msg, err := encode(out, nil)
	if err != nil { // an id that is not JSON cannot get here: it was decoded
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), noticeTimeout)
	defer cancel()
	if err := s.t.send(ctx, msg, false); err != nil {
		s.log.Debug("mcp answer to the server not sent", "method", truncate(req.Method, 100), "err", err)
	}
}

// initialize is the handshake: the client's revision and name, the
// server's revision checked, then notifications/initialized.
func (s *session) initialize(ctx context.Context, version string) error {
	params := map[string]any{
		"protocolVersion": protocolVersions[0],
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]string{"name": "nanobot", "version": version},
	}
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if err := s.call(ctx, "initialize", params, &res); err != nil {
		return err
	}
	if !slices.Contains(protocolVersions, res.ProtocolVersion) {
		return fmt.Errorf("the server speaks MCP revision %q; nanobot speaks %s",
			truncate(res.ProtocolVersion, 40), strings.Join(protocolVersions, ", "))
	}
	s.t.ready(res.ProtocolVersion)
	return s.notify(ctx, "notifications/initialized", map[string]any{})
}

// toolInfo is a tool as the server describes it.
type toolInfo struct {
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
	// Annotations are the server's hints about the tool's behaviour
	// (MCP 2025-03-26 and later); only readOnlyHint is read.
	Annotations struct {
		ReadOnlyHint bool `json:"readOnlyHint,omitempty"`
	} `json:"annotations,omitzero"`
}

// listTools reads every page of the server's tools.
func (s *session) listTools(ctx context.Context) ([]toolInfo, error) {
	var all []toolInfo
	params := map[string]any{}
	for range maxPages {
		var page struct {
			Tools      []toolInfo `json:"tools"`
			NextCursor string     `json:"nextCursor"`
		}
		if err := s.call(ctx, "tools/list", params, &page); err != nil {
			return nil, err
		}
		all = append(all, page.Tools...)
		if page.NextCursor == "" {
			return all, nil
		}
		params = map[string]any{"cursor": page.NextCursor}
	}
	return nil, fmt.Errorf("tools/list: more than %d pages", maxPages)
}

// callResult is the answer to tools/call.
type callResult struct {
	Content           []content       `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError,omitempty"`
}

// content is one part of a result: text, image, audio, resource_link or
// resource, with the fields of each.
type content struct {
	Type     string    `json:"type"`
	Text     string    `json:"text,omitempty"`
	MIMEType string    `json:"mimeType,omitempty"`
	Data     string    `json:"data,omitempty"` // base64
	URI      string    `json:"uri,omitempty"`
	Name     string    `json:"name,omitempty"`
	Resource *resource `json:"resource,omitempty"`
}

// resource is the content of an embedded resource: text or a base64 blob.
type resource struct {
	URI      string `json:"uri"`
	MIMEType string `json:"mimeType,omitempty"`
	Text     string `json:"text,omitempty"`
	Blob     string `json:"blob,omitempty"`
}

// callTool runs the server's tool name with args, a JSON object.
func (s *session) callTool(ctx context.Context, name string, args json.RawMessage) (*callResult, error) {
	if len(bytes.TrimSpace(args)) == 0 || string(bytes.TrimSpace(args)) == "null" {
		args = json.RawMessage("{}")
	}
	var res callResult
	if err := s.call(ctx, "tools/call", map[string]any{"name": name, "arguments": args}, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// toolsChanged yields a token when the server said its tools changed.
func (s *session) toolsChanged() <-chan struct{} { return s.changed }

// done is closed when the connection has ended; err says why.
func (s *session) done() <-chan struct{} { return s.t.done() }
func (s *session) err() error            { return s.t.err() }

// close ends the session; for stdio it closes the server's stdin, then
// sends SIGTERM, then SIGKILL, and reaps it. It is safe to call twice.
func (s *session) close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	err := s.t.close()
	s.notices.Wait() // they end with the transport
	return err
}
