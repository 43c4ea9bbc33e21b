package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/safety"
)

// call runs tool with args marshalled to JSON.
func call(t *testing.T, tool agent.Tool, args any) (string, error) {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatalf("marshal %v: %v", args, err)
	}
	return tool.Run(t.Context(), raw)
}

// fakePolicy returns a fixed verdict and remembers what it judged.
type fakePolicy struct {
	verdict safety.Verdict
	mu      sync.Mutex
	seen    []string
}

func (p *fakePolicy) Check(command string) safety.Verdict {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen = append(p.seen, command)
	return p.verdict
}

// fakeMemory is an in-memory store for the memory tools.
type fakeMemory struct {
	mu      sync.Mutex
	docs    map[string]string
	history map[string][]HistoryHit
	limits  []int
	// messages are the transcripts, by chat, oldest first.
	messages map[string][]PastMessage
}

func newFakeMemory() *fakeMemory {
	return &fakeMemory{docs: map[string]string{}, history: map[string][]HistoryHit{}, messages: map[string][]PastMessage{}}
}

// find is Memory.Find over the fake's transcripts: messages holding the
// query, newest first.
func (m *fakeMemory) find(_ context.Context, chat, query string, limit int) ([]MessageHit, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var hits []MessageHit
	for _, msg := range slices.Backward(m.messages[chat]) {
		if strings.Contains(strings.ToLower(msg.Text), strings.ToLower(query)) && len(hits) < limit {
			hits = append(hits, MessageHit{ID: msg.ID, Role: msg.Role, At: msg.At, Snippet: msg.Text})
		}
	}
	return hits, nil
}

// read is Memory.Read over the fake's transcripts.
func (m *fakeMemory) read(_ context.Context, chat string, id int64, before, after int) ([]PastMessage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	msgs := m.messages[chat]
	i := slices.IndexFunc(msgs, func(p PastMessage) bool { return p.ID == id })
	if i < 0 {
		return nil, fmt.Errorf("message %d: %w", id, ErrNotInChat)
	}
	return slices.Clone(msgs[max(0, i-before):min(len(msgs), i+after+1)]), nil
}

func (m *fakeMemory) tools(now time.Time, maxChars int) Memory {
	return Memory{
		Scope: func(ctx context.Context) string {
			if turn, ok := agent.TurnFrom(ctx); ok {
				return "chat:" + turn.Session
			}
			return "global"
		},
		Save: func(_ context.Context, scope, doc string) error {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.docs[scope] = doc
			return nil
		},
		Append: func(_ context.Context, scope string, at time.Time, entry string) error {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.history[scope] = append(m.history[scope], HistoryHit{At: at, Text: entry})
			return nil
		},
		Search: func(_ context.Context, scope, query string, limit int) ([]HistoryHit, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.limits = append(m.limits, limit)
			var hits []HistoryHit
			for _, h := range slices.Backward(m.history[scope]) {
				if strings.Contains(strings.ToLower(h.Text), strings.ToLower(query)) && len(hits) < limit {
					hits = append(hits, h)
				}
			}
			return hits, nil
		},
		Chat: func(ctx context.Context) string {
			turn, _ := agent.TurnFrom(ctx)
			return turn.Session
		},
		Find:     m.find,
		Read:     m.read,
		MaxChars: maxChars,
		Now:      func() time.Time { return now },
	}
}

// roundTripFunc answers requests without a network.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// allTools returns every tool over dependencies that cannot do harm: the
// files live in dir, exec refuses everything, the web never leaves the
// process.
func allTools(dir string) []agent.Tool {
	web := &Web{Client: &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{
			StatusCode: http.StatusOK,
			Header:     http.Header{"Content-Type": {"text/html"}},
			Body:       io.NopCloser(strings.NewReader("<p>hello</p>")),
			Request:    r,
		}, nil
	})}}
	ts := NewFileTools(Files{Workspace: dir, Restrict: true})
	ts = append(ts, &Exec{Workspace: dir, Restrict: true, Policy: &fakePolicy{verdict: safety.Verdict{Action: safety.Deny, Category: "test", Reason: "everything is refused"}}})
	ts = append(ts, NewMemoryTools(newFakeMemory().tools(time.Now(), 0))...)
	return append(ts, web)
}

