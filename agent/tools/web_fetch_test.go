package tools

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/safety"
)

const page = `<!DOCTYPE html>
<html><head><title>Test page</title>
<style>body { color: red; }</style>
<script>var secret = "do not show";</script>
</head>
<body><h1>Welcome</h1><p>Fish &amp; chips are <b>great</b>.</p>
<!-- a comment -->
<ul><li>one</li><li>two</li></ul></body></html>`

func newWebServer(t *testing.T, hits *atomic.Int64) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, page)
	})
	mux.HandleFunc("/text", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "plain <b>text</b> stays")
	})
	mux.HandleFunc("/json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"a": 1}`)
	})
	mux.HandleFunc("/latin1", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=iso-8859-1")
		_, _ = w.Write([]byte("caf\xe9"))
	})
	mux.HandleFunc("/image", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write([]byte("\x89PNG\r\n\x1a\n"))
	})
	mux.HandleFunc("/sniffed", func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = nil // let the client sniff
		fmt.Fprint(w, "<html><body><p>sniffed html</p></body></html>")
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, strings.Repeat("z", 5000))
	})
	mux.HandleFunc("/missing", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, "<h1>Not here</h1>")
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/text", http.StatusFound)
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits != nil {
			hits.Add(1)
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestWebFetch(t *testing.T) {
	srv := newWebServer(t, nil)
	tool := &Web{Client: safety.NewURLGuard(true).HTTPClient(30 * time.Second), MaxBytes: 1000}
	tests := []struct {
		name, path string
		maxChars   int
		want       string // exact text after the header lines
		wantErr    string
	}{
		{name: "html", path: "/page", want: "Test page\nWelcome\nFish & chips are great.\n- one\n- two"},
		{name: "plain text", path: "/text", want: "plain <b>text</b> stays"},
		{name: "json", path: "/json", want: `{"a": 1}`},
		{name: "latin-1", path: "/latin1", want: "café"},
		{name: "sniffed html", path: "/sniffed", want: "sniffed html"},
		{name: "redirect", path: "/redirect", want: "plain <b>text</b> stays"},
		{name: "max chars", path: "/page", maxChars: 9, want: "Test page\n… [cut: showing the first 9 of 53 characters; ask with a larger max_chars for more]"},
		{name: "max bytes", path: "/big", want: strings.Repeat("z", 1000) + "\n… [the response is larger than 1000 bytes; only its beginning was read]"},
		{name: "image", path: "/image", wantErr: "unsupported content type image/png (8 bytes); web_fetch returns text and HTML only"},
		{name: "not found", path: "/missing", wantErr: "answered 404 Not Found: Not here"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := map[string]any{"url": srv.URL + tt.path}
			if tt.maxChars > 0 {
				args["max_chars"] = tt.maxChars
			}
			got, err := call(t, tool, args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("web_fetch(%s) = %q, %v; want error containing %q", tt.path, got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			header, body, _ := strings.Cut(got, "\n\n")
			if !strings.HasPrefix(header, "URL: "+srv.URL) || !strings.Contains(header, "Content-Type: ") {
				t.Errorf("header = %q", header)
			}
			if body != tt.want {
				t.Errorf("web_fetch(%s) text = %q, want %q", tt.path, body, tt.want)
			}
		})
	}
}

func TestWebFetchRefusesLoopback(t *testing.T) {
	var hits atomic.Int64
	srv := newWebServer(t, &hits)
	for _, tool := range []*Web{
		{Client: safety.NewURLGuard(false).HTTPClient(30 * time.Second)},
		{}, // the default client refuses private addresses too
	} {
		got, err := call(t, tool, map[string]string{"url": srv.URL + "/page"})
		if err == nil {
			t.Errorf("web_fetch(loopback) = %q, want a refusal", got)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the loopback server was reached %d times", n)
	}
}

func TestWebFetchInvalidURL(t *testing.T) {
	tool := &Web{Client: &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		t.Errorf("request sent for %s", r.URL)
		return nil, fmt.Errorf("no network in tests")
	})}}
	tests := []struct{ url, want string }{
		{"", `"url" is required`},
		{"file:///etc/passwd", "it must start with http:// or https://"},
		{"ftp://example.com/x", "it must start with http:// or https://"},
		{"example.com/page", "it must start with http:// or https://"},
		{"http://", "no host"},
		{"http://[::1", "invalid url"},
	}
	for _, tt := range tests {
		_, err := call(t, tool, map[string]string{"url": tt.url})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("web_fetch(%q): error %v, want one containing %q", tt.url, err, tt.want)
		}
	}
}

func TestWebFetchHidesCredentials(t *testing.T) {
	tool := &Web{Client: &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return nil, fmt.Errorf("connection refused")
	})}}
	_, err := call(t, tool, map[string]string{"url": "https://user:hunter2@example.com/"})
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("error = %v, want one without the password", err)
	}
}
