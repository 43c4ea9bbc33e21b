package admin

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/internal/loopback"
)

// probeTimeout bounds the whole probe, so a container health check never
// piles up behind a wedged daemon.
const probeTimeout = 3 * time.Second

// Probe checks the admin endpoint at addr ("host:port", as in gateway.listen):
// /healthz, or /readyz when ready is true. It returns nil only on 200. An
// empty or unspecified host (":18790", "0.0.0.0:18790", "[::]:18790") is
// probed on loopback, so the listen address works unchanged inside a
// container. The error carries the status and the first line of the body
// (the readiness reason).
func Probe(ctx context.Context, addr string, ready bool) error {
	url, err := probeURL(addr, ready)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("probe %s: %w", url, err)
	}
	client := &http.Client{
		// A health probe of our own port must never go through a proxy.
		Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true},
		Timeout:   probeTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("probe %s: %w", url, err)
	}
	defer resp.Body.Close()
	line, _ := bufio.NewReader(io.LimitReader(resp.Body, 512)).ReadString('\n')
	if resp.StatusCode != http.StatusOK {
		line = strings.TrimSpace(line)
		if line == "" {
			return fmt.Errorf("probe %s: %s", url, resp.Status)
		}
		return fmt.Errorf("probe %s: %s: %s", url, resp.Status, line)
	}
	return nil
}

// ReadyDetails returns the lines of a running gateway's /readyz after the
// first (ready or not): the parts reported without deciding readiness.
func ReadyDetails(ctx context.Context, addr string) ([]string, error) {
	url, err := probeURL(addr, true)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("probe %s: %w", url, err)
	}
	client := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}, Timeout: probeTimeout}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("probe %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return nil, fmt.Errorf("probe %s: %w", url, err)
	}
	lines := strings.Split(strings.TrimSpace(string(body)), "\n")
	return lines[1:], nil
}

// probeURL turns a listen address into the URL to probe.
func probeURL(addr string, ready bool) (string, error) {
	if addr == "" {
		return "", errors.New("probe: no admin address (gateway.listen is empty)")
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("probe: admin address %q: %w", addr, err)
	}
	if port == "" {
		return "", fmt.Errorf("probe: admin address %q: missing port", addr)
	}
	path := "/healthz"
	if ready {
		path = "/readyz"
	}
	hostport := loopback.Dialable(net.JoinHostPort(host, port))
	raw := "http://" + hostport + path
	// A host with URL syntax in it ("a/b", "a?b", "u@h") would probe another
	// path or host than the one configured.
	if u, err := url.Parse(raw); err != nil || u.Host != hostport || u.Path != path || u.User != nil {
		return "", fmt.Errorf("probe: admin address %q: invalid host", addr)
	}
	return raw, nil
}
