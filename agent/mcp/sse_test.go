package mcp

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// readEvents is every event of in, and the error that ended the stream
// (nil at its end).
func readEvents(in string, limit int) ([]sseEvent, error) {
	r := newSSEReader(strings.NewReader(in), limit)
	var out []sseEvent
	for {
		ev, err := r.next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
}

var sseOpts = cmp.Options{cmp.AllowUnexported(sseEvent{}), cmpopts.EquateEmpty()}

func TestSSEReader(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []sseEvent
	}{
		{"one event", "data: hello\n\n", []sseEvent{{data: "hello"}}},
		{"data lines joined", "data: a\ndata: b\n\n", []sseEvent{{data: "a\nb"}}},
		{"one space dropped", "data:x\n\ndata:  y\n\n", []sseEvent{{data: "x"}, {data: " y"}}},
		{"colon in the value", "data: {\"a\":1}\n\n", []sseEvent{{data: `{"a":1}`}}},
		{"name and id", "event: message\nid: 7\ndata: {}\n\n", []sseEvent{{name: "message", id: "7", data: "{}"}}},
		{"comments and other fields", ": ok\n\nretry: 10\nfoo: bar\nfoo\ndata: d\n\n", []sseEvent{{data: "d"}}},
		{"CRLF and CR", "data: a\r\n\r\ndata: b\r\rdata: c\n\n", []sseEvent{{data: "a"}, {data: "b"}, {data: "c"}}},
		{"empty data field", "data\n\n", []sseEvent{{data: ""}}},
		{"no data: not dispatched, name forgotten", "event: x\nid: 1\n\ndata: y\n\n", []sseEvent{{data: "y"}}},
		{"cut short at the end", "data: a\n\ndata: b\n", []sseEvent{{data: "a"}}},
		{"no blank line at all", "data: a", nil},
		{"byte order mark", "\ufeffdata: a\n\n", []sseEvent{{data: "a"}}},
		{"id with NUL ignored", "id: a\x00b\ndata: x\n\n", []sseEvent{{data: "x"}}},
		{"blank lines between", "\n\n\ndata: x\n\n\n", []sseEvent{{data: "x"}}},
		{"priming event then message", "id: 0\ndata:\n\nevent: message\ndata: {\"id\":1}\n\n", []sseEvent{{id: "0", data: ""}, {name: "message", data: `{"id":1}`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readEvents(tt.in, 1<<10)
			if err != nil {
				t.Fatalf("readEvents(%q): %v", tt.in, err)
			}
			if diff := cmp.Diff(tt.want, got, sseOpts); diff != "" {
				t.Errorf("readEvents(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestSSEReaderBounds(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []sseEvent // before the error
	}{
		{"long line", "data: ok\n\n: " + strings.Repeat("c", 100) + "\n\n", []sseEvent{{data: "ok"}}},
		{"long event over many lines", strings.Repeat("data: 0123456789\n", 10) + "\n", nil},
		{"long line without an end", "data: " + strings.Repeat("x", 100), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readEvents(tt.in, 64)
			if !errors.Is(err, errTooLarge) {
				t.Errorf("readEvents: error %v, want %v", err, errTooLarge)
			}
			if diff := cmp.Diff(tt.want, got, sseOpts); diff != "" {
				t.Errorf("events before the error (-want +got):\n%s", diff)
			}
		})
	}
	// At the bound exactly is fine.
	in := "data:" + strings.Repeat("x", 59) + "\n" + "data:" + strings.Repeat("y", 4) + "\n\n"
	if got, err := readEvents(in, 64); err != nil || len(got) != 1 || len(got[0].data) != 64 {
		t.Errorf("an event of 64 bytes: %d events, %v", len(got), err)
	}
}

// refSSE reads a whole event stream the plain way, for FuzzSSE to compare
// with.
func refSSE(in string) []sseEvent {
	in = strings.TrimPrefix(in, "\ufeff")
	var out []sseEvent
	var ev sseEvent
	var data []string
	for {
		i := strings.IndexAny(in, "\r\n")
		if i < 0 {
			return out // what is left is a line cut short
		}
		line := in[:i]
		if strings.HasPrefix(in[i:], "\r\n") {
			in = in[i+2:]
		} else {
			in = in[i+1:]
		}
		if line == "" {
			if data != nil {
				ev.data = strings.Join(data, "\n")
				out = append(out, ev)
			}
			ev, data = sseEvent{}, nil
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "data":
			data = append(data, value)
		case "event":
			ev.name = value
		case "id":
			if !strings.Contains(value, "\x00") {
				ev.id = value
			}
		}
	}
}

func FuzzSSE(f *testing.F) {
	for _, s := range []string{
		"data: hello\n\n", "event: message\nid: 1\ndata: {}\r\n\r\n", ": ok\n\ndata: a\rdata: b\r\r",
		"\ufeffdata\n\n", "data: a\ndata: b\n", "retry: 5\nid\x00\ndata:  x\n\n\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := readEvents(in, len(in)+1)
		if err != nil {
			t.Fatalf("readEvents(%q): %v", in, err)
		}
		want := refSSE(in)
		if diff := cmp.Diff(want, got, sseOpts); diff != "" {
			t.Fatalf("readEvents(%q) (-ref +got):\n%s", in, diff)
		}
		// With a small bound it stops with errTooLarge, after a prefix of
		// the same events, none of them past the bound.
		const limit = 16
		got, err = readEvents(in, limit)
		if err != nil && !errors.Is(err, errTooLarge) {
			t.Fatalf("readEvents(%q, %d): error %v", in, limit, err)
		}
		if len(got) > len(want) {
			t.Fatalf("readEvents(%q, %d) = %d events, more than %d", in, limit, len(got), len(want))
		}
		if diff := cmp.Diff(want[:len(got)], got, sseOpts); diff != "" {
			t.Fatalf("readEvents(%q, %d) (-ref +got):\n%s", in, limit, diff)
		}
		for _, ev := range got {
			if len(ev.data) > limit {
				t.Fatalf("readEvents(%q, %d): an event of %d bytes", in, limit, len(ev.data))
			}
		}
	})
}
