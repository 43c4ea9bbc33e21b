package telegram

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/go-telegram/bot"
)

// transport notes every answer from Telegram (for LastContact) and every
// failed call (for the error hook). Its connections can be restarted: the
// watchdog drops them all, in-flight calls included, when Telegram has been
// silent too long, since a dead connection may otherwise hang until a
// deadline far away, and a pool of them keeps failing.
type transport struct {
	c *Channel

	mu  sync.Mutex
	gen *generation
}

// generation is one set of connections; restart cuts off its calls.
type generation struct {
	n  uint64
	rt *http.Transport

	mu    sync.Mutex
	calls map[int]context.CancelFunc // the calls in flight
	next  int
	cut   bool
}

// track ties a call's cancel to the generation; untrack ends the tie.
func (g *generation) track(cancel context.CancelFunc) (untrack func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cut {
		cancel()
		return func() {}
	}
	id := g.next
	g.next++
	g.calls[id] = cancel
	return func() {
		g.mu.Lock()
		delete(g.calls, id)
		g.mu.Unlock()
	}
}

// cutOff cancels every call in flight and every later one.
func (g *generation) cutOff() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.cut = true
	for _, cancel := range g.calls {
		cancel()
	}
	clear(g.calls)
}

func newTransport(c *Channel) *transport {
	t := &transport{c: c}
	t.gen = newGeneration(1)
	return t
}

func newGeneration(n uint64) *generation {
	return &generation{n: n, rt: http.DefaultTransport.(*http.Transport).Clone(), calls: map[int]context.CancelFunc{}}
}

func (t *transport) current() *generation {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.gen
}

// generation numbers the connection sets: a call that fails while the
// number changed was cut off by a restart.
func (t *transport) generation() uint64 { return t.current().n }

// restart aborts every call in flight and starts over with new connections.
func (t *transport) restart() {
	t.mu.Lock()
	old := t.gen
	t.gen = newGeneration(old.n + 1)
	t.mu.Unlock()
	old.cutOff()
	old.rt.CloseIdleConnections()
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	g := t.current()
	ctx, cancel := context.WithCancel(req.Context())
	untrack := g.track(cancel)
	release := func() { untrack(); cancel() }
	resp, err := g.rt.RoundTrip(req.WithContext(ctx))
	method := path.Base(req.URL.Path)
	if strings.Contains(req.URL.Path, "/file/bot") {
		method = "downloadFile"
	}
	if err != nil {
		release()
		if req.Context().Err() == nil {
			t.c.telegramError(method)
		}
		return nil, err
	}
	if resp.StatusCode < http.StatusInternalServerError {
		t.c.touch()
	}
	if resp.StatusCode != http.StatusOK {
		t.c.telegramError(method)
	}
	resp.Body = &releasingBody{ReadCloser: resp.Body, release: release}
	return resp, nil
}

// releasingBody ends a call's tie to its generation when the body is closed.
type releasingBody struct {
	io.ReadCloser
	release func()
}

func (b *releasingBody) Close() error {
	err := b.ReadCloser.Close()
	b.release()
	return err
}

func (c *Channel) telegramError(method string) {
	if c.hooks.TelegramError != nil {
		c.hooks.TelegramError(method)
	}
}

// scrubbedError hides the bot token, which the Bot API puts in every URL,
// while keeping the error matchable with errors.Is and errors.As.
type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }

// scrub returns err with every form of the token replaced.
func (c *Channel) scrub(err error) error {
	if err == nil {
		return nil
	}
	return &scrubbedError{msg: c.scrubText(err.Error()), err: err}
}

func (c *Channel) scrubText(s string) string {
	tok := c.cfg.Token
	if tok == "" {
		return s
	}
	s = strings.ReplaceAll(s, tok, "<token>")
	if esc := url.PathEscape(tok); esc != tok {
		s = strings.ReplaceAll(s, esc, "<token>")
	}
	if esc := url.QueryEscape(tok); esc != tok {
		s = strings.ReplaceAll(s, esc, "<token>")
	}
	return s
}

// failure is how a failed Bot API call should be handled.
type failure int

const (
	failTransient  failure = iota // network, 5xx, conflicts: back off and retry
	failRetryAfter                // 429: wait as told, then retry
	failBadHTML                   // Telegram could not parse the entities
	failPermanent                 // the request itself is wrong or the chat is gone
)

// classify sorts an error from the library; the wait is set for 429.
func classify(err error) (failure, time.Duration) {
	var tooMany *bot.TooManyRequestsError
	if errors.As(err, &tooMany) {
		return failRetryAfter, max(time.Duration(tooMany.RetryAfter)*time.Second, time.Second)
	}
	var migrate *bot.MigrateError
	switch {
	case errors.As(err, &migrate):
		return failPermanent, 0
	case errors.Is(err, bot.ErrorBadRequest):
		if strings.Contains(strings.ToLower(err.Error()), "can't parse entities") {
			return failBadHTML, 0
		}
		return failPermanent, 0
	case errors.Is(err, bot.ErrorForbidden), errors.Is(err, bot.ErrorNotFound):
		return failPermanent, 0
	}
	// Conflicts, 5xx and network errors may all heal; an unattended daemon
	// keeps trying. Unauthorized too, here: intake decides that a rejected
	// token stops the channel.
	return failTransient, 0
}
