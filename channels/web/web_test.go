package web_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/channels/web"
	"github.com/nanobot-go/nanobot/daemon"
	"github.com/nanobot-go/nanobot/memory"
	"github.com/nanobot-go/nanobot/turns"
)

// console is a console over a real store, served on loopback, with a
// clock the test moves.
type console struct {
	t     *testing.T
	w     *web.Web
	srv   *httptest.Server
	auth  daemon.WebAuth
	mu    sync.Mutex
	now   time.Time
	store *memory.Store
}

func newConsole(t *testing.T) *console {
	t.Helper()
	st, err := memory.Open(t.Context(), filepath.Join(t.TempDir(), "nanobot.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	c := &console{t: t, auth: daemon.WebAuth{S: st}, store: st, now: time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)}
	engine := turns.New(st, nil, turns.Config{}, nil, turns.Hooks{})
	c.w, err = web.New(web.Config{Listen: "127.0.0.1:0", Now: c.clock}, web.Deps{Store: st, Auth: c.auth, Engine: engine}, nil, web.Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	c.srv = httptest.NewServer(c.w.Handler())
	t.Cleanup(c.srv.Close)
	return c
}

func (c *console) clock() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *console) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// link is a fresh sign-in link to the test server.
func (c *console) link() string {
	c.t.Helper()
	l, err := web.NewLogin(c.t.Context(), c.auth, c.srv.URL, c.clock())
	if err != nil {
		c.t.Fatal(err)
	}
	return l
}

func tokenOf(t *testing.T, link string) string {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query().Get("t")
}

// browser is an HTTP client with cookies that does not follow redirects.
func (c *console) browser() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func (c *console) signIn(b *http.Client, token string) *http.Response {
	c.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, c.srv.URL+"/login", strings.NewReader(url.Values{"t": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", c.srv.URL)
	resp, err := b.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

func (c *console) do(b *http.Client, method, path, body string, header map[string]string) (int, string) {
	c.t.Helper()
	req, _ := http.NewRequest(method, c.srv.URL+path, strings.NewReader(body))
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := b.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

func TestSignInOnceWithALink(t *testing.T) {
	c := newConsole(t)
	b := c.browser()
	if code, _ := c.do(b, "GET", "/api/session", "", nil); code != http.StatusUnauthorized {
		t.Fatalf("GET /api/session without a session = %d, want 401", code)
	}
	resp, err := b.Get(c.srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/signed-out" {
		t.Fatalf("GET / without a session = %d to %q, want 303 to /signed-out", resp.StatusCode, resp.Header.Get("Location"))
	}

	link := c.link()
	// Opening the link (a preview, a prefetch) signs nobody in and uses nothing up.
	if code, body := c.do(b, "GET", strings.TrimPrefix(link, c.srv.URL), "", nil); code != http.StatusOK || !strings.Contains(body, "<form") {
		t.Fatalf("GET the link = %d %q, want the sign-in form", code, body)
	}
	resp = c.signIn(b, tokenOf(t, link))
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("POST /login = %d, want 303", resp.StatusCode)
	}
	var cookie *http.Cookie
	for _, ck := range resp.Cookies() {
		if ck.Name == "nanobot_session" {
			cookie = ck
		}
	}
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode || cookie.Path != "/" {
		t.Fatalf("session cookie = %+v, want HttpOnly, SameSite=Strict, Path=/", cookie)
	}
	if code, body := c.do(b, "GET", "/api/session", "", nil); code != http.StatusOK || !strings.Contains(body, `"csrf"`) {
		t.Fatalf("GET /api/session signed in = %d %q", code, body)
	}

	// The same link a second time, from another browser, is refused.
	if resp := c.signIn(c.browser(), tokenOf(t, link)); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a used link = %d, want 401", resp.StatusCode)
	}
	// So is a link older than ten minutes.
	old := c.link()
	c.advance(web.LoginTTL + time.Second)
	if resp := c.signIn(c.browser(), tokenOf(t, old)); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("an expired link = %d, want 401", resp.StatusCode)
	}
}

func TestStateChangesNeedThePagesToken(t *testing.T) {
	c := newConsole(t)
	b := c.browser()
	c.signIn(b, tokenOf(t, c.link()))
	_, body := c.do(b, "GET", "/api/session", "", nil)
	csrf := between(body, `"csrf":"`, `"`)
	if csrf == "" {
		t.Fatalf("no csrf in %s", body)
	}
	for _, tc := range []struct {
		name   string
		header map[string]string
		want   int
	}{
		{"no token", map[string]string{"Content-Type": "application/json"}, http.StatusForbidden},
		{"forged token", map[string]string{"X-CSRF-Token": "forged" + csrf[6:]}, http.StatusForbidden},
		{"token from another site", map[string]string{"X-CSRF-Token": csrf, "Origin": "https://evil.example"}, http.StatusForbidden},
		{"cross-site fetch", map[string]string{"X-CSRF-Token": csrf, "Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"a neighbour subdomain", map[string]string{"X-CSRF-Token": csrf, "Sec-Fetch-Site": "same-site"}, http.StatusForbidden},
		{"an opaque origin", map[string]string{"X-CSRF-Token": csrf, "Origin": "null"}, http.StatusForbidden},
		{"the page's token", map[string]string{"X-CSRF-Token": csrf, "Origin": c.srv.URL}, http.StatusNoContent},
	} {
		code, body := c.do(b, "POST", "/api/logout", "", tc.header)
		if code != tc.want {
			t.Errorf("%s: POST /api/logout = %d %s, want %d", tc.name, code, body, tc.want)
		}
	}
	if code, _ := c.do(b, "GET", "/api/session", "", nil); code != http.StatusUnauthorized {
		t.Errorf("after the page's sign-out the session = %d, want 401", code)
	}
}

func TestRebindingNamesAreRefused(t *testing.T) {
	c := newConsole(t)
	req, _ := http.NewRequest(http.MethodGet, c.srv.URL+"/login", nil)
	req.Host = "evil.example:18791"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("a request for another name = %d, want 421", resp.StatusCode)
	}
}

func TestSignInIsRateLimited(t *testing.T) {
	c := newConsole(t)
	for i := range 5 {
		if resp := c.signIn(c.browser(), "guess"+string(rune('a'+i))); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("guess %d = %d, want 401", i, resp.StatusCode)
		}
	}
	good := tokenOf(t, c.link())
	if resp := c.signIn(c.browser(), good); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a sixth try within the minute = %d, want 429", resp.StatusCode)
	}
	c.advance(time.Minute + time.Second)
	if resp := c.signIn(c.browser(), good); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("a valid link a minute later = %d, want 303 (the refused try did not use it up)", resp.StatusCode)
	}
}

func TestEveryResponseIsLockedDown(t *testing.T) {
	c := newConsole(t)
	for _, path := range []string{"/", "/login?t=x", "/signed-out", "/api/session", "/static/app.js"} {
		resp, err := c.browser().Get(c.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		h := resp.Header
		if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe") {
			t.Errorf("%s: CSP %q", path, csp)
		}
		if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("X-Frame-Options") != "DENY" || h.Get("Referrer-Policy") != "same-origin" {
			t.Errorf("%s: headers %v", path, h)
		}
	}
}

func TestRevokedSessionIsSignedOut(t *testing.T) {
	c := newConsole(t)
	b := c.browser()
	c.signIn(b, tokenOf(t, c.link()))
	all, err := c.store.WebSessions(t.Context(), c.clock())
	if err != nil || len(all) != 1 {
		t.Fatalf("sessions = %v, %v", all, err)
	}
	if ok, err := c.store.RevokeWebSession(context.Background(), all[0].ID); !ok || err != nil {
		t.Fatalf("revoke = %v, %v", ok, err)
	}
	if code, _ := c.do(b, "GET", "/api/session", "", nil); code != http.StatusUnauthorized {
		t.Errorf("a revoked session = %d, want 401", code)
	}
}

func TestPublicAddressNeedsProxy(t *testing.T) {
	_, err := web.New(web.Config{Listen: "0.0.0.0:18791"}, web.Deps{}, nil, web.Hooks{})
	if err != web.ErrOpenToNetwork {
		t.Errorf("a public address without public_url: %v, want ErrOpenToNetwork", err)
	}
	base, err := web.BaseURL("0.0.0.0:18791", "https://bot.example.com/")
	if err != nil || base != "https://bot.example.com" {
		t.Errorf("BaseURL behind a proxy = %q, %v", base, err)
	}
}

func between(s, from, to string) string {
	_, rest, ok := strings.Cut(s, from)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, to)
	return v
}

