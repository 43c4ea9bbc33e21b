package telegram

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/session"
)

var (
	errStopped  = errors.New("stopped by /stop")
	errShutdown = errors.New("shutting down")
)

// maxMerge bounds how many queued texts become one turn.
const maxMerge = 20

type jobKind int

const (
	jobText   jobKind = iota // plain text; consecutive ones of a sender merge
	jobMedia                 // photo, document or voice: prepared at run time
	jobNew                   // /new, in order with the chat's messages
	jobSystem                // a message from the daemon itself (a background task's report); never merged
)

// job is one recorded message waiting for its chat's turn.
type job struct {
	item   channels.InboxItem
	msg    *models.Message
	kind   jobKind
	text   string // what the model reads: mention stripped, "[Name]: " in groups
	sender int64
	from   string // the user a system message acts for
}

// chatQueue is the work of one chat. At most one goroutine (active) takes
// from it, which gives each chat its order.
type chatQueue struct {
	jobs    []*job
	active  bool
	cancel  context.CancelCauseFunc // of the running turn
	current string                  // what the running turn answers, for /stop
}

// dispatcher runs one turn at a time per chat and up to a limit of chats at
// once.
type dispatcher struct {
	c     *Channel
	slots chan struct{}
	base  context.Context // parent of every turn; set by Run
	wg    sync.WaitGroup

	mu       sync.Mutex
	chats    map[string]*chatQueue
	queued   int
	running  int
	stopping bool
	held     bool // queue without starting chats, until release
}

func newDispatcher(c *Channel, limit int) *dispatcher {
	return &dispatcher{
		c:     c,
		slots: make(chan struct{}, limit),
		base:  context.Background(),
		chats: map[string]*chatQueue{},
	}
}

// add routes a recorded item: answered at once, dropped, or queued.
func (d *dispatcher) add(ctx context.Context, it channels.InboxItem) {
	j, reply, queue := d.c.prepare(ctx, it)
	if queue {
		d.enqueue(j)
		return
	}
	d.c.complete(ctx, []int64{it.ID}, it.ChatID, reply, 0)
}

func (d *dispatcher) enqueue(j *job) {
	d.mu.Lock()
	defer d.mu.Unlock()
	chat := j.item.ChatID
	q := d.chats[chat]
	if q == nil {
		q = &chatQueue{}
		d.chats[chat] = q
	}
	q.jobs = append(q.jobs, j)
	d.queued++
	d.report()
	d.startLocked(chat, q)
}

// startLocked starts the chat's worker unless it runs. mu must be held.
func (d *dispatcher) startLocked(chat string, q *chatQueue) {
	if !q.active && !d.stopping && !d.held {
		q.active = true
		d.wg.Add(1)
		go d.work(chat, q)
	}
}

// hold queues what is added without starting any chat, so the items of one
// interrupted turn, recorded at start, are all queued before a worker takes
// the first of them. release starts the chats.
func (d *dispatcher) hold() {
	d.mu.Lock()
	d.held = true
	d.mu.Unlock()
}

func (d *dispatcher) release() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.held = false
	for chat, q := range d.chats {
		d.startLocked(chat, q)
	}
}

// report must be called with mu held.
func (d *dispatcher) report() {
	if d.c.hooks.Queue != nil {
		d.c.hooks.Queue(d.queued, d.running)
	}
}

// work runs a chat's turns one after another, holding a slot per turn so
// other chats get theirs in between.
func (d *dispatcher) work(chat string, q *chatQueue) {
	defer d.wg.Done()
	for {
		select {
		case d.slots <- struct{}{}:
		case <-d.base.Done():
			d.mu.Lock()
			q.active = false
			d.mu.Unlock()
			return
		}
		d.mu.Lock()
		if d.stopping || len(q.jobs) == 0 {
			q.active = false
			if len(q.jobs) == 0 {
				delete(d.chats, chat)
			}
			d.mu.Unlock()
			<-d.slots
			return
		}
		batch := takeBatch(q)
		d.queued -= len(batch)
		d.running++
		ctx, cancel := context.WithCancelCause(d.base)
		q.cancel = cancel
		q.current = describe(batch)
		d.report()
		d.mu.Unlock()

		d.c.runBatch(ctx, batch)
		cancel(nil)

		d.mu.Lock()
		q.cancel = nil
		q.current = ""
		d.running--
		d.report()
		d.mu.Unlock()
		<-d.slots
	}
}

