package safety

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"testing"
	"time"
)

func TestURLGuardRefusesLoopback(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello")
	}))
	defer srv.Close()

	client := NewURLGuard(false).HTTPClient(30 * time.Second)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err == nil {
		resp.Body.Close()
		t.Fatal("GET 127.0.0.1 through the guard succeeded, want refusal")
	}
	if !errors.Is(err, ErrBlockedAddress) {
		t.Errorf("GET 127.0.0.1: error %v, want ErrBlockedAddress", err)
	}

	// A name that resolves to loopback is refused at dial time.
	u, _ := url.Parse(srv.URL)
	byName := "http://localhost:" + u.Port()
	req, _ = http.NewRequestWithContext(t.Context(), http.MethodGet, byName, nil)
	if resp, err := client.Do(req); err == nil {
		resp.Body.Close()
		t.Fatal("GET localhost through the guard succeeded, want refusal")
	} else if !errors.Is(err, ErrBlockedAddress) {
		t.Errorf("GET localhost: error %v, want ErrBlockedAddress", err)
	}
}

func TestURLGuardAllowPrivate(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "/final", http.StatusFound)
			return
		}
		io.WriteString(w, "hello")
	}))
	defer srv.Close()

	client := NewURLGuard(true).HTTPClient(30 * time.Second)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/redirect", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET with allowPrivate: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if string(body) != "hello" {
		t.Errorf("body = %q, want hello", body)
	}
}

func TestURLGuardChecksRedirects(t *testing.T) {
	client := NewURLGuard(false).HTTPClient(30 * time.Second)
	for _, target := range []string{"http://169.254.169.254/latest/meta-data/", "http://[fd00:ec2::254]/", "http://10.0.0.1/", "file:///etc/passwd"} {
		req, _ := http.NewRequest(http.MethodGet, target, nil)
		if err := client.CheckRedirect(req, []*http.Request{{}}); err == nil {
			t.Errorf("redirect to %s allowed, want refused", target)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, "https://example.com/", nil)
	if err := client.CheckRedirect(req, []*http.Request{{}}); err != nil {
		t.Errorf("redirect to a public host refused: %v", err)
	}
}

func TestURLGuardCheckIP(t *testing.T) {
	g := NewURLGuard(false)
	tests := []struct {
		ip      string
		blocked bool
	}{
		{"127.0.0.1", true},
		{"::1", true},
		{"10.1.2.3", true},
		{"172.16.0.1", true},
		{"192.168.1.1", true},
		{"169.254.169.254", true},
		{"fd00:ec2::254", true},
		{"100.64.0.1", true},
		{"0.0.0.0", true},
		{"::", true},
		{"224.0.0.1", true},
		{"ff02::1", true},
		{"fe80::1", true},
		{"::ffff:127.0.0.1", true},
		{"::ffff:10.0.0.1", true},
		{"93.184.216.34", false},
		{"2606:4700::1111", false},
		{"8.8.8.8", false},
	}
	for _, tc := range tests {
		err := g.CheckIP(netip.MustParseAddr(tc.ip))
		if (err != nil) != tc.blocked {
			t.Errorf("CheckIP(%s) = %v, want blocked=%v", tc.ip, err, tc.blocked)
		}
	}
	if err := NewURLGuard(true).CheckIP(netip.MustParseAddr("127.0.0.1")); err != nil {
		t.Errorf("CheckIP with allowPrivate = %v, want nil", err)
	}
}

// CheckURL refuses an internal address in every spelling the C library
// reads as one, before any name lookup.
func TestURLGuardCheckURLSpellings(t *testing.T) {
	g := NewURLGuard(false)
	for _, raw := range []string{
		"http://127.0.0.1/", "http://2130706433/", "http://0x7f000001/", "http://0177.0.0.1/", "http://127.1/",
		"http://0x7f.0.0.1/", "http://[::ffff:127.0.0.1]/", "http://[::ffff:7f00:1]/", "http://0.0.0.0/", "http://0/",
		"http://[::]/", "http://[::1]/", "http://169.254.169.254/", "http://2852039166/", "http://0xa9fea9fe/",
		"http://[fd00:ec2::254]/", "http://10.1/", "http://[fe80::1%25eth0]/",
	} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatalf("url.Parse(%q): %v", raw, err)
		}
		if err := g.CheckURL(u); !errors.Is(err, ErrBlockedAddress) {
			t.Errorf("CheckURL(%s) = %v, want ErrBlockedAddress", raw, err)
		}
	}
	for _, raw := range []string{"https://example.com/", "http://93.184.216.34/", "https://1password.com/", "http://0x.example/"} {
		u, _ := url.Parse(raw)
		if err := g.CheckURL(u); err != nil {
			t.Errorf("CheckURL(%s) = %v, want nil", raw, err)
		}
	}
	for _, raw := range []string{"file:///etc/passwd", "gopher://example.com/", "ftp://example.com/", "dict://example.com/"} {
		u, _ := url.Parse(raw)
		if err := g.CheckURL(u); err == nil {
			t.Errorf("CheckURL(%s) = nil, want a refusal", raw)
		}
	}
}
