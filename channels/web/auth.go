package web

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/internal/loopback"
)

// Auth keeps the one-time sign-in links and the signed-in sessions. Only
// hashes of their secrets are stored.
type Auth interface {
	AddLogin(ctx context.Context, hash string, expires time.Time) error
	// TakeLogin uses a link up: true only the first time, before it expires.
	TakeLogin(ctx context.Context, hash string, now time.Time) (bool, error)
	AddSession(ctx context.Context, s SignedIn, hash string) error
	SessionByHash(ctx context.Context, hash string, now time.Time) (SignedIn, bool, error)
	Sessions(ctx context.Context, now time.Time) ([]SignedIn, error)
	RevokeSession(ctx context.Context, id string) (bool, error)
}

// SignedIn is one signed-in browser.
type SignedIn struct {
	ID       string    `json:"id"`
	Agent    string    `json:"agent"`
	Created  time.Time `json:"created"`
	LastSeen time.Time `json:"last_seen"`
	Expires  time.Time `json:"expires"`
	Current  bool      `json:"current"`
}

// How long a sign-in link and a session last.
const (
	LoginTTL   = 10 * time.Minute
	SessionTTL = 30 * 24 * time.Hour
)

const cookieName = "nanobot_session"

// Hash is what is stored of a secret.
func Hash(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

func newSecret() string {
	var b [32]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// NewLogin stores a one-time sign-in link and returns it. base is the
// console's address.
func NewLogin(ctx context.Context, auth Auth, base string, now time.Time) (string, error) {
	token := newSecret()
	if err := auth.AddLogin(ctx, Hash(token), now.Add(LoginTTL)); err != nil {
		return "", err
	}
	return base + "/login?t=" + url.QueryEscape(token), nil
}

// LoginLink is a new sign-in link to this console, for Telegram's /web.
func (w *Web) LoginLink(ctx context.Context) (string, error) {
	return NewLogin(ctx, w.auth, w.URL(), w.cfg.Now())
}

// csrfOf is the CSRF token of a session: derived from its secret, so it
// is known to the page (which reads it from /api/session) and to nobody
// without the cookie.
func csrfOf(secret string) string {
	sum := sha256.Sum256([]byte("csrf\x00" + secret))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// signIn is POST /login: a valid link becomes a session cookie.
func (w *Web) signIn(rw http.ResponseWriter, r *http.Request) {
	addr := clientAddr(r)
	if !w.limiter.allow(addr) {
		w.hook(false)
		rw.Header().Set("Retry-After", "60")
		w.page(rw, http.StatusTooManyRequests, "signed-out.html")
		return
	}
	if !w.sameOrigin(r) {
		w.page(rw, http.StatusForbidden, "signed-out.html")
		return
	}
	// A urlencoded form (what the page posts); not PostFormValue, whose
	// multipart parser would cost the binary 40 KB for nothing.
	r.Body = http.MaxBytesReader(rw, r.Body, 4096)
	r.ParseForm()
	token := r.PostForm.Get("t")
	now := w.cfg.Now()
	ok := false
	if token != "" {
		var err error
		if ok, err = w.auth.TakeLogin(r.Context(), Hash(token), now); err != nil {
			w.log.Error("check a sign-in link", "err", err)
			writeError(rw, http.StatusInternalServerError, "the sign-in could not be checked; try again")
			return
		}
	}
	if !ok {
		w.limiter.fail(addr)
		w.hook(false)
		w.log.Warn("sign-in refused: the link is unknown, used or expired", "client", addr)
		w.page(rw, http.StatusUnauthorized, "expired.html")
		return
	}
	secret := newSecret()
	s := SignedIn{ID: newSecret()[:12], Agent: cut(r.UserAgent(), 200), Created: now, LastSeen: now, Expires: now.Add(SessionTTL)}
	if err := w.auth.AddSession(r.Context(), s, Hash(secret)); err != nil {
		w.log.Error("store a session", "err", err)
		writeError(rw, http.StatusInternalServerError, "the sign-in could not be stored; ask for a new link")
		return
	}
	w.hook(true)
	w.log.Info("signed in to the web console", "session", s.ID, "client", addr)
	http.SetCookie(rw, &http.Cookie{Name: cookieName, Value: secret, Path: "/", Expires: s.Expires,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: w.base.Scheme == "https"})
	http.Redirect(rw, r, "/", http.StatusSeeOther)
}

func (w *Web) hook(ok bool) {
	if w.hooks.SignIn != nil {
		w.hooks.SignIn(ok)
	}
}

// visitor is a request's session.
type visitor struct {
	SignedIn
	csrf string
}

// session is the request's signed-in session, if any.
func (w *Web) session(r *http.Request) (visitor, bool) {
	c, err := r.Cookie(cookieName)
	if err != nil || c.Value == "" {
		return visitor{}, false
	}
	s, ok, err := w.auth.SessionByHash(r.Context(), Hash(c.Value), w.cfg.Now())
	if err != nil {
		w.log.Error("read a session", "err", err)
		return visitor{}, false
	}
	return visitor{SignedIn: s, csrf: csrfOf(c.Value)}, ok
}

// sameOrigin holds when the request comes from the console's own pages,
// as far as the browser tells: Sec-Fetch-Site, which every current
// browser sends, must say so; without it an Origin header, when sent,
// must be the console's address, or the loopback address the request
// was sent to. A client that is no browser sends neither.
func (w *Web) sameOrigin(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "same-origin":
		return true
	case "":
	default: // cross-site, same-site (a neighbour's subdomain), none
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	return origin == w.origin() || (loopback.Only(r.Host) && origin == "http://"+r.Host)
}

func (w *Web) origin() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.base.Scheme + "://" + w.base.Host
}

// knownHost holds for a request addressed to the console: its public
// host, or a loopback address (the proxy in front, or the owner on this
// machine). Any other name is a page that made its own name point here
// (DNS rebinding) and is refused.
func (w *Web) knownHost(r *http.Request) bool {
	w.mu.Lock()
	public := w.cfg.PublicURL != "" && strings.EqualFold(r.Host, w.base.Host)
	w.mu.Unlock()
	return public || loopback.Only(r.Host) || loopback.Only(r.Host+":80")
}

// checkCSRF guards a state change: the page's token and its origin.
func (w *Web) checkCSRF(r *http.Request, v visitor) bool {
	got := r.Header.Get("X-CSRF-Token")
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(v.csrf)) == 1 && w.sameOrigin(r)
}

func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// limiter counts failed sign-ins: five a minute per address, twenty a
// minute in all.
type limiter struct {
	now   func() time.Time
	mu    sync.Mutex
	fails map[string][]time.Time
}

const (
	failsPerAddr  = 5
	failsInAll    = 20
	failureWindow = time.Minute
)

func newLimiter(now func() time.Time) *limiter {
	return &limiter{now: now, fails: map[string][]time.Time{}}
}

func (l *limiter) allow(addr string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	cutoff := l.now().Add(-failureWindow)
	total := 0
	for a, ts := range l.fails {
		kept := ts[:0]
		for _, t := range ts {
			if t.After(cutoff) {
				kept = append(kept, t)
			}
		}
		if len(kept) == 0 {
			delete(l.fails, a)
			continue
		}
		l.fails[a] = kept
		total += len(kept)
	}
	return len(l.fails[addr]) < failsPerAddr && total < failsInAll
}

func (l *limiter) fail(addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.fails[addr] = append(l.fails[addr], l.now())
}

// sessionInfo is GET /api/session.
func (w *Web) sessionInfo(rw http.ResponseWriter, _ *http.Request, v visitor) {
	writeJSON(rw, http.StatusOK, map[string]any{"id": v.ID, "csrf": v.csrf, "expires": v.Expires})
}

// listSessions is GET /api/sessions.
func (w *Web) listSessions(rw http.ResponseWriter, r *http.Request, v visitor) {
	all, err := w.auth.Sessions(r.Context(), w.cfg.Now())
	if err != nil {
		w.fail(rw, "list sessions", err)
		return
	}
	for i := range all {
		all[i].Current = all[i].ID == v.ID
	}
	writeJSON(rw, http.StatusOK, map[string]any{"sessions": nonNil(all)})
}

// revoke is DELETE /api/sessions/{id}.
func (w *Web) revoke(rw http.ResponseWriter, r *http.Request, v visitor) {
	id := r.PathValue("id")
	ok, err := w.auth.RevokeSession(r.Context(), id)
	if err != nil {
		w.fail(rw, "revoke a session", err)
		return
	}
	if !ok {
		writeError(rw, http.StatusNotFound, "no such session")
		return
	}
	w.log.Info("web session revoked", "session", id, "by", v.ID)
	if id == v.ID {
		clearCookie(rw, w.base.Scheme == "https")
	}
	rw.WriteHeader(http.StatusNoContent)
}

// logout is POST /api/logout.
func (w *Web) logout(rw http.ResponseWriter, r *http.Request, v visitor) {
	if _, err := w.auth.RevokeSession(r.Context(), v.ID); err != nil {
		w.fail(rw, "sign out", err)
		return
	}
	clearCookie(rw, w.base.Scheme == "https")
	rw.WriteHeader(http.StatusNoContent)
}

func clearCookie(rw http.ResponseWriter, secure bool) {
	http.SetCookie(rw, &http.Cookie{Name: cookieName, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: secure})
}