// takeBatch removes the next turn's jobs from the head of q: the items of an
// interrupted turn together, or consecutive texts of one sender, or one job.
func takeBatch(q *chatQueue) []*job {
	first := q.jobs[0]
	n := 1
	switch {
	case first.item.State == channels.InboxStarted:
		// The items one turn answered share its first message.
		for n < len(q.jobs) && q.jobs[n].item.State == channels.InboxStarted && q.jobs[n].item.MessageID == first.item.MessageID {
			n++
		}
	case first.kind == jobText:
		for n < len(q.jobs) && n < maxMerge {
			next := q.jobs[n]
			if next.kind != jobText || next.sender != first.sender || next.item.State != channels.InboxPending {
				break
			}
			n++
		}
	}
	batch := q.jobs[:n:n]
	q.jobs = q.jobs[n:]
	return batch
}

func describe(batch []*job) string {
	s := batch[len(batch)-1].text
	if s == "" {
		s = "a message"
	}
	if r := []rune(s); len(r) > 80 {
		s = string(r[:80]) + "…"
	}
	if len(batch) > 1 {
		return fmt.Sprintf("%d messages, the last: %q", len(batch), s)
	}
	return strconv.Quote(s)
}

// stop cancels the chat's running turn, keeping what is queued after it.
func (d *dispatcher) stop(chat string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	q := d.chats[chat]
	if q == nil || q.cancel == nil {
		return "Nothing is running."
	}
	q.cancel(errStopped)
	return "Stopped working on " + q.current + "."
}

// chatLoad reports this chat's queue and the totals, for /status.
func (d *dispatcher) chatLoad(chat string) (waiting int, busy bool, queued, running int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if q := d.chats[chat]; q != nil {
		waiting, busy = len(q.jobs), q.cancel != nil
	}
	return waiting, busy, d.queued, d.running
}

// shutdown lets running turns finish for up to timeout, then cancels them;
// their items stay in the inbox and resume on the next start.
func (d *dispatcher) shutdown(timeout time.Duration, cancel context.CancelCauseFunc) {
	d.mu.Lock()
	d.stopping = true
	running := d.running
	d.mu.Unlock()
	done := make(chan struct{})
	go func() {
		d.wg.Wait()
		close(done)
	}()
	if running > 0 {
		d.c.log.Info("waiting for running turns", "running", running, "timeout", timeout)
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		d.c.log.Warn("turns still running at shutdown are interrupted; they resume on the next start")
		cancel(errShutdown)
		<-done
	}
}

// runBatch is one turn: prepare the message, ask the responder (whose
// records start the items and close them with the answer), and complete the
// items with whatever reply the turn did not queue itself. While the disk is
// full nothing of the turn can be saved: the chat is told once, and the turn
// is tried again, from what its records hold, until it can be saved or the
// channel stops (the items stay in the inbox for the next start).
func (c *Channel) runBatch(ctx context.Context, batch []*job) {
	var wait time.Duration
	for !c.runTurn(ctx, batch) {
		wait = min(nextBackoff(wait), storageRetryMax)
		c.storageFull(ctx, batch[0].item.ChatID, wait)
		if !sleepCtx(ctx, wait) {
			return
		}
		c.refresh(ctx, batch)
	}
	c.storageBack(batch[0].item.ChatID)
}

// storageRetryMax caps the wait between tries of a turn the full disk
// refused, so the chat is answered soon after space returns.
const storageRetryMax = 30 * time.Second

