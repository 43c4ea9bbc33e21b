package telegram

import (
	"context"
	"errors"
	"fmt"
	"html"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/internal/human"
	"github.com/nanobot-go/nanobot/turns"
)

// Progress modes (channels.telegram.progress).
const (
	ProgressOff     = "off"     // "typing…" only
	ProgressStatus  = "status"  // a status message while tools run, deleted when the turn ends
	ProgressVerbose = "verbose" // the status message is kept, with the list of calls
)

const (
	defaultProgressInterval = 3 * time.Second
	// statusCalls is how many of the latest calls a running status shows,
	// finalCalls how many a kept one lists.
	statusCalls = 4
	finalCalls  = 20
	argLimit    = 48
	// statusTimeout bounds each Bot API call of a status, and finalWait how
	// long its last one waits out a rate limit.
	statusTimeout = 10 * time.Second
	finalWait     = 10 * time.Second
	interrupted   = "⏹ Interrupted by a restart."
)

// Progress shows the chat what the batch's turn does: a status message,
// sent when the first tool call starts and edited as the turn goes. It
// lives on its own goroutine, so the turn never waits for Telegram.
func (s source) Progress(ctx context.Context, batch []*turns.Job) (func(agent.ProgressEvent), func()) {
	mode := s.c.progressMode()
	id, err := chatID(batch[0].Item.ChatID)
	if mode == ProgressOff || err != nil {
		return func(agent.ProgressEvent) {}, func() {}
	}
	st := &status{
		c:       s.c,
		chat:    id,
		verbose: mode == ProgressVerbose,
		start:   time.Now(),
		wake:    make(chan struct{}, 1),
		ended:   make(chan struct{}),
	}
	s.c.bg.Go(func() { st.run(context.WithoutCancel(ctx)) })
	return st.report, sync.OnceFunc(func() { close(st.ended) })
}

// SetProgress changes what chats see while a turn runs tools (ProgressOff,
// ProgressStatus or ProgressVerbose), from the next turn on.
func (c *Channel) SetProgress(mode string) {
	if mode == "" {
		mode = ProgressStatus
	}
	c.progress.Store(&mode)
}

func (c *Channel) progressMode() string { return *c.progress.Load() }

// status is the status message of one running turn.
type status struct {
	c       *Channel
	chat    int64
	verbose bool
	start   time.Time
	wake    chan struct{} // an event arrived
	ended   chan struct{} // the turn ended

	mu    sync.Mutex
	calls []toolCall

	// Owned by run.
	msg      int       // the message on screen; 0 before the first call
	shown    string    // its text
	last     time.Time // of the last Bot API call
	paused   time.Time // a 429 asked to wait until then
	vanished bool      // the message is gone (the user deleted it) or the chat refuses it
}

// toolCall is one call as the status shows it.
type toolCall struct {
	round, call  int
	tool, arg    string
	done, failed bool
	dur          time.Duration
}

// report takes a turn's event; it returns at once.
func (st *status) report(ev agent.ProgressEvent) {
	st.mu.Lock()
	switch ev.Kind {
	case agent.ProgressTool:
		st.calls = append(st.calls, toolCall{round: ev.Round, call: ev.Call, tool: human.Visible(ev.Tool),
			arg: human.Visible(human.Args(ev.Args, argLimit))})
	case agent.ProgressToolDone:
		for i := len(st.calls) - 1; i >= 0; i-- {
			if c := &st.calls[i]; c.round == ev.Round && c.call == ev.Call {
				c.done, c.failed, c.dur = true, ev.Failed, ev.Duration
				break
			}
		}
	default:
		st.mu.Unlock()
		return
	}
	st.mu.Unlock()
	select {
	case st.wake <- struct{}{}:
	default:
	}
}

