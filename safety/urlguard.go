package safety

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"syscall"
	"time"
)

// ErrBlockedAddress is returned (wrapped) when a request would reach a
// loopback, private, link-local, metadata or otherwise internal address.
var ErrBlockedAddress = errors.New("address is not allowed")

// maxRedirects bounds how many redirects a guarded client follows.
const maxRedirects = 10

// URLGuard keeps the web tools away from the machine itself and its
// networks. The check happens when connecting, after DNS resolution, so a
// public name resolving to an internal address is refused too, and again
// for every redirect.
type URLGuard struct {
	allowPrivate bool
	blocked      []netip.Prefix
	resolver     Resolver
}

// URLGuardOption configures a URLGuard.
type URLGuardOption func(*URLGuard)

// WithResolver makes the guard's clients resolve host names with r instead
// of net.DefaultResolver.
func WithResolver(r Resolver) URLGuardOption {
	return func(g *URLGuard) { g.resolver = r }
}

// NewURLGuard returns a guard; allowPrivate disables the address checks.
func NewURLGuard(allowPrivate bool, opts ...URLGuardOption) *URLGuard {
	g := &URLGuard{allowPrivate: allowPrivate, blocked: blockedPrefixes(), resolver: net.DefaultResolver}
	for _, o := range opts {
		o(g)
	}
	return g
}

// blockedPrefixes lists the networks refused besides the ones netip
// classifies (loopback, private, link-local, multicast, unspecified).
func blockedPrefixes() []netip.Prefix {
	return []netip.Prefix{
		netip.MustParsePrefix("0.0.0.0/8"),      // "this" network
		netip.MustParsePrefix("100.64.0.0/10"),  // carrier-grade NAT
		netip.MustParsePrefix("192.0.0.0/24"),   // IETF protocol assignments
		netip.MustParsePrefix("198.18.0.0/15"),  // benchmarking
		netip.MustParsePrefix("240.0.0.0/4"),    // reserved, broadcast
		netip.MustParsePrefix("169.254.0.0/16"), // link-local, cloud metadata
		netip.MustParsePrefix("fd00:ec2::/32"),  // AWS metadata over IPv6
		netip.MustParsePrefix("64:ff9b::/96"),   // NAT64 can reach IPv4 internals
		netip.MustParsePrefix("64:ff9b:1::/48"), // local-use NAT64
		netip.MustParsePrefix("2001:db8::/32"),  // documentation
		netip.MustParsePrefix("100::/64"),       // discard-only
	}
}

// CheckIP reports whether connecting to ip is allowed.
func (g *URLGuard) CheckIP(ip netip.Addr) error {
	if g.allowPrivate {
		return nil
	}
	ip = ip.Unmap()
	if !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() {
		return fmt.Errorf("%s: %w", ip, ErrBlockedAddress)
	}
	for _, p := range g.blocked {
		if p.Contains(ip) {
			return fmt.Errorf("%s: %w", ip, ErrBlockedAddress)
		}
	}
	return nil
}

// CheckURL refuses URLs that are not http(s) or that name a blocked IP
// literal, in any spelling the C library accepts (2130706433, 0x7f000001,
// 0177.0.0.1, 127.1). Host names are checked when the connection is made.
func (g *URLGuard) CheckURL(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("url scheme %q: only http and https are allowed", u.Scheme)
	}
	if ip, ok := parseHostAddr(u.Hostname()); ok {
		return g.CheckIP(ip)
	}
	return nil
}

// dial resolves addr itself and connects only to an address the guard
// allows, trying them in order; control checks the dialled address again.
func (g *URLGuard) dial(ctx context.Context, d *net.Dialer, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return d.DialContext(ctx, network, addr)
	}
	family := "ip"
	switch network {
	case "tcp4":
		family = "ip4"
	case "tcp6":
		family = "ip6"
	}
	ips, err := g.resolver.LookupNetIP(ctx, family, host)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", host, err)
	}
	err = fmt.Errorf("resolve %s: no addresses", host)
	for _, ip := range ips {
		if cerr := g.CheckIP(ip); cerr != nil {
			err = fmt.Errorf("dial %s: %w", host, cerr)
			continue
		}
		conn, derr := d.DialContext(ctx, network, net.JoinHostPort(ip.Unmap().String(), port))
		if derr == nil {
			return conn, nil
		}
		err = derr
	}
	return nil, err
}

// control runs after DNS resolution, on the exact address being dialled.
func (g *URLGuard) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("dial %s: %w", address, ErrBlockedAddress)
	}
	if err := g.CheckIP(ap.Addr()); err != nil {
		return fmt.Errorf("dial: %w", err)
	}
	return nil
}

// HTTPClient returns a client whose every connection and redirect is
// checked. It ignores proxy settings from the environment, which would
// otherwise hide the real destination from the check.
func (g *URLGuard) HTTPClient(timeout time.Duration) *http.Client {
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: g.control}
	transport := &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return g.dial(ctx, dialer, network, addr)
		},
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          10,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		ResponseHeaderTimeout: timeout,
	}
	return &http.Client{
		Timeout:   timeout,
		Transport: guardedTransport{g: g, next: transport},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= maxRedirects {
				return fmt.Errorf("stopped after %d redirects", maxRedirects)
			}
			if err := g.CheckURL(req.URL); err != nil {
				return fmt.Errorf("redirect to %s: %w", req.URL.Redacted(), err)
			}
			return nil
		},
	}
}

// guardedTransport checks the URL of each request before sending it.
type guardedTransport struct {
	g    *URLGuard
	next http.RoundTripper
}

func (t guardedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := t.g.CheckURL(req.URL); err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	return t.next.RoundTrip(req)
}