// runTurn runs the batch's turn; false means the disk is full and nothing
// of what was left to save could be saved.
func (c *Channel) runTurn(ctx context.Context, batch []*job) bool {
	first, last := batch[0], batch[len(batch)-1]
	ids := make([]int64, len(batch))
	for i, j := range batch {
		ids[i] = j.item.ID
	}
	chat := first.item.ChatID
	var replyTo int64
	if c.cfg.ReplyToMessage && last.msg != nil {
		replyTo = int64(last.msg.ID)
	}

	if first.kind == jobNew && first.item.State != channels.InboxStarted {
		return !errors.Is(c.complete(ctx, ids, chat, c.resetSession(ctx, first), replyTo), channels.ErrStorageFull)
	}

	t := c.turnFor(first)
	t.Inbox, t.ReplyTo = ids, replyTo
	log := c.log.With("turn_id", t.ID, "chat_id", chat)
	resume := first.item.State == channels.InboxStarted
	var msg agent.Message
	if resume {
		msg = agent.Message{Role: agent.RoleUser, Content: mergedText(batch), CreatedAt: first.item.ReceivedAt}
		log.Info("resuming interrupted turn", "items", len(ids))
	} else {
		var reply string
		var ok bool
		msg, reply, ok = c.buildMessage(ctx, batch)
		if !ok {
			return !errors.Is(c.complete(ctx, ids, chat, reply, replyTo), channels.ErrStorageFull)
		}
	}

	start := time.Now()
	stopTyping := c.startTyping(ctx, chat)
	reply, err := c.responder.Respond(agent.WithTurn(ctx, t), t, msg, resume)
	stopTyping()

	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errShutdown):
		log.Info("turn interrupted by shutdown", "dur", time.Since(start))
		return true
	case errors.Is(cause, errStopped):
		log.Info("turn stopped by the user", "dur", time.Since(start))
		c.complete(ctx, ids, chat, "", 0)
		return true
	case errors.Is(err, channels.ErrStorageFull):
		log.Error("turn could not be saved: the disk is full", "err", err, "dur", time.Since(start))
		return false
	case err != nil:
		log.Error("turn failed", "err", err, "dur", time.Since(start))
		reply = "Sorry, something went wrong on my side and I could not answer that. Please try again."
	default:
		log.Info("turn done", "dur", time.Since(start), "reply_chars", len(reply))
	}
	return !errors.Is(c.complete(ctx, ids, chat, reply, replyTo), channels.ErrStorageFull)
}

// refresh reloads the batch's items from the inbox: a try the full disk
// ended may have started them (its first record was saved).
func (c *Channel) refresh(ctx context.Context, batch []*job) {
	pending, err := c.store.PendingInbound(ctx, channelName)
	if err != nil {
		return
	}
	for _, j := range batch {
		for _, it := range pending {
			if it.ID == j.item.ID {
				j.item.State, j.item.MessageID = it.State, it.MessageID
			}
		}
	}
}

// storageFull tells the chat, once per outage, that its message waits for
// disk space. The outbox cannot hold the notice, so it is sent directly.
func (c *Channel) storageFull(ctx context.Context, chat string, retry time.Duration) {
	c.fullMu.Lock()
	told := c.fullTold[chat]
	c.fullTold[chat] = true
	c.fullMu.Unlock()
	if told {
		return
	}
	c.log.Error("storage is full: messages wait until disk space is freed", "chat_id", chat, "retry_in", retry)
	id, err := chatID(chat)
	if err != nil {
		return
	}
	callCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := c.bot.SendMessage(callCtx, &bot.SendMessageParams{ChatID: id, Text: storageFullText}); err != nil {
		c.log.Warn("tell the chat the disk is full", "chat_id", chat, "err", c.scrub(err))
	}
}