func TestSpecs(t *testing.T) {
	params := map[string]any{
		"read_file":      readFileParams{},
		"write_file":     writeFileParams{},
		"edit_file":      editFileParams{},
		"list_dir":       listDirParams{},
		"exec":           execParams{},
		"save_memory":    saveMemoryParams{},
		"search_history": searchHistoryParams{},
		"read_history":   readHistoryParams{},
		"web_fetch":      webFetchParams{},
	}
	var names []string
	for _, tool := range allTools(t.TempDir()) {
		spec := tool.Spec()
		names = append(names, spec.Name)
		t.Run(spec.Name, func(t *testing.T) {
			var schema struct {
				Type                 string                     `json:"type"`
				Properties           map[string]json.RawMessage `json:"properties"`
				Required             []string                   `json:"required"`
				AdditionalProperties *bool                      `json:"additionalProperties"`
			}
			if err := json.Unmarshal(spec.Parameters, &schema); err != nil {
				t.Fatalf("parameters are not JSON: %v", err)
			}
			if schema.Type != "object" || schema.AdditionalProperties == nil || *schema.AdditionalProperties {
				t.Errorf("schema type %q, additionalProperties %v; want object, false", schema.Type, schema.AdditionalProperties)
			}
			if spec.Description == "" {
				t.Error("no description")
			}
			var props []string
			for name := range schema.Properties {
				props = append(props, name)
			}
			slices.Sort(props)
			fields := fieldNames(params[spec.Name])
			slices.Sort(fields)
			if diff := cmp.Diff(fields, props); diff != "" {
				t.Errorf("schema properties differ from the decoded fields (-fields +schema):\n%s", diff)
			}
			for _, r := range schema.Required {
				if _, ok := schema.Properties[r]; !ok {
					t.Errorf("required %q is not a property", r)
				}
			}
		})
	}
	want := []string{"read_file", "write_file", "edit_file", "list_dir", "exec", "save_memory", "search_history", "read_history", "web_fetch"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("tool names (-want +got):\n%s", diff)
	}
}

func TestStrictArguments(t *testing.T) {
	// A string field of each tool, to give the wrong type.
	field := map[string]string{
		"read_file": "path", "write_file": "content", "edit_file": "old_text", "list_dir": "path",
		"exec": "command", "save_memory": "history_entry", "search_history": "query", "web_fetch": "url",
		"read_history": "", // takes no string
	}
	tests := []struct {
		name string
		args string // %s is the string field
		want string
	}{
		{"unknown field", `{"bogus": 1}`, `unknown field "bogus"`},
		{"wrong type", `{"%s": 1}`, `must be a string, not a number`},
		{"wrong type object", `{"%s": {"a": 1}}`, `must be a string, not an object`},
		{"invalid JSON", `{"%s": "a"`, "ends too early"},
		{"syntax error", `{"%s": 'a'}`, "not valid JSON"},
		{"not an object", `["a"]`, "must be a JSON object, not an array"},
		{"trailing data", `{} {}`, "unexpected data after the JSON object"},
	}
	dir := t.TempDir()
	for _, tool := range allTools(dir) {
		name := tool.Spec().Name
		for _, tt := range tests {
			t.Run(name+"/"+tt.name, func(t *testing.T) {
				if field[name] == "" && strings.Contains(tt.args, "%s") {
					t.Skip("the tool takes no string")
				}
				args := strings.ReplaceAll(tt.args, "%s", field[name])
				got, err := tool.Run(t.Context(), json.RawMessage(args))
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("Run(%s) = %q, %v; want an error containing %q", args, got, err, tt.want)
				}
			})
		}
	}
}

func TestUnknownFieldNamesTheFields(t *testing.T) {
	_, err := call(t, WriteFile{Files{Workspace: t.TempDir()}}, map[string]string{"file": "a", "content": "x"})
	want := `invalid arguments: unknown field "file"; this tool takes: path, content`
	if err == nil || err.Error() != want {
		t.Errorf("error = %v, want %q", err, want)
	}
}

func TestIntegerArgument(t *testing.T) {
	tool := SearchHistory{newFakeMemory().tools(time.Now(), 0)}
	_, err := tool.Run(t.Context(), json.RawMessage(`{"query": "x", "limit": 2.5}`))
	if err == nil || !strings.Contains(err.Error(), `"limit" must be an integer`) {
		t.Errorf("error = %v, want one saying limit must be an integer", err)
	}
}

func FuzzToolArguments(f *testing.F) {
	for _, seed := range []string{
		``, `{}`, `null`, `[]`, `"x"`, `{"path": "a.txt"}`, `{"path": "a.txt", "content": "hello"}`,
		`{"path": "a.txt", "old_text": "hello", "new_text": "bye"}`, `{"path": "."}`, `{"path": "../x"}`,
		`{"command": "echo hi", "working_dir": "."}`, `{"history_entry": "met Bob", "memory_update": "# Memory"}`,
		`{"query": "Bob", "limit": 3}`, `{"around": 3, "before": 2, "after": 60}`, `{"url": "http://example.com/", "max_chars": 200}`,
		`{"path": 1}`, `{"limit": -1e400}`, `{"path": "\u0000"}`, `{"a": {"b": [1, 2, {}]}}`, `{"path": "a"} x`,
	} {
		f.Add([]byte(seed))
	}
	dir := f.TempDir()
	tools := allTools(dir)
	f.Fuzz(func(t *testing.T, args []byte) {
		for _, tool := range tools {
			_, _ = tool.Run(t.Context(), args)
		}
	})
}

func BenchmarkDecodeArgs(b *testing.B) {
	args := json.RawMessage(`{"path": "src/main.go", "old_text": "func main() {\n", "new_text": "func main() {\n\tprintln(1)\n"}`)
	b.ReportAllocs()
	for b.Loop() {
		var p editFileParams
		if err := decodeArgs(args, &p); err != nil {
			b.Fatal(err)
		}
	}
}
