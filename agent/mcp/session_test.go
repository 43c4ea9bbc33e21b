package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// peer is the server end of a session over pipes, scripted by a test.
type peer struct {
	t   *testing.T
	in  *bufio.Reader  // what the client wrote
	out *io.PipeWriter // to the client
}

// pipeSession is a session over pipes to a scripted peer; both ends are
// closed when the test ends. The tests run in synctest bubbles, which
// fail when a goroutine outlives the session.
func pipeSession(t *testing.T) (*session, *peer) {
	t.Helper()
	toServerR, toServerW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	s := newSession(slog.New(slog.DiscardHandler))
	st := newStream(toClientR, toServerW)
	s.t = st
	st.start(s.handle)
	p := &peer{t: t, in: bufio.NewReaderSize(toServerR, 1<<20), out: toClientW}
	t.Cleanup(func() {
		_ = toServerR.Close()
		_ = toClientW.Close()
		_ = s.close()
	})
	return s, p
}

// read is the next message the client sent.
func (p *peer) read() message {
	p.t.Helper()
	line, err := p.in.ReadBytes('\n')
	if err != nil {
		p.t.Fatalf("peer read: %v", err)
	}
	var m message
	if err := json.Unmarshal(line, &m); err != nil {
		p.t.Fatalf("peer read %q: %v", line, err)
	}
	return m
}

// write sends lines to the client, each ended by a newline.
func (p *peer) write(lines ...string) {
	p.t.Helper()
	for _, l := range lines {
		if _, err := io.WriteString(p.out, l+"\n"); err != nil {
			p.t.Fatalf("peer write: %v", err)
		}
	}
}

// result is what a call in the background returned.
type result struct {
	out map[string]any
	err error
}

// callAsync runs s.call in the background.
func callAsync(ctx context.Context, s *session, method string) <-chan result {
	ch := make(chan result, 1)
	go func() {
		var out map[string]any
		err := s.call(ctx, method, map[string]any{}, &out)
		ch <- result{out, err}
	}()
	return ch
}

func wait[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(60 * time.Second):
		t.Fatal("nothing within 60 s")
		panic("unreachable")
	}
}

func TestSessionAnswersOutOfOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, p := pipeSession(t)
		first := callAsync(t.Context(), s, "first")
		a := p.read()
		second := callAsync(t.Context(), s, "second")
		b := p.read()
		if a.Method != "first" || b.Method != "second" || string(a.ID) == string(b.ID) {
			t.Fatalf("requests %+v and %+v", a, b)
		}
		p.write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"who":"second"}}`, b.ID),
			fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":"bad first"}}`, a.ID))
		if r := wait(t, second); r.err != nil || r.out["who"] != "second" {
			t.Errorf("second = %v, %v", r.out, r.err)
		}
		r := wait(t, first)
		var rpc *rpcError
		if !errors.As(r.err, &rpc) || rpc.Code != -32602 || !strings.Contains(r.err.Error(), "bad first") {
			t.Errorf("first: error %v, want the server's error -32602", r.err)
		}
	})
}

