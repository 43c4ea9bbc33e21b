package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeHTTP is a streamable HTTP server written for the tests: it
// initializes a session "sess-1", accepts notifications and answers,
// refuses the standalone stream unless listen is set, and passes every
// other request to answer. It records what it received.
type fakeHTTP struct {
	answer func(w http.ResponseWriter, m message)
	listen func(w http.ResponseWriter) // the standalone GET stream
	notice func(m message)             // a notification or an answer

	mu   sync.Mutex
	gone bool // the session ended: 404 from now on
	seen []seenRequest
}

type seenRequest struct {
	method string
	header http.Header
	body   string
}

const fakeSession = "sess-1"

func (f *fakeHTTP) end() {
	f.mu.Lock()
	f.gone = true
	f.mu.Unlock()
}

func (f *fakeHTTP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.seen = append(f.seen, seenRequest{r.Method, r.Header.Clone(), string(body)})
	gone := f.gone
	f.mu.Unlock()
	if r.Header.Get(headerSessionID) == fakeSession && gone {
		http.Error(w, "session not found", http.StatusNotFound)
		return
	}
	switch r.Method {
	case http.MethodGet:
		if f.listen == nil {
			http.Error(w, "no standalone stream", http.StatusMethodNotAllowed)
			return
		}
		f.listen(w)
		return
	case http.MethodDelete:
		w.WriteHeader(http.StatusNoContent)
		return
	}
	var m message
	if err := json.Unmarshal(body, &m); err != nil {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	switch {
	case m.Method == "initialize":
		w.Header().Set(headerSessionID, fakeSession)
		writeJSON(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"fake","version":"1"}}}`, m.ID))
	case !m.hasID() || m.Method == "":
		if f.notice != nil {
			f.notice(m)
		}
		w.WriteHeader(http.StatusAccepted)
	default:
		f.answer(w, m)
	}
}

func (f *fakeHTTP) requests() []seenRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.seen)
}

func writeJSON(w http.ResponseWriter, body string) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, body)
}

// dialFake starts f and initializes a session with it, with a secret
// header.
func dialFake(t *testing.T, f *fakeHTTP) *session {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	cfg := Server{Name: "fake", URL: srv.URL + "/mcp?key=url-secret", Headers: map[string]string{"Authorization": "Bearer header-secret"}}
	s, err := dial(t.Context(), cfg, "1.0", nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.close() })
	return s
}

func TestHTTPHeadersAndClose(t *testing.T) {
	// The standalone stream is opened in the background; the session is
	// closed only once it has been asked for, so that every request is in.
	opened := make(chan struct{})
	var once sync.Once
	f := &fakeHTTP{answer: func(w http.ResponseWriter, m message) {
		writeJSON(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"a"}]}}`, m.ID))
	}, listen: func(w http.ResponseWriter) {
		once.Do(func() { close(opened) })
		http.Error(w, "no standalone stream", http.StatusMethodNotAllowed)
	}}
	s := dialFake(t, f)
	select {
	case <-opened:
	case <-time.After(30 * time.Second):
		t.Fatal("the client never asked for the standalone stream")
	}
	if tools, err := s.listTools(t.Context()); err != nil || len(tools) != 1 {
		t.Fatalf("listTools = %v, %v", tools, err)
	}
	_ = s.close()
	var methods []string
	for i, r := range f.requests() {
		what := r.method
		if r.method == http.MethodPost {
			var m message
			_ = json.Unmarshal([]byte(r.body), &m)
			what += " " + m.Method
			if r.header.Get("Content-Type") != "application/json" || r.header.Get("Accept") != "application/json, text/event-stream" {
				t.Errorf("%s: Content-Type %q, Accept %q", what, r.header.Get("Content-Type"), r.header.Get("Accept"))
			}
		}
		methods = append(methods, what)
		if r.header.Get("Authorization") != "Bearer header-secret" {
			t.Errorf("%s without the configured header", what)
		}
		wantSession, wantVersion := fakeSession, "2025-06-18"
		if i == 0 {
			wantSession, wantVersion = "", ""
		}
		if r.header.Get(headerSessionID) != wantSession || r.header.Get(headerVersion) != wantVersion {
			t.Errorf("%s: session %q, version %q; want %q, %q", what, r.header.Get(headerSessionID), r.header.Get(headerVersion), wantSession, wantVersion)
		}
	}
	// The GET may come before or after the notice: they race.
	if len(methods) != 5 || methods[0] != "POST initialize" || !strings.Contains(strings.Join(methods[1:3], ","), "POST notifications/initialized") ||
		!strings.Contains(strings.Join(methods[1:3], ","), "GET") || methods[3] != "POST tools/list" || methods[4] != "DELETE" {
		t.Errorf("requests = %q", methods)
	}
}