func (c *Channel) storageBack(chat string) {
	c.fullMu.Lock()
	defer c.fullMu.Unlock()
	if c.fullTold[chat] {
		delete(c.fullTold, chat)
		c.log.Info("storage works again; the waiting message was answered", "chat_id", chat)
	}
}

const storageFullText = "I can't save anything right now: the disk of the server I run on is full. " +
	"Your message is not lost; I'll answer it as soon as there is space again."

func mergedText(batch []*job) string {
	parts := make([]string, 0, len(batch))
	for _, j := range batch {
		if j.text != "" {
			parts = append(parts, j.text)
		}
	}
	return strings.Join(parts, "\n\n")
}

func (c *Channel) turnFor(j *job) agent.Turn {
	t := agent.Turn{
		ID:      rand.Text()[:12],
		Session: session.Chat("telegram", j.item.ChatID).String(),
		Channel: channelName,
		ChatID:  j.item.ChatID,
	}
	if j.msg != nil && j.msg.From != nil {
		t.SenderID = strconv.FormatInt(j.msg.From.ID, 10)
		t.SenderName = displayName(j.msg.From)
	} else if j.from != "" {
		t.SenderID = j.from
	}
	return t
}

func (c *Channel) resetSession(ctx context.Context, j *job) string {
	if c.sessions == nil {
		return "Starting a new conversation is not available."
	}
	if err := c.sessions.Reset(ctx, session.Chat("telegram", j.item.ChatID).String()); err != nil {
		c.log.Error("reset session", "chat_id", j.item.ChatID, "err", err)
		var ue interface{ UserMessage() string }
		if errors.As(err, &ue) {
			return ue.UserMessage()
		}
		return "Sorry, I could not start a new conversation. Please try again."
	}
	return "Started a new conversation. What's next?"
}

// complete marks items done and enqueues the reply (none when empty) in one
// store call. It must happen even when the turn's context is gone, so it runs
// detached and retries for a while.
func (c *Channel) complete(ctx context.Context, ids []int64, chat, reply string, replyTo int64) error {
	var out *channels.OutboxItem
	if reply != "" {
		out = &channels.OutboxItem{
			Channel:   channelName,
			ChatID:    chat,
			Text:      reply,
			ReplyTo:   replyTo,
			InboxID:   ids[len(ids)-1],
			State:     channels.OutboxPending,
			CreatedAt: time.Now().UTC(),
		}
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	err := c.retryStore(cctx, "complete messages", func(ctx context.Context) error {
		_, err := c.store.CompleteInbound(ctx, ids, out)
		return err
	})
	if err != nil {
		if !errors.Is(err, channels.ErrStorageFull) {
			c.log.Error("messages stay unanswered until the next start", "chat_id", chat, "err", err)
		}
		return err
	}
	if out != nil {
		c.send.notify()
	}
	return nil
}

// retryStore runs fn until it succeeds or ctx ends, backing off in between.
func (c *Channel) retryStore(ctx context.Context, what string, fn func(context.Context) error) error {
	var wait time.Duration
	for {
		err := fn(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil || errors.Is(err, channels.ErrStorageFull) {
			return err // a full disk is waited out by the turn's caller
		}
		wait = nextBackoff(wait)
		c.log.Warn("store call failed", "op", what, "err", err, "retry_in", wait)
		if !sleepCtx(ctx, wait) {
			return err
		}
	}
}

// startTyping shows "typing…" in chat until the returned function is called.
func (c *Channel) startTyping(ctx context.Context, chat string) func() {
	id, err := chatID(chat)
	if err != nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(c.cfg.TypingInterval)
		defer tick.Stop()
		for {
			callCtx, cancelCall := context.WithTimeout(ctx, 10*time.Second)
			_, err := c.bot.SendChatAction(callCtx, &bot.SendChatActionParams{ChatID: id, Action: models.ChatActionTyping})
			cancelCall()
			if err != nil && ctx.Err() == nil {
				c.log.Debug("send typing", "chat_id", chat, "err", c.scrub(err))
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}