// run shows the latest state at most once per interval (the clock is
// refreshed less often) until the turn ends, then removes or keeps the
// message.
func (st *status) run(ctx context.Context) {
	interval := st.c.cfg.ProgressInterval
	clock := time.NewTicker(5 * interval)
	defer clock.Stop()
	var due <-chan time.Time // a throttled update waits
	dirty := false
	for {
		select {
		case <-st.ended:
			st.finish(ctx)
			return
		case <-st.wake:
			dirty = true
		case <-clock.C:
			dirty = dirty || st.msg != 0
		case <-due:
			due = nil
		}
		if !dirty || due != nil {
			continue
		}
		next := st.paused
		if st.msg != 0 {
			next = later(next, st.last.Add(interval))
		}
		if wait := time.Until(next); wait > 0 {
			due = time.After(wait)
			continue
		}
		dirty = false
		st.show(ctx, st.render(false))
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// show sends the status message, or edits it to text.
func (st *status) show(ctx context.Context, text string) {
	if text == st.shown || st.vanished {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	st.last = time.Now()
	noPreview := &models.LinkPreviewOptions{IsDisabled: bot.True()}
	if st.msg == 0 {
		m, err := st.c.bot.SendMessage(ctx, &bot.SendMessageParams{ChatID: st.chat, Text: text, ParseMode: models.ParseModeHTML,
			DisableNotification: true, LinkPreviewOptions: noPreview})
		if err != nil {
			st.failed("send status", err)
			if kind, _ := classify(st.c.scrub(err)); kind == failPermanent || kind == failBadHTML {
				st.vanished = true // a blocked bot, a chat gone: no more tries this turn
			}
			return
		}
		st.msg, st.shown = m.ID, text
		st.c.statuses.put(ctx, st.c, statusRef{chat: st.chat, msg: m.ID}, true)
		return
	}
	_, err := st.c.bot.EditMessageText(ctx, &bot.EditMessageTextParams{ChatID: st.chat, MessageID: st.msg, Text: text,
		ParseMode: models.ParseModeHTML, LinkPreviewOptions: noPreview})
	switch {
	case err == nil, notModified(err):
		st.shown = text
	case gone(err):
		st.vanished = true
		st.c.statuses.put(ctx, st.c, statusRef{chat: st.chat, msg: st.msg}, false)
	default:
		st.failed("edit status", err)
	}
}

// finish removes the status message, or in verbose mode edits it to the
// list of calls. A rate limit is waited out once, for a short while; a
// failure that may heal leaves the record for the next start to tidy up.
func (st *status) finish(ctx context.Context) {
	for try := 0; try < 2 && st.msg != 0 && !st.vanished; try++ {
		if wait := time.Until(st.paused); wait > finalWait {
			return
		} else if wait > 0 {
			time.Sleep(wait)
		}
		if st.close(ctx) {
			st.c.statuses.put(ctx, st.c, statusRef{chat: st.chat, msg: st.msg}, false)
			return
		}
		if !st.paused.After(time.Now()) {
			return // not a rate limit
		}
	}
}

// close makes the last call of the status; true when it is done with,
// one way or another.
func (st *status) close(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	if st.verbose {
		text := st.render(true)
		st.show(ctx, text)
		return st.shown == text || st.vanished
	}
	_, err := st.c.bot.DeleteMessage(ctx, &bot.DeleteMessageParams{ChatID: st.chat, MessageID: st.msg})
	if err == nil || gone(err) {
		return true
	}
	st.failed("delete status", err)
	kind, _ := classify(st.c.scrub(err))
	return kind == failPermanent
}

// failed notes a Bot API failure of the status; a rate limit pauses it.
func (st *status) failed(what string, err error) {
	err = st.c.scrub(err)
	kind, after := classify(err)
	switch kind {
	case failRetryAfter:
		st.paused = time.Now().Add(after)
		st.c.log.Debug("telegram rate limit; status updates skipped", "chat_id", st.chat, "retry_in", after)
	case failPermanent, failBadHTML:
		st.c.log.Warn(what, "chat_id", st.chat, "err", err)
	default:
		st.c.log.Debug(what, "chat_id", st.chat, "err", err)
	}
}

// render is the status text (HTML): the clock and the latest calls while
// the turn runs, every call with its duration when final.
func (st *status) render(final bool) string {
	st.mu.Lock()
	calls := slices.Clone(st.calls)
	st.mu.Unlock()
	elapsed := human.Clock(time.Since(st.start))
	var b strings.Builder
	limit := statusCalls
	if final {
		limit = finalCalls
		noun := "tool calls"
		if len(calls) == 1 {
			noun = "tool call"
		}
		fmt.Fprintf(&b, "🔧 %d %s · %s", len(calls), noun, elapsed)
	} else {
		fmt.Fprintf(&b, "⏳ Working… %s", elapsed)
	}
	if n := len(calls) - limit; n > 0 {
		fmt.Fprintf(&b, "\n• … %d earlier", n)
		calls = calls[n:]
	}
	for _, c := range calls {
		b.WriteString("\n• " + html.EscapeString(c.tool))
		if c.arg != "" {
			b.WriteString(" <code>" + html.EscapeString(c.arg) + "</code>")
		}
		switch {
		case !c.done && final:
			b.WriteString(" ⏹")
		case !c.done:
			b.WriteString(" …")
		case c.failed:
			b.WriteString(" ✗")
		default:
			b.WriteString(" ✓")
		}
		if c.done && final {
			b.WriteString(" " + human.Duration(c.dur))
		}
	}
	return b.String()
}

// notModified reports Telegram's answer to an edit that changes nothing.
func notModified(err error) bool {
	return errors.Is(err, bot.ErrorBadRequest) && strings.Contains(err.Error(), "message is not modified")
}

// gone reports that the message to edit or delete no longer exists.
func gone(err error) bool {
	if !errors.Is(err, bot.ErrorBadRequest) {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "message to edit not found") || strings.Contains(msg, "message to delete not found")
}
