// Package turns is the turn engine. Every message the daemon answers (a
// Telegram update, a line typed in the terminal, a scheduled job's firing,
// a heartbeat run, a background task's report) waits in its chat's queue
// and is answered one turn at a time per chat, in the order it arrived,
// while different chats run in parallel up to a limit. The engine owns
// what every source shares: merging, /stop, the retry while the disk is
// full, closing the inbox items with their reply, and the shutdown drain.
// A source only reads its items (Source) and delivers the replies.
package turns

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/agent"
)

var (
	// ErrStopped reports (errors.Is) a turn that /stop ended.
	ErrStopped = errors.New("stopped by /stop")
	// ErrShutdown reports (errors.Is) a turn a shutdown interrupted; a
	// recorded one resumes on the next start.
	ErrShutdown = errors.New("shutting down")
)

// Answerer answers one turn: the daily budget, then the loop. With resume
// set, the turn's first record was written before a crash: it continues
// from the session instead of adding the message again. A model outage
// comes back as an error with an honest Text for the user.
type Answerer interface {
	Answer(ctx context.Context, t agent.Turn, msg agent.Message, resume bool) (agent.Result, error)
}

// Store is the durable inbox the engine runs from.
type Store interface {
	// PendingInbound returns the channel's unanswered items, pending or
	// started, in the order they were recorded.
	PendingInbound(ctx context.Context, channel string) ([]InboxItem, error)
	// FinishTurn closes the turn's items (t.Inbox, and the others its
	// turn answers) and queues text (t.Fallback when empty) for t's chat,
	// in one write. Items a turn's last record closed already stay as
	// they are and nothing is queued, so it is safe to call after every
	// turn.
	FinishTurn(ctx context.Context, t agent.Turn, text string) error
}

// Config bounds the engine. Zero values take their defaults.
type Config struct {
	MaxConcurrent   int           // chats answered at once; default 4
	ShutdownTimeout time.Duration // how long running turns may finish on Shutdown; default 30 s
	// Steering hands a text sent while its sender's turn runs to that
	// turn, at its next model call (agent.WithSteering), instead of
	// queueing it for a turn of its own.
	Steering bool
}

// Hooks observe the engine; all are optional and must return quickly.
type Hooks struct {
	Queue func(pending, running int) // turns waiting and running
	// Queued is told that a reply was queued for a channel's outbox.
	Queued func(channel string)
}

// Engine runs the turns. Create it with New, connect sources with Attach,
// and end it with Shutdown.
type Engine struct {
	store  Store
	answer Answerer
	cfg    Config
	log    *slog.Logger
	hooks  Hooks
	slots  chan struct{}
	wg     sync.WaitGroup

	mu       sync.Mutex
	sources  map[string]Source // by inbox channel
	chats    map[string]*chatQueue
	known    map[int64]bool // items queued or running
	queued   int
	running  int
	stopping bool
	held     int // Attach is loading: queue without starting chats
	fullTold map[string]bool
}

// New returns an engine over store that answers with a.
func New(store Store, a Answerer, cfg Config, log *slog.Logger, hooks Hooks) *Engine {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxConcurrent <= 0 {
		cfg.MaxConcurrent = 4
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = 30 * time.Second
	}
	return &Engine{
		store: store, answer: a, cfg: cfg, log: log, hooks: hooks,
		slots:    make(chan struct{}, cfg.MaxConcurrent),
		sources:  map[string]Source{},
		chats:    map[string]*chatQueue{},
		known:    map[int64]bool{},
		fullTold: map[string]bool{},
	}
}

// Attach makes src the reader of the inbox channels named and queues what
// they hold unanswered, in the order it was recorded; from then on Add
// queues their new items. The items of one interrupted turn are all
// queued before any chat starts.
func (e *Engine) Attach(ctx context.Context, src Source, channels ...string) error {
	var pending []InboxItem
	for _, ch := range channels {
		items, err := e.store.PendingInbound(ctx, ch)
		if err != nil {
			return fmt.Errorf("load pending messages of %s: %w", ch, err)
		}
		pending = append(pending, items...)
	}
	slices.SortFunc(pending, func(a, b InboxItem) int { return cmp.Compare(a.ID, b.ID) })
	e.mu.Lock()
	for _, ch := range channels {
		e.sources[ch] = src
	}
	e.held++
	e.mu.Unlock()
	for _, it := range pending {
		e.Add(ctx, it)
	}
	e.mu.Lock()
	e.held--
	e.startAllLocked()
	e.mu.Unlock()
	if len(pending) > 0 {
		e.log.Info("resuming recorded messages", "count", len(pending), "channels", fmt.Sprint(channels))
	}
	return nil
}

// Add routes a recorded item: answered at once, dropped, or queued in its
// chat. Items of a channel no source reads yet stay in the inbox (Attach
// loads them); an item already queued is not queued again.
func (e *Engine) Add(ctx context.Context, it InboxItem) {
	e.mu.Lock()
	src := e.sources[it.Channel]
	dup := e.known[it.ID]
	if src != nil && !dup {
		e.known[it.ID] = true
	}
	e.mu.Unlock()
	if src == nil || dup {
		return
	}
	j := src.Prepare(ctx, it)
	if j.Now {
		e.forget(it.ID)
		t := j.Turn
		t.Inbox = []int64{it.ID}
		e.finish(ctx, t, j.Reply)
		return
	}
	j.Item, j.src = it, src
	e.enqueue(&j)
}

func (e *Engine) forget(ids ...int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, id := range ids {
		delete(e.known, id)
	}
}

// Stop cancels the chat's running turn, keeping what is queued after it,
// and says what it stopped.
func (e *Engine) Stop(chat string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	q := e.chats[chat]
	if q == nil || q.cancel == nil {
		return "Nothing is running."
	}
	q.cancel(ErrStopped)
	return "Stopped working on " + q.current + "."
}

// Load is a chat's queue and the totals, for /status.
type Load struct {
	Waiting int  // this chat's turns waiting
	Busy    bool // this chat's turn is running
	Queued  int  // turns waiting in every chat
	Running int  // turns running in every chat
}

// ChatLoad reports the load of chat and of all chats.
func (e *Engine) ChatLoad(chat string) Load {
	e.mu.Lock()
	defer e.mu.Unlock()
	l := Load{Queued: e.queued, Running: e.running}
	if q := e.chats[chat]; q != nil {
		l.Waiting, l.Busy = len(q.jobs), q.cancel != nil
	}
	return l
}

// Shutdown stops starting turns, lets running ones finish for up to the
// configured timeout and then cancels them; their items stay in the inbox
// and resume on the next start.
func (e *Engine) Shutdown() {
	e.mu.Lock()
	e.stopping = true
	running := e.running
	e.mu.Unlock()
	done := make(chan struct{})
	go func() {
		e.wg.Wait()
		close(done)
	}()
	if running > 0 {
		e.log.Info("waiting for running turns", "running", running, "timeout", e.cfg.ShutdownTimeout)
	}
	t := time.NewTimer(e.cfg.ShutdownTimeout)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		e.log.Warn("turns still running at shutdown are interrupted; they resume on the next start")
		e.cancelAll(ErrShutdown)
		<-done
	}
}

func (e *Engine) cancelAll(cause error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, q := range e.chats {
		if q.cancel != nil {
			q.cancel(cause)
		}
	}
}

// report must be called with mu held.
func (e *Engine) report() {
	if e.hooks.Queue != nil {
		e.hooks.Queue(e.queued, e.running)
	}
}

// Has reports whether the item is queued or its turn runs.
func (e *Engine) Has(id int64) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.known[id]
}
