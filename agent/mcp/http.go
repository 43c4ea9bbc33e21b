package mcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Headers of the streamable HTTP transport.
const (
	headerSessionID = "Mcp-Session-Id"
	headerVersion   = "MCP-Protocol-Version"
)

// relistenWait is the pause before the standalone event stream is opened
// again after the server ended it.
const relistenWait = time.Second

// deleteTimeout bounds the request that ends a session on close.
const deleteTimeout = 2 * time.Second

// httpTransport speaks streamable HTTP: each message is POSTed, the
// answer comes back as JSON or as an event stream, and a standing GET
// event stream carries what the server sends unasked.
type httpTransport struct {
	url     string
	client  *http.Client
	secrets []string // header values and URL keys, kept out of errors
	handle  func([]byte) bool

	// closing is closed when the transport closes: every request ends with it.
	closing chan struct{}

	mu        sync.Mutex
	sessionID string
	version   string

	ended     chan struct{}
	endErr    error
	endOnce   sync.Once
	closeOnce sync.Once
	wg        sync.WaitGroup // the standalone stream
}

var _ transport = (*httpTransport)(nil)

func newHTTPTransport(endpoint string, headers map[string]string, handle func([]byte) bool) *httpTransport {
	host := ""
	var secrets []string
	for _, v := range headers {
		if len(v) >= 4 {
			secrets = append(secrets, v)
		}
	}
	if u, err := url.Parse(endpoint); err == nil {
		host = u.Host
		// A key may ride in the query or the user info rather than a header.
		for _, vs := range u.Query() {
			for _, v := range vs {
				if len(v) >= 8 {
					secrets = append(secrets, v)
				}
			}
		}
		if p, ok := u.User.Password(); ok && p != "" {
			secrets = append(secrets, p)
		}
	}
	return &httpTransport{
		url:     endpoint,
		client:  &http.Client{Transport: headerTransport{headers: headers, host: host, next: http.DefaultTransport}},
		secrets: secrets,
		handle:  handle,
		closing: make(chan struct{}),
		ended:   make(chan struct{}),
	}
}

// request is a request to the endpoint with the session's headers; it
// returns the session id it carries.
func (t *httpTransport) request(ctx context.Context, method string, body []byte) (*http.Request, string, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, t.url, rd)
	if err != nil {
		return nil, "", errors.New("the server's URL is not valid")
	}
	t.mu.Lock()
	sid, version := t.sessionID, t.version
	t.mu.Unlock()
	if sid != "" {
		req.Header.Set(headerSessionID, sid)
	}
	if version != "" {
		req.Header.Set(headerVersion, version)
	}
	return req, sid, nil
}

// untilClosed returns ctx cancelled also when the transport closes, and the func that releases it.
func (t *httpTransport) untilClosed(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-t.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, func() { cancel(); <-watched }
}

func (t *httpTransport) send(ctx context.Context, msg []byte, call bool) error {
	ctx, release := t.untilClosed(ctx)
	defer release()
	req, sid, err := t.request(ctx, http.MethodPost, msg)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := t.client.Do(req)
	if err != nil {
		return t.scrub(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound && sid != "" {
		t.end(errSessionGone)
		return errSessionGone
	}
	if id := resp.Header.Get(headerSessionID); id != "" && sid == "" {
		t.mu.Lock()
		if t.sessionID == "" {
			t.sessionID = id
		}
		t.mu.Unlock()
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		// A refusal may carry a JSON-RPC error: the server's answer.
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		if call && mediaType(resp) == "application/json" && t.handle(body) {
			return nil
		}
		return t.statusError(resp.StatusCode, body)
	}
	if !call {
		return nil // 202 Accepted, as a rule
	}
	answered := false
	switch ct := mediaType(resp); ct {
	case "application/json":
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxMessage+1))
		switch {
		case err != nil:
			return t.scrub(err)
		case len(body) > maxMessage:
			return errTooLarge
		}
		answered = t.handle(body)
	case "text/event-stream":
		answered, err = t.events(resp.Body, true)
		if err != nil {
			return err
		}
	default:
		return fmt.Errorf("the server answered with content of type %q", truncate(ct, 60))
	}
	if !answered {
		return errNoAnswer
	}
	return nil
}

