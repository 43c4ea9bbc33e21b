// Package api is the OpenAI-compatible API channel: other apps (Open
// WebUI, Chatbox, editors, scripts) talk to the assistant through POST
// /v1/chat/completions as if it were a model. Each key is one client
// with its own chat; a request's last user message is recorded in the
// inbox before anything else happens, answered by the turn engine like a
// Telegram message, and the reply goes back in the response. A client
// that leaves does not lose its turn: it completes and is stored, and the
// next request of that conversation sees it.
package api

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/internal/loopback"
	"github.com/nanobot-go/nanobot/turns"
)

// Channel is the inbox and outbox channel of the API's messages.
const Channel = "api"

// Model is the model id clients see: the assistant, whatever model
// answers behind it.
const Model = "nanobot"

// Key is one client: its bearer key, its name and the chat it talks in.
type Key struct {
	Secret string
	Name   string
	Chat   string
}

// Config configures the channel.
type Config struct {
	Listen string
	Keys   []Key // none: any program on this machine may connect (Listen must be loopback)
	// KeepAlive is the time between two comment lines of a stream while
	// its turn works, so proxies do not cut it; 15 s when zero.
	KeepAlive time.Duration
	Now       func() time.Time
}

// Store is what the channel needs of the durable inbox and outbox.
type Store interface {
	RecordInbound(ctx context.Context, it turns.InboxItem) (id int64, inserted bool, err error)
	PendingOutbound(ctx context.Context, channel string) ([]turns.OutboxItem, error)
	MarkSent(ctx context.Context, id, messageID int64) error
}

// Engine is the turn engine the channel's messages wait in.
type Engine interface {
	Attach(ctx context.Context, src turns.Source, channels ...string) error
	Await(ctx context.Context, src turns.Source, j turns.Job) (string, error)
}

// Hooks observe the channel; all are optional.
type Hooks struct {
	Inbound func()                       // a message was recorded
	Request func(client, outcome string) // a request ended: "ok", "unauthorized", "invalid", "failed", "gone"
}

// API serves the OpenAI-compatible API.
type API struct {
	cfg    Config
	keys   atomic.Pointer[[]hashedKey]
	store  Store
	engine Engine
	bell   <-chan struct{}
	log    *slog.Logger
	hooks  Hooks

	ln       net.Listener
	srv      *http.Server
	stopping chan struct{} // closed when Run's context ends

	mu      sync.Mutex
	waiting map[int64]*waiter // requests waiting for their item's turn
	served  atomic.Int64      // requests answered, for status
	last    atomic.Int64      // unix ms of the last request
}

type hashedKey struct {
	sum  [32]byte
	name string
	chat string
}

// New returns the channel; nothing listens until Listen. bell rings when
// the channel's outbox holds new replies.
func New(cfg Config, store Store, engine Engine, bell <-chan struct{}, log *slog.Logger, hooks Hooks) *API {
	if cfg.KeepAlive <= 0 {
		cfg.KeepAlive = 15 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	a := &API{cfg: cfg, store: store, engine: engine, bell: bell, log: log.With("channel", Channel), hooks: hooks,
		stopping: make(chan struct{}), waiting: map[int64]*waiter{}}
	if a.SetKeys(cfg.Keys) != nil {
		a.keys.Store(&[]hashedKey{}) // Listen refuses to start
	}
	return a
}

// ErrOpenToNetwork refuses to serve without keys on an address other
// machines reach.
var ErrOpenToNetwork = errors.New("the API takes connections from other machines and needs at least one key")

// SetKeys replaces the keys accepted from now on (a config reload). An
// empty list is refused while the address is not loopback: the API would
// be open to the network.
func (a *API) SetKeys(keys []Key) error {
	if len(keys) == 0 && !loopback.Only(a.cfg.Listen) {
		return ErrOpenToNetwork
	}
	hk := make([]hashedKey, 0, len(keys))
	for _, k := range keys {
		chat := k.Chat
		if chat == "" {
			chat = k.Name
		}
		hk = append(hk, hashedKey{sum: sha256.Sum256([]byte(k.Secret)), name: k.Name, chat: chat})
	}
	a.keys.Store(&hk)
	return nil
}

// client is the key a request's bearer token matches; ok false when it
// matches none. Every key is compared, in constant time each.
func (a *API) client(token string) (hashedKey, bool) {
	keys := *a.keys.Load()
	if len(keys) == 0 {
		return hashedKey{name: "local", chat: "local"}, true
	}
	sum := sha256.Sum256([]byte(token))
	var found hashedKey
	ok := 0
	for _, k := range keys {
		if subtle.ConstantTimeCompare(sum[:], k.sum[:]) == 1 {
			found, ok = k, 1
		}
	}
	return found, ok == 1 && token != ""
}

// Listen binds the address, so that a port in use fails the start.
func (a *API) Listen() error {
	if len(*a.keys.Load()) == 0 && !loopback.Only(a.cfg.Listen) {
		return ErrOpenToNetwork
	}
	ln, err := net.Listen("tcp", a.cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", a.cfg.Listen, err)
	}
	a.ln = ln
	a.srv = &http.Server{
		Handler:           a.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(a.log.Handler(), slog.LevelDebug),
	}
	return nil
}

// Addr is the address listened on ("" before Listen).
func (a *API) Addr() string {
	if a.ln == nil {
		return ""
	}
	return a.ln.Addr().String()
}

// Run loads what the inbox holds unanswered, serves until ctx ends and
// keeps the outbox drained. Turns still running then finish in the
// engine; their clients are told the assistant is restarting.
func (a *API) Run(ctx context.Context) error {
	if a.ln == nil {
		return errors.New("api: Run before Listen")
	}
	if err := a.engine.Attach(ctx, a, Channel); err != nil {
		a.ln.Close()
		return err
	}
	var wg sync.WaitGroup
	// The client of a turn got its reply from the turn itself, and one that
	// left (or a message queued for the chat by a tool) finds it in the
	// chat's session: an API client cannot be written to first.
	wg.Go(func() { turns.Drain(ctx, a.store, Channel, a.bell, a.log, nil) })
	served := make(chan error, 1)
	go func() { served <- a.srv.Serve(a.ln) }()
	a.log.Info("API listening", "addr", a.Addr(), "keys", len(*a.keys.Load()))
	var err error
	select {
	case <-ctx.Done():
	case err = <-served:
	}
	close(a.stopping)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	a.srv.Shutdown(sctx)
	wg.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// Status is a line for `nanobot status` and /readyz's details.
func (a *API) Status() string {
	last := "no request yet"
	if ms := a.last.Load(); ms != 0 {
		last = "last request " + time.UnixMilli(ms).UTC().Format(time.RFC3339)
	}
	addr := a.Addr()
	if addr == "" {
		addr = a.cfg.Listen
	}
	return fmt.Sprintf("api: listening on %s, %d keys, %d requests answered, %s", addr, len(*a.keys.Load()), a.served.Load(), last)
}

// waiter is a request waiting for its turn: it is shown the turn's
// progress and told its usage.
type waiter struct {
	progress func(agent.ProgressEvent) // nil: not streaming
	mu       sync.Mutex
	usage    agent.Usage
	failed   bool
}

func (a *API) wait(id int64, w *waiter) (done func()) {
	a.mu.Lock()
	a.waiting[id] = w
	a.mu.Unlock()
	return func() {
		a.mu.Lock()
		delete(a.waiting, id)
		a.mu.Unlock()
	}
}

func (a *API) waiterOf(batch []*turns.Job) *waiter {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, j := range batch {
		if w := a.waiting[j.Item.ID]; w != nil {
			return w
		}
	}
	return nil
}