// TestApprovalShowsEveryCharacter: the command a page is asked to
// approve reads as what runs, bidi overrides and padding shown; one
// answer counts, and the decider is named.
func TestApprovalShowsEveryCharacter(t *testing.T) {
	c := newConsole(t)
	b := c.browser()
	c.signIn(b, tokenOf(t, c.link()))
	_, body := c.do(b, "GET", "/api/session", "", nil)
	csrf := between(body, `"csrf":"`, `"`)
	// A page listens, so the console is asked.
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, c.srv.URL+"/api/events", nil)
	events, err := b.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer events.Body.Close()
	lines := bufio.NewScanner(events.Body)
	lines.Scan() // the stream's first line: the page is subscribed
	type result struct {
		ok  bool
		who string
		err error
	}
	res := make(chan result, 1)
	go func() {
		ok, who, err := c.w.Approve(t.Context(), "echo safe \u202e#fr- mr"+strings.Repeat(" ", 40)+"; rm -rf ~", "deletes files")
		res <- result{ok, who, err}
	}()
	for lines.Scan() && lines.Text() != "event: approval" {
	}
	lines.Scan()
	var a struct{ ID, Command string }
	if err := json.Unmarshal([]byte(strings.TrimPrefix(lines.Text(), "data: ")), &a); err != nil {
		t.Fatalf("the approval event: %v in %q", err, lines.Text())
	}
	var pending struct{ Approvals []struct{ ID string } }
	if _, body := c.do(b, "GET", "/api/approvals", "", nil); json.Unmarshal([]byte(body), &pending) != nil ||
		len(pending.Approvals) != 1 || pending.Approvals[0].ID != a.ID {
		t.Errorf("pending approvals: %s", body)
	}
	if !strings.Contains(a.Command, `\u202e`) || !strings.Contains(a.Command, "␠×40") || strings.ContainsRune(a.Command, '\u202e') {
		t.Errorf("the page is shown %q", a.Command)
	}
	hdr := map[string]string{"X-CSRF-Token": csrf, "Content-Type": "application/json"}
	if code, body := c.do(b, "POST", "/api/approvals/"+a.ID, `{"approve":false}`, hdr); code != http.StatusOK {
		t.Fatalf("deny = %d %s", code, body)
	}
	if code, _ := c.do(b, "POST", "/api/approvals/"+a.ID, `{"approve":true}`, hdr); code != http.StatusNotFound {
		t.Errorf("a second answer = %d, want 404", code)
	}
	r := <-res
	if r.ok || r.err != nil || !strings.HasPrefix(r.who, "web:") {
		t.Errorf("Approve = %+v, want denied by web:<session>", r)
	}
}

