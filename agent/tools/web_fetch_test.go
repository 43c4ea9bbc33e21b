package tools

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/agent"
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
	mux.HandleFunc("/latin1-html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<html><head><meta charset=\"iso-8859-1\"></head><body><p>Cr\xe8me br\xfbl\xe9e</p></body></html>"))
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
	wrap := func(s string) string { return agent.Untrusted(s) }
	tests := []struct {
		name, path string
		mode       string
		maxChars   int
		want       string // exact text after the header lines
		wantErr    string
	}{
		{name: "html", path: "/page", want: wrap("# Test page\n\n## Welcome\n\nFish & chips are **great**.\n\n- one\n- two")},
		{name: "html as text", path: "/page", mode: "text", want: wrap("Test page\n\nWelcome\n\nFish & chips are great.\n\none\ntwo")},
		{name: "plain text", path: "/text", want: wrap("plain <b>text</b> stays")},
		{name: "json", path: "/json", want: wrap(`{"a": 1}`)},
		{name: "latin-1", path: "/latin1", want: wrap("café")},
		{name: "latin-1 html", path: "/latin1-html", mode: "text", want: wrap("Crème brûlée")},
		{name: "sniffed html", path: "/sniffed", mode: "text", want: wrap("sniffed html")},
		{name: "redirect", path: "/redirect", want: wrap("plain <b>text</b> stays")},
		{name: "max chars", path: "/page", maxChars: 11, want: wrap("# Test page") + "\n… [cut: showing the first 11 of 65 characters; ask with a larger max_chars for more]"},
		{name: "max bytes", path: "/big", want: wrap(strings.Repeat("z", 1000)) + "\n… [the response is larger than 1000 bytes; only its beginning was read]"},
		{name: "image", path: "/image", wantErr: "unsupported content type image/png (8 bytes); web_fetch returns text and HTML only"},
		{name: "not found", path: "/missing", wantErr: "answered 404 Not Found: Not here"},
		{name: "bad mode", path: "/page", mode: "pdf", wantErr: `"mode" must be "markdown" or "text"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := map[string]any{"url": srv.URL + tt.path}
			if tt.maxChars > 0 {
				args["max_chars"] = tt.maxChars
			}
			if tt.mode != "" {
				args["mode"] = tt.mode
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

// An article page with navigation, scripts, an ad block, a sidebar and a
// footer gives its title and body as Markdown, and nothing else.
func TestWebFetchArticle(t *testing.T) {
	article, err := os.ReadFile(filepath.Join("testdata", "article.html"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(article)
	}))
	t.Cleanup(srv.Close)
	tool := &Web{Client: safety.NewURLGuard(true).HTTPClient(30 * time.Second)}
	got, err := call(t, tool, map[string]any{"url": srv.URL + "/2025/tomatoes"})
	if err != nil {
		t.Fatal(err)
	}
	_, body, _ := strings.Cut(got, "\n\n")
	for _, want := range []string{
		agent.UntrustedBegin + "\n# Growing tomatoes on a balcony\n",
		"## Choosing a variety\n\nPick a **determinate** or dwarf variety",
		"[guide to cherry tomatoes](" + srv.URL + "/vegetables/cherry-tomatoes)",
		"- Water in the morning, at the base of the plant\n",
		"## Harvest\n\nPick the fruit when it is fully coloured",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("web_fetch(article) lacks %q:\n%s", want, body)
		}
	}
	for _, junk := range []string{"Subscribe now", "Vegetables", "BUY CHEAP", "tracker", "analytics", "Sponsored", "Ten herbs", "All rights reserved", "border:"} {
		if strings.Contains(body, junk) {
			t.Errorf("web_fetch(article) kept %q (navigation, script, ad, sidebar or footer):\n%s", junk, body)
		}
	}
	if !strings.HasSuffix(body, agent.UntrustedEnd) {
		t.Errorf("the page is not closed by the end marker:\n%s", body)
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

// The guard refuses private addresses named in the URL, and a redirect
// from a public page to the machine itself.
func TestWebFetchGuardRefusesPrivateAndRedirects(t *testing.T) {
	var secretHits atomic.Int64
	local := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/hop":
			http.Redirect(w, r, "http://"+r.Host+"/secret", http.StatusFound) // to 127.0.0.1
		case "/secret":
			secretHits.Add(1)
			fmt.Fprint(w, "internal admin page")
		}
	}))
	t.Cleanup(local.Close)

	client := safety.NewURLGuard(false).HTTPClient(30 * time.Second)
	guarded := client.Transport
	// public.example stands for a public host: its requests reach the
	// local server; everything else goes through the guard as usual.
	client.Transport = roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.URL.Host != "public.example" {
			return guarded.RoundTrip(r)
		}
		r = r.Clone(r.Context())
		r.URL.Scheme, r.URL.Host = "http", local.Listener.Addr().String()
		resp, err := http.DefaultTransport.RoundTrip(r)
		if err == nil && resp.StatusCode == http.StatusFound {
			resp.Header.Set("Location", strings.Replace(resp.Header.Get("Location"), "http://public.example", "http://"+local.Listener.Addr().String(), 1))
		}
		return resp, err
	})
	tool := &Web{Client: client}

	for _, u := range []string{"http://10.1.2.3/", "http://192.168.0.1/router", "http://[::1]:8080/", "http://169.254.169.254/latest/meta-data/"} {
		if got, err := call(t, tool, map[string]string{"url": u}); err == nil || !strings.Contains(err.Error(), "not allowed") {
			t.Errorf("web_fetch(%s) = %q, %v; want a refusal", u, got, err)
		}
	}
	got, err := call(t, tool, map[string]string{"url": "http://public.example/hop"})
	if err == nil || !strings.Contains(err.Error(), "redirect to http://127.0.0.1") || !strings.Contains(err.Error(), "not allowed") {
		t.Errorf("web_fetch(redirect to loopback) = %q, %v; want the redirect refused", got, err)
	}
	if n := secretHits.Load(); n != 0 {
		t.Errorf("the internal page was reached %d times", n)
	}
}

// hostsResolver stands for /etc/hosts or a DNS server: it answers from a
// table, the rest does not resolve.
type hostsResolver map[string]string

func (h hostsResolver) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	a, ok := h[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	ip := netip.MustParseAddr(a)
	if network == "ip4" && !ip.Unmap().Is4() || network == "ip6" && !ip.Is6() {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return []netip.Addr{ip}, nil
}

// Every way of naming the machine itself, its networks or a metadata
// service is refused, asked for directly and reached through a redirect
// from a public page, and the server behind them is never reached.
func TestWebFetchRefusesSSRF(t *testing.T) {
	var hits atomic.Int64
	local := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/redir" {
			http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
			return
		}
		hits.Add(1)
		fmt.Fprint(w, "internal page")
	}))
	t.Cleanup(local.Close)
	_, port, _ := net.SplitHostPort(local.Listener.Addr().String())
	hosts := hostsResolver{
		"localhost":                "127.0.0.1",
		"loopback.example.test":    "127.0.0.1",
		"metadata.google.internal": "169.254.169.254",
		"mapped.example.test":      "::ffff:127.0.0.1",
		"private.example.test":     "10.0.0.7",
	}
	// client goes through a guard with the given setting; public.example
	// stands for a public host and reaches the local server's /redir.
	client := func(allowPrivate bool) *http.Client {
		c := safety.NewURLGuard(allowPrivate, safety.WithResolver(hosts)).HTTPClient(5 * time.Second)
		guarded := c.Transport
		c.Transport = roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.URL.Host != "public.example" {
				return guarded.RoundTrip(r)
			}
			r = r.Clone(r.Context())
			r.URL.Scheme, r.URL.Host = "http", local.Listener.Addr().String()
			return http.DefaultTransport.RoundTrip(r)
		})
		return c
	}
	targets := []string{
		"http://127.0.0.1:" + port + "/",
		"http://2130706433:" + port + "/",
		"http://0x7f000001:" + port + "/",
		"http://0177.0.0.1:" + port + "/",
		"http://0x7f.1:" + port + "/",
		"http://127.1:" + port + "/",
		"http://[::ffff:127.0.0.1]:" + port + "/",
		"http://[::ffff:7f00:1]:" + port + "/",
		"http://0.0.0.0:" + port + "/",
		"http://0:" + port + "/",
		"http://[::]:" + port + "/",
		"http://[::1]:" + port + "/",
		"http://localhost:" + port + "/",
		"http://loopback.example.test:" + port + "/",
		"http://mapped.example.test:" + port + "/",
		"http://private.example.test/",
		"http://169.254.169.254/latest/meta-data/",
		"http://2852039166/latest/meta-data/",
		"http://[fd00:ec2::254]/latest/meta-data/",
		"http://metadata.google.internal/computeMetadata/v1/",
		"http://10.0.0.1/",
		"http://192.168.1.1/",
		"http://100.64.0.1/",
		"file:///etc/passwd",
		"gopher://127.0.0.1:" + port + "/_GET",
		"ftp://127.0.0.1:" + port + "/",
		"dict://127.0.0.1:" + port + "/info",
	}
	tool := &Web{Client: client(false), MaxBytes: 1000}
	for _, target := range targets {
		t.Run(target, func(t *testing.T) {
			before := hits.Load()
			if got, err := call(t, tool, map[string]string{"url": target}); err == nil {
				t.Errorf("web_fetch(%s) = %q, want a refusal", target, got)
			}
			hop := "http://public.example/redir?to=" + url.QueryEscape(target)
			if got, err := call(t, tool, map[string]string{"url": hop}); err == nil {
				t.Errorf("web_fetch(redirect to %s) = %q, want a refusal", target, got)
			} else if !strings.Contains(err.Error(), "redirect") && !strings.Contains(err.Error(), "not allowed") {
				t.Errorf("web_fetch(redirect to %s): %v, want the redirect refused", target, err)
			}
			if n := hits.Load() - before; n != 0 {
				t.Errorf("the internal server was reached %d times", n)
			}
		})
	}

	// The same fetches with allow_private reach the server: the refusals
	// above are the guard's doing.
	open := &Web{Client: client(true), MaxBytes: 1000}
	for _, target := range []string{"http://loopback.example.test:" + port + "/", "http://public.example/redir?to=" + url.QueryEscape("http://127.0.0.1:"+port+"/")} {
		before := hits.Load()
		if _, err := call(t, open, map[string]string{"url": target}); err != nil || hits.Load() != before+1 {
			t.Errorf("web_fetch(%s) with allow_private: %v, %d hits; want the page", target, err, hits.Load()-before)
		}
	}
}
