package turns

import (
	"context"
	"crypto/rand"
	"errors"
	"time"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/internal/backoff"
)

// runBatch is one turn. While the disk is full nothing of the turn can be
// saved: the chat is told once, and the turn is tried again, from what
// its records hold, until it can be saved or the engine stops (the items
// stay in the inbox for the next start).
//
// It returns the jobs the turn took while it ran (steering) and kept.
func (e *Engine) runBatch(ctx context.Context, batch []*Job) (taken []*Job) {
	chat := batch[0].Chat
	var wait time.Duration
	for {
		o, saved := e.runTurn(ctx, batch)
		taken = append(taken, e.settleTaken(ctx, chat, batch[0].Item.Channel)...)
		if saved {
			batch[0].wait.tell(o)
			break
		}
		wait = backoff.Next(wait) // at most backoff.Max: the chat is answered soon after space returns
		e.storageFull(ctx, batch, wait)
		if !backoff.Sleep(ctx, wait) {
			batch[0].wait.tell(outcome{err: context.Cause(ctx)})
			return taken
		}
		e.refresh(ctx, batch)
	}
	e.mu.Lock()
	told := e.fullTold[chat]
	delete(e.fullTold, chat)
	e.mu.Unlock()
	if told {
		e.log.Info("storage works again; the waiting message was answered", "chat", chat)
	}
	return taken
}

// runTurn runs the batch's turn and returns its outcome; saved false means
// the disk is full and nothing of what was left to save could be saved.
func (e *Engine) runTurn(ctx context.Context, batch []*Job) (o outcome, saved bool) {
	src := batch[0].src
	p := src.Plan(ctx, batch)
	t := p.Turn
	t.Inbox = itemIDs(batch)
	if p.Answered {
		return outcome{text: p.Reply}, !errors.Is(e.finish(ctx, t, p.Reply), ErrStorageFull)
	}
	if t.ID == "" {
		t.ID = NewID()
	}
	log := e.log.With("turn_id", t.ID, "chat", batch[0].Chat)
	if p.Resume {
		log.Info("resuming interrupted turn", "items", len(t.Inbox))
	}
	start := time.Now()
	done := func() {}
	if pr, ok := src.(Presence); ok {
		done = pr.Busy(ctx, batch)
	}
	actx := e.withSteering(agent.WithTurn(ctx, t), batch[0].Chat, p.Steer)
	if pr, ok := src.(Progress); ok {
		report, end := pr.Progress(ctx, batch)
		defer end()
		actx = agent.WithProgress(actx, report)
	}
	res, err := e.answer.Answer(actx, t, p.Message, p.Resume)
	done()

	switch cause := context.Cause(ctx); {
	case errors.Is(cause, ErrShutdown):
		log.Info("turn interrupted by shutdown", "dur", time.Since(start))
		return outcome{err: ErrShutdown}, true
	case errors.Is(cause, context.Canceled):
		log.Info("turn interrupted: its caller left", "dur", time.Since(start))
		return outcome{err: cause}, true
	case errors.Is(cause, ErrStopped):
		log.Info("turn stopped by the user", "dur", time.Since(start))
		e.finish(ctx, t, "")
		return outcome{err: ErrStopped}, true
	case errors.Is(err, ErrStorageFull):
		log.Error("turn could not be saved: the disk is full", "err", err, "dur", time.Since(start))
		return outcome{}, false
	case err != nil:
		log.Error("turn failed", "err", err, "dur", time.Since(start))
	default:
		log.Info("turn done", "dur", time.Since(start), "reply_chars", len(res.Text))
	}
	told := p.Told
	if told == nil {
		told = Told
	}
	text := told(res, err)
	return outcome{text: text, err: err}, !errors.Is(e.finish(ctx, t, text), ErrStorageFull)
}

func itemIDs(batch []*Job) []int64 {
	ids := make([]int64, 0, len(batch))
	for _, j := range batch {
		if j.Item.ID != 0 {
			ids = append(ids, j.Item.ID)
		}
	}
	return ids
}

// NewID is a fresh turn id.
func NewID() string { return rand.Text()[:12] }

// refresh reloads the batch's items from the inbox: a try the full disk
// ended may have started them (its first record was saved).
func (e *Engine) refresh(ctx context.Context, batch []*Job) {
	pending, err := e.store.PendingInbound(ctx, batch[0].Item.Channel)
	if err != nil {
		return
	}
	for _, j := range batch {
		for _, it := range pending {
			if it.ID == j.Item.ID {
				j.Item.State, j.Item.MessageID = it.State, it.MessageID
			}
		}
	}
}

// storageFull tells the chat, once per outage, that its message waits for
// disk space.
func (e *Engine) storageFull(ctx context.Context, batch []*Job, retry time.Duration) {
	chat := batch[0].Chat
	e.mu.Lock()
	told := e.fullTold[chat]
	e.fullTold[chat] = true
	e.mu.Unlock()
	if told {
		return
	}
	e.log.Error("storage is full: messages wait until disk space is freed", "chat", chat, "retry_in", retry)
	if df, ok := batch[0].src.(DiskFull); ok {
		df.StorageFull(ctx, batch, retry)
	}
}

// finish closes the turn's items and queues text for its chat in one store
// call. It must happen even when the turn's context is gone, so it runs
// detached and retries for a while. This is the one place items are
// closed outside a turn's own last record.
func (e *Engine) finish(ctx context.Context, t agent.Turn, text string) error {
	if len(t.Inbox) == 0 {
		return nil
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	var wait time.Duration
	for {
		err := e.store.FinishTurn(cctx, t, text)
		if err == nil {
			break
		}
		if cctx.Err() != nil || errors.Is(err, ErrStorageFull) {
			if !errors.Is(err, ErrStorageFull) {
				e.log.Error("messages stay unanswered until the next start", "chat_id", t.ChatID, "err", err)
			}
			return err // a full disk is waited out by the turn's caller
		}
		wait = backoff.Next(wait)
		e.log.Warn("store call failed", "op", "complete messages", "err", err, "retry_in", wait)
		if !backoff.Sleep(cctx, wait) {
			return err
		}
	}
	if e.hooks.Queued != nil && t.Channel != "" {
		e.hooks.Queued(t.Channel)
	}
	return nil
}