func TestApprovalWithNoPageOpenIsNotAsked(t *testing.T) {
	c := newConsole(t)
	if _, _, err := c.w.Approve(t.Context(), "ls", "why"); err != web.ErrNoPage {
		t.Errorf("Approve with no page = %v, want ErrNoPage", err)
	}
}

// TestConsoleRevokesAnotherBrowser: a page lists the signed-in browsers
// and ends one; that browser is signed out at once.
func TestConsoleRevokesAnotherBrowser(t *testing.T) {
	c := newConsole(t)
	desk, phone := c.browser(), c.browser()
	c.signIn(desk, tokenOf(t, c.link()))
	c.signIn(phone, tokenOf(t, c.link()))
	_, body := c.do(desk, "GET", "/api/session", "", nil)
	csrf, self := between(body, `"csrf":"`, `"`), between(body, `"id":"`, `"`)
	var list struct {
		Sessions []struct {
			ID      string
			Current bool
		}
	}
	_, body = c.do(desk, "GET", "/api/sessions", "", nil)
	if err := json.Unmarshal([]byte(body), &list); err != nil || len(list.Sessions) != 2 {
		t.Fatalf("sessions = %s (%v)", body, err)
	}
	var other string
	for _, s := range list.Sessions {
		if s.Current != (s.ID == self) {
			t.Errorf("session %s marked current %v", s.ID, s.Current)
		}
		if s.ID != self {
			other = s.ID
		}
	}
	hdr := map[string]string{"X-CSRF-Token": csrf}
	if code, body := c.do(desk, "DELETE", "/api/sessions/"+other, "", hdr); code != http.StatusNoContent {
		t.Fatalf("revoke = %d %s", code, body)
	}
	if code, _ := c.do(phone, "GET", "/api/session", "", nil); code != http.StatusUnauthorized {
		t.Errorf("the revoked browser = %d, want 401", code)
	}
	if code, _ := c.do(desk, "GET", "/api/session", "", nil); code != http.StatusOK {
		t.Errorf("the revoking browser = %d, want still signed in", code)
	}
}

// TestALongConversationShowsItsEnd: a conversation longer than a page
// shows is cut at its start, never at its latest answer.
func TestALongConversationShowsItsEnd(t *testing.T) {
	c := newConsole(t)
	b := c.browser()
	c.signIn(b, tokenOf(t, c.link()))
	var msgs []agent.Message
	for i := range 150 {
		msgs = append(msgs,
			agent.Message{Role: agent.RoleUser, Content: fmt.Sprintf("question %d", i)},
			agent.Message{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "c", Name: "list_dir", Arguments: "{}"}}},
			agent.Message{Role: agent.RoleTool, ToolCallID: "c", Name: "list_dir", Content: "a.txt"},
			agent.Message{Role: agent.RoleAssistant, Content: fmt.Sprintf("answer %d", i)})
	}
	if err := c.store.Append(t.Context(), web.Session(), msgs...); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Messages []struct {
			ID   int64
			Role string
			Text string
		}
	}
	_, body := c.do(b, "GET", "/api/messages", "", nil)
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	n := len(got.Messages)
	if n != 200 || got.Messages[n-1].Text != "answer 149" || got.Messages[0].Text != "question 50" {
		t.Fatalf("%d messages, from %+v to %+v", n, got.Messages[0], got.Messages[n-1])
	}
	_, body = c.do(b, "GET", fmt.Sprintf("/api/messages?after=%d", got.Messages[n-2].ID), "", nil)
	if !strings.Contains(body, "answer 149") || strings.Contains(body, "question 149") {
		t.Errorf("after the last question: %s", body)
	}
}