func TestSessionAnswersServerRequests(t *testing.T) {
	tests := []struct {
		name, request, want string
	}{
		{"ping", `{"jsonrpc":"2.0","id":7,"method":"ping"}`, `{"jsonrpc":"2.0","id":7,"result":{}}`},
		{"unknown method", `{"jsonrpc":"2.0","id":"s-1","method":"sampling/createMessage","params":{"messages":[]}}`,
			`{"jsonrpc":"2.0","id":"s-1","error":{"code":-32601,"message":"method not found: sampling/createMessage"}}`},
		{"roots", `{"jsonrpc":"2.0","id":0,"method":"roots/list"}`,
			`{"jsonrpc":"2.0","id":0,"error":{"code":-32601,"message":"method not found: roots/list"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				_, p := pipeSession(t)
				p.write(tt.request)
				line, err := p.in.ReadString('\n')
				if err != nil {
					t.Fatal(err)
				}
				if got := strings.TrimSpace(line); got != tt.want {
					t.Errorf("answer = %s, want %s", got, tt.want)
				}
			})
		})
	}
}

func TestSessionCancelledCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, p := pipeSession(t)
		ctx, cancel := context.WithCancel(t.Context())
		call := callAsync(ctx, s, "tools/call")
		req := p.read()
		cancel()
		if r := wait(t, call); !errors.Is(r.err, context.Canceled) {
			t.Fatalf("cancelled call: error %v", r.err)
		}
		note := p.read()
		var params struct {
			RequestID json.RawMessage `json:"requestId"`
			Reason    string          `json:"reason"`
		}
		if err := json.Unmarshal(note.Params, &params); err != nil || note.Method != "notifications/cancelled" ||
			note.hasID() || string(params.RequestID) != string(req.ID) || params.Reason == "" {
			t.Fatalf("after the cancel the server got %+v (params %s)", note, note.Params)
		}
		// The late answer is dropped; the next call gets its own.
		next := callAsync(t.Context(), s, "tools/list")
		again := p.read()
		p.write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"late":true}}`, req.ID),
			fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"late":false}}`, again.ID))
		if r := wait(t, next); r.err != nil || r.out["late"] != false {
			t.Errorf("next call = %v, %v", r.out, r.err)
		}
	})
}

func TestSessionBrokenLines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, p := pipeSession(t)
		call := callAsync(t.Context(), s, "tools/list")
		req := p.read()
		// A stray line and an answer to nobody do not break the session.
		p.write("server starting...", `{"jsonrpc":"2.0","id":999,"result":{}}`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`,
			fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"ok":true}}`, req.ID))
		if r := wait(t, call); r.err != nil || r.out["ok"] != true {
			t.Fatalf("call after stray lines = %v, %v", r.out, r.err)
		}

		// A line past the bound does.
		call = callAsync(t.Context(), s, "tools/list")
		p.read()
		wrote := make(chan struct{})
		go func() {
			defer close(wrote)
			_, _ = io.WriteString(p.out, `{"jsonrpc":"2.0","id":2,"result":{"x":"`+strings.Repeat("a", maxMessage)+`"}}`+"\n")
		}()
		defer func() { _ = p.out.Close(); <-wrote }()
		r := wait(t, call)
		var rpc *rpcError
		if r.err == nil || errors.As(r.err, &rpc) {
			t.Fatalf("call during an overlong line: error %v, want a broken connection", r.err)
		}
		wait(t, s.done())
		if !errors.Is(s.err(), errTooLarge) {
			t.Errorf("session ended with %v, want %v", s.err(), errTooLarge)
		}
	})
}

func TestSessionToolsChanged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, p := pipeSession(t)
		p.write(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hi"}}`,
			`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`,
			`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
		wait(t, s.toolsChanged())
		// The client still answers: the notices did not block it.
		p.write(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
		if m := p.read(); string(m.ID) != "1" || string(m.Result) != "{}" {
			t.Errorf("ping answer %+v", m)
		}
	})
}

func TestSessionInitialize(t *testing.T) {
	tests := []struct {
		name, version, wantErr string
	}{
		{"newest", "2025-11-25", ""},
		{"older", "2025-06-18", ""},
		{"unknown", "2099-01-01", `the server speaks MCP revision "2099-01-01"; nanobot speaks 2025-11-25`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s, p := pipeSession(t)
				done := make(chan error, 1)
				go func() { done <- s.initialize(t.Context(), "1.2.3") }()
				req := p.read()
				var params struct {
					ProtocolVersion string            `json:"protocolVersion"`
					ClientInfo      map[string]string `json:"clientInfo"`
					Capabilities    map[string]any    `json:"capabilities"`
				}
				if err := json.Unmarshal(req.Params, &params); err != nil || req.Method != "initialize" || params.ProtocolVersion != "2025-11-25" ||
					params.ClientInfo["name"] != "nanobot" || params.ClientInfo["version"] != "1.2.3" || params.Capabilities == nil {
					t.Fatalf("initialize request %+v (params %s)", req, req.Params)
				}
				p.write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":%q,"capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"x","version":"1"}}}`, req.ID, tt.version))
				if tt.wantErr != "" {
					if err := wait(t, done); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
						t.Errorf("initialize: error %v, want %q", err, tt.wantErr)
					}
					return
				}
				if m := p.read(); m.Method != "notifications/initialized" || m.hasID() {
					t.Errorf("after initialize the server got %+v", m)
				}
				if err := wait(t, done); err != nil {
					t.Errorf("initialize: %v", err)
				}
			})
		})
	}
}

func TestSessionListsEveryPage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, p := pipeSession(t)
		done := make(chan []toolInfo, 1)
		go func() {
			tools, err := s.listTools(t.Context())
			if err != nil {
				t.Error(err)
			}
			done <- tools
		}()
		req := p.read()
		if string(req.Params) != "{}" {
			t.Errorf("first page params %s", req.Params)
		}
		p.write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"a","inputSchema":{"type":"object"}}],"nextCursor":"page2"}}`, req.ID))
		req = p.read()
		if string(req.Params) != `{"cursor":"page2"}` {
			t.Errorf("second page params %s", req.Params)
		}
		p.write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"b","description":"B."}]}}`, req.ID))
		tools := wait(t, done)
		if len(tools) != 2 || tools[0].Name != "a" || string(tools[0].InputSchema) != `{"type":"object"}` || tools[1].Description != "B." {
			t.Errorf("tools = %+v", tools)
		}
	})
}

func TestRenderResult(t *testing.T) {
	tests := []struct {
		name, result, want string
	}{
		{"text", `{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}`, "a\nb"},
		{"media", `{"content":[{"type":"image","mimeType":"image/png","data":"iVBORw0KGgo="},{"type":"audio","mimeType":"audio/wav","data":"AAAA"}]}`,
			"[image: image/png, 8 bytes, not shown]\n[audio: audio/wav, 3 bytes, not played]"},
		{"resources", `{"content":[{"type":"resource_link","uri":"file:///a","name":"a"},{"type":"resource","resource":{"uri":"file:///b","text":"B"}},{"type":"resource","resource":{"uri":"file:///c","mimeType":"application/pdf","blob":"AAECAw=="}}]}`,
			"[resource link: file:///a a]\n[resource file:///b]\nB\n[resource: file:///c, application/pdf, 4 bytes, not shown]"},
		{"unknown", `{"content":[{"type":"hologram"}]}`, "[hologram content, not shown]"},
		{"structured", `{"content":[],"structuredContent":{ "n" : 1 }}`, `{"n":1}`},
		{"empty", `{"content":[]}`, "(no output)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var res callResult
			if err := json.Unmarshal([]byte(tt.result), &res); err != nil {
				t.Fatal(err)
			}
			if got := renderResult(&res); got != tt.want {
				t.Errorf("renderResult(%s) = %q, want %q", tt.result, got, tt.want)
			}
		})
	}
}