// events passes the messages of an event stream to handle until it ends,
// or, with untilAnswer, until one was an answer.
func (t *httpTransport) events(body io.Reader, untilAnswer bool) (answered bool, err error) {
	sr := newSSEReader(body, maxMessage)
	for {
		ev, err := sr.next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return answered, nil
			}
			return answered, t.scrub(err)
		}
		if ev.data == "" || (ev.name != "" && ev.name != "message") {
			continue // a priming event, or one that is not a message
		}
		if t.handle([]byte(ev.data)) {
			answered = true
			if untilAnswer {
				return true, nil
			}
		}
	}
}

// ready notes the negotiated revision, sent on every request from now on,
// and opens the standalone event stream.
func (t *httpTransport) ready(version string) {
	t.mu.Lock()
	t.version = version
	t.mu.Unlock()
	t.wg.Add(1)
	go t.listen()
}

// listen keeps the standalone event stream open, through which the
// server sends what it sends unasked, such as tools/list_changed.
func (t *httpTransport) listen() {
	defer t.wg.Done()
	ctx, release := t.untilClosed(context.Background())
	defer release()
	for {
		again, err := t.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			t.end(err)
			return
		}
		if !again {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(relistenWait):
		}
	}
}

// listenOnce reads one standalone stream; again says whether to open
// another: not when the server offers none.
func (t *httpTransport) listenOnce(ctx context.Context) (again bool, err error) {
	req, sid, err := t.request(ctx, http.MethodGet, nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := t.client.Do(req)
	if err != nil {
		return false, t.scrub(err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound && sid != "":
		return false, errSessionGone
	case resp.StatusCode >= 500:
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return false, t.statusError(resp.StatusCode, body)
	case resp.StatusCode != http.StatusOK || mediaType(resp) != "text/event-stream":
		return false, nil // 405: the server has no such stream, which is fine
	}
	if _, err := t.events(resp.Body, false); errors.Is(err, errTooLarge) {
		return false, err
	}
	return true, nil
}

func (t *httpTransport) end(err error) {
	t.endOnce.Do(func() {
		t.endErr = err
		close(t.ended)
	})
}

func (t *httpTransport) done() <-chan struct{} { return t.ended }
func (t *httpTransport) err() error            { return t.endErr }

// close ends every request and, unless the server ended it already, the
// session with a DELETE.
func (t *httpTransport) close() error {
	t.closeOnce.Do(func() {
		close(t.closing)
		t.mu.Lock()
		sid := t.sessionID
		t.mu.Unlock()
		gone := false
		select {
		case <-t.ended:
			gone = errors.Is(t.endErr, errSessionGone)
		default:
		}
		if sid != "" && !gone {
			ctx, cancel := context.WithTimeout(context.Background(), deleteTimeout)
			if req, _, err := t.request(ctx, http.MethodDelete, nil); err == nil {
				if resp, err := t.client.Do(req); err == nil {
					_ = resp.Body.Close()
				}
			}
			cancel()
		}
		t.end(errClosed)
		t.wg.Wait()
	})
	return nil
}

// scrub words a failure of a request without its URL, which may hold a
// key in its query.
func (t *httpTransport) scrub(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if errors.Is(err, errTooLarge) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return errors.New(t.redact(err.Error()))
}

// statusError words a refusal, with the first line of its body.
func (t *httpTransport) statusError(code int, body []byte) error {
	line, _, _ := strings.Cut(strings.TrimSpace(string(body)), "\n")
	msg := fmt.Sprintf("the server answered HTTP %d %s", code, http.StatusText(code))
	if line = strings.TrimSpace(line); line != "" {
		msg += ": " + t.redact(truncate(line, 200))
	}
	return errors.New(msg)
}

// redact hides the configured header values and URL keys, which may be
// tokens.
func (t *httpTransport) redact(s string) string {
	for _, v := range t.secrets {
		s = strings.ReplaceAll(s, v, "REDACTED")
	}
	return s
}

func mediaType(resp *http.Response) string {
	mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil {
		return ""
	}
	return mt
}

// headerTransport adds the configured headers to every request to the
// server's host, and not to another host a redirect leads to.
type headerTransport struct {
	headers map[string]string
	host    string
	next    http.RoundTripper
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 && r.URL.Host == t.host {
		r = r.Clone(r.Context())
		for k, v := range t.headers {
			r.Header.Set(k, v)
		}
	}
	return t.next.RoundTrip(r)
}