func TestHTTPSessionGone(t *testing.T) {
	f := &fakeHTTP{}
	f.answer = func(w http.ResponseWriter, m message) {
		f.end() // this call is the session's last
		writeJSON(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"tools":[]}}`, m.ID))
	}
	s := dialFake(t, f)
	if _, err := s.listTools(t.Context()); err != nil {
		t.Fatal(err)
	}
	_, err := s.listTools(t.Context())
	var rpc *rpcError
	if !errors.Is(err, errSessionGone) || errors.As(err, &rpc) {
		t.Fatalf("call after the session ended: error %v, want %v", err, errSessionGone)
	}
	wait(t, s.done())
	if !errors.Is(s.err(), errSessionGone) {
		t.Errorf("session ended with %v", s.err())
	}
	_ = s.close()
	if reqs := f.requests(); reqs[len(reqs)-1].method == http.MethodDelete {
		t.Errorf("DELETE sent for a session the server had ended")
	}
}

func TestHTTPSessionGoneOnTheStandaloneStream(t *testing.T) {
	// The server ends the session once initialized; the client learns it
	// from the standalone stream, opened again after an empty one.
	f := &fakeHTTP{answer: func(http.ResponseWriter, message) {}}
	f.notice = func(message) { f.end() }
	f.listen = func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, ": ok\n\n")
	}
	s := dialFake(t, f)
	wait(t, s.done())
	if !errors.Is(s.err(), errSessionGone) {
		t.Errorf("session ended with %v", s.err())
	}
}

func TestHTTPEventStreamAnswer(t *testing.T) {
	f := &fakeHTTP{answer: func(w http.ResponseWriter, m message) {
		w.Header().Set("Content-Type", "text/event-stream")
		// A priming event, a comment, a server request, a notice, then the
		// answer split over two data lines, with CRLF line ends.
		fmt.Fprint(w, "id: 0\r\ndata:\r\n\r\n: keep-alive\r\n\r\n")
		fmt.Fprint(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"srv-1\",\"method\":\"ping\"}\n\n")
		fmt.Fprint(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n")
		fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\n", m.ID)
		fmt.Fprint(w, "data: \"result\":{\"content\":[{\"type\":\"text\",\"text\":\"streamed\"}]}}\n\n")
	}}
	s := dialFake(t, f)
	res, err := s.callTool(t.Context(), "x", nil)
	if err != nil || len(res.Content) != 1 || res.Content[0].Text != "streamed" {
		t.Fatalf("callTool = %+v, %v", res, err)
	}
	wait(t, s.toolsChanged())
	reqs := f.requests()
	if !slices.ContainsFunc(reqs, func(r seenRequest) bool { return r.body == `{"jsonrpc":"2.0","id":"srv-1","result":{}}` }) {
		t.Errorf("the server's ping was not answered; it got %+v", reqs)
	}
}

func TestHTTPBounds(t *testing.T) {
	big := strings.Repeat("a", maxMessage)
	tests := []struct {
		name   string
		answer func(w http.ResponseWriter, m message)
		want   string // in the error
	}{
		{"JSON body", func(w http.ResponseWriter, m message) {
			writeJSON(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"pad":"%s"}}`, m.ID, big))
		}, errTooLarge.Error()},
		{"event", func(w http.ResponseWriter, m message) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"pad\":\"%s\"}}\n\n", m.ID, big)
		}, errTooLarge.Error()},
		{"stream without an answer", func(w http.ResponseWriter, m message) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, ": nothing\n\n")
		}, errNoAnswer.Error()},
		{"refusal with the secrets in its body", func(w http.ResponseWriter, m message) {
			http.Error(w, "denied: Bearer header-secret for key=url-secret", http.StatusForbidden)
		}, "the server answered HTTP 403 Forbidden: denied: REDACTED for key=REDACTED"},
		{"JSON-RPC error in a refusal", func(w http.ResponseWriter, m message) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":"no such tool"}}`, m.ID)
		}, "no such tool (code -32602)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := dialFake(t, &fakeHTTP{answer: tt.answer})
			_, err := s.callTool(t.Context(), "x", json.RawMessage(`{}`))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("callTool: error %v, want %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "header-secret") || strings.Contains(err.Error(), "url-secret") {
				t.Errorf("a secret in the error: %v", err)
			}
		})
	}
}
