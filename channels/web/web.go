// Package web is the owner's web console: a chat with the assistant that
// shows its tool calls as they happen and asks for approvals, and a
// dashboard of the daemon (status, jobs, MEMORY and HISTORY, the audit
// trail, usage). The owner signs in with a one-time link from Telegram's
// /web or `nanobot web login`; nothing like a password is stored. Chat
// messages are recorded in the inbox before anything else happens and
// answered by the turn engine like a Telegram message; answers reach the
// page as events.
package web

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/internal/loopback"
	"github.com/nanobot-go/nanobot/session"
	"github.com/nanobot-go/nanobot/turns"
)

// Channel is the inbox and outbox channel of the console's chat.
const Channel = "web"

// Chat is the console's one chat: the owner's.
const Chat = "owner"

// Session is the session of the console's chat.
func Session() string { return session.Chat(Channel, Chat).String() }

//go:embed static
var static embed.FS

// Config configures the console.
type Config struct {
	Listen string
	// PublicURL is the address the owner opens, behind a TLS proxy; ""
	// serves on loopback only, at http://Listen.
	PublicURL string
	Version   string
	// Owner is the owner's Telegram user id: the console's turns are the
	// owner's, with the owner's rights.
	Owner string
	// ApprovalTimeout is how long an approval waits for the owner; 5
	// minutes when zero.
	ApprovalTimeout time.Duration
	Now             func() time.Time
}

// Store is what the console needs of the durable inbox and outbox.
type Store interface {
	RecordInbound(ctx context.Context, it turns.InboxItem) (id int64, inserted bool, err error)
	PendingOutbound(ctx context.Context, channel string) ([]turns.OutboxItem, error)
	MarkSent(ctx context.Context, id, messageID int64) error
	LiveMessages(ctx context.Context, session string, limit int) ([]agent.StoredMessage, error)
}

// Engine is the turn engine the chat's messages wait in.
type Engine interface {
	Attach(ctx context.Context, src turns.Source, channels ...string) error
	Add(ctx context.Context, it turns.InboxItem)
	Await(ctx context.Context, src turns.Source, j turns.Job) (string, error)
	Stop(chat string) string
	ChatLoad(chat string) turns.Load
}

// Sessions resets and describes a chat's session (/new, /status).
type Sessions interface {
	Reset(ctx context.Context, session string) error
	Status(ctx context.Context, session string) (string, error)
}

// Hooks observe the console; all are optional.
type Hooks struct {
	Inbound func()            // a chat message was recorded
	SignIn  func(ok bool)     // a sign-in was tried
	Request func(kind string) // a request was served: "page", "api", "events", "unauthorized", "forbidden"
}

// Web serves the console.
type Web struct {
	cfg      Config
	base     *url.URL // the console's own origin
	store    Store
	engine   Engine
	sessions Sessions
	auth     Auth
	dash     Dashboard
	bell     <-chan struct{}
	log      *slog.Logger
	hooks    Hooks

	hub       *hub
	approvals *approvals
	limiter   *limiter

	ln  net.Listener
	srv *http.Server
	mu  sync.Mutex
}

// Deps are the parts of the daemon the console works with.
type Deps struct {
	Store     Store
	Engine    Engine
	Sessions  Sessions
	Auth      Auth
	Dashboard Dashboard
	// Bell rings when the channel's outbox holds new replies.
	Bell <-chan struct{}
}

// ErrOpenToNetwork refuses a non-loopback address without public_url.
var ErrOpenToNetwork = errors.New("the web console takes connections from other machines only behind a TLS proxy: set web.public_url to its https:// address, or listen on 127.0.0.1")

// New returns the console; nothing listens until Listen.
func New(cfg Config, deps Deps, log *slog.Logger, hooks Hooks) (*Web, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.ApprovalTimeout <= 0 {
		cfg.ApprovalTimeout = 5 * time.Minute
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	base, err := baseURL(cfg)
	if err != nil {
		return nil, err
	}
	w := &Web{cfg: cfg, base: base, store: deps.Store, engine: deps.Engine, sessions: deps.Sessions, auth: deps.Auth,
		dash: deps.Dashboard, bell: deps.Bell, log: log.With("channel", Channel), hooks: hooks,
		hub: newHub(), limiter: newLimiter(cfg.Now),
		approvals: &approvals{open: map[string]*approval{}}}
	return w, nil
}

// BaseURL is the address the console is opened at: public_url, or the
// loopback address it listens on.
func BaseURL(listen, publicURL string) (string, error) {
	u, err := baseURL(Config{Listen: listen, PublicURL: publicURL})
	if err != nil {
		return "", err
	}
	return u.String(), nil
}

// baseURL is the origin the console is reached at.
func baseURL(cfg Config) (*url.URL, error) {
	if cfg.PublicURL == "" {
		if !loopback.Only(cfg.Listen) {
			return nil, ErrOpenToNetwork
		}
		return &url.URL{Scheme: "http", Host: cfg.Listen}, nil
	}
	u, err := url.Parse(strings.TrimRight(cfg.PublicURL, "/"))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("web.public_url %q is not an http(s) address", cfg.PublicURL)
	}
	return u, nil
}

// Listen binds the address, so that a port in use fails the start.
func (w *Web) Listen() error {
	ln, err := net.Listen("tcp", w.cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", w.cfg.Listen, err)
	}
	w.ln = ln
	if w.cfg.PublicURL == "" {
		w.mu.Lock()
		w.base.Host = ln.Addr().String() // a port chosen by the system
		w.mu.Unlock()
	}
	w.srv = &http.Server{
		Handler:           w.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(w.log.Handler(), slog.LevelDebug),
	}
	return nil
}

// Addr is the address listened on ("" before Listen).
func (w *Web) Addr() string {
	if w.ln == nil {
		return ""
	}
	return w.ln.Addr().String()
}

// URL is the console's address.
func (w *Web) URL() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.base.String()
}

// Run loads what the inbox holds unanswered, serves until ctx ends and
// delivers the chat's replies to the open pages.
func (w *Web) Run(ctx context.Context) error {
	if w.ln == nil {
		return errors.New("web: Run before Listen")
	}
	if err := w.engine.Attach(ctx, w, Channel); err != nil {
		w.ln.Close()
		return err
	}
	var wg sync.WaitGroup
	// The replies are in the session already: a page fetches them on the
	// event, and one opened later reads them then.
	wg.Go(func() {
		turns.Drain(ctx, w.store, Channel, w.bell, w.log, func() { w.hub.publish("message", struct{}{}) })
	})
	served := make(chan error, 1)
	go func() { served <- w.srv.Serve(w.ln) }()
	w.log.Info("web console listening", "addr", w.Addr(), "url", w.URL())
	var err error
	select {
	case <-ctx.Done():
	case err = <-served:
	}
	w.hub.close()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	w.srv.Shutdown(sctx)
	wg.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// Status is a line for `nanobot status` and /readyz's details.
func (w *Web) Status() string {
	addr := w.Addr()
	if addr == "" {
		addr = w.cfg.Listen
	}
	pages := "no page open"
	switch n := w.hub.count(); {
	case n == 1:
		pages = "1 page open"
	case n > 1:
		pages = fmt.Sprintf("%d pages open", n)
	}
	return fmt.Sprintf("web: listening on %s (%s), %s", addr, w.URL(), pages)
}
