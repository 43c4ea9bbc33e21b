package telegram

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/nanobot-go/nanobot/channels/telegram/markup"
	"github.com/nanobot-go/nanobot/internal/backoff"
	"github.com/nanobot-go/nanobot/turns"
)

const (
	messageLimit   = 4096 // UTF-16 code units, as Telegram counts
	sendParallel   = 8    // chats delivered to at once
	sendTimeout    = 30 * time.Second
	rescanInterval = 30 * time.Second
)

// sender delivers the outbox. Each chat's replies go out in order from one
// goroutine at a time, so a chat that is rate limited or unreachable never
// holds up another.
type sender struct {
	c     *Channel
	wake  chan struct{}
	slots chan struct{}
	wg    sync.WaitGroup

	draining atomic.Bool

	mu   sync.Mutex
	busy map[string]bool
	// sent remembers replies Telegram accepted whose MarkSent failed, so a
	// retry marks them instead of sending them again.
	sent map[int64]int64
	// finished is the highest outbox id each chat's delivery has finished
	// with: a round that read the outbox just before that delivery ended
	// must not start the same reply again.
	finished map[string]int64
}

func newSender(c *Channel) *sender {
	return &sender{
		c:        c,
		wake:     make(chan struct{}, 1),
		slots:    make(chan struct{}, sendParallel),
		busy:     map[string]bool{},
		sent:     map[int64]int64{},
		finished: map[string]int64{},
	}
}

// notify asks the sender to look at the outbox.
func (s *sender) notify() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// drain makes run return once the outbox is empty.
func (s *sender) drain() {
	s.draining.Store(true)
	s.notify()
}

func (s *sender) run(ctx context.Context) {
	defer s.wg.Wait()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		idle, ok := s.round(ctx)
		if idle && s.draining.Load() {
			return
		}
		next := rescanInterval
		if !ok {
			next = 2 * time.Second
		}
		timer.Reset(next)
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		case <-s.c.cfg.Wake:
		case <-timer.C:
		}
	}
}

// round starts a delivery for every chat with pending replies that has none
// running. idle reports an empty outbox; ok is false when the store failed.
func (s *sender) round(ctx context.Context) (idle, ok bool) {
	items, err := s.c.store.PendingOutbound(ctx, channelName)
	if err != nil {
		if ctx.Err() == nil {
			s.c.log.Warn("read outbox", "err", err)
		}
		return false, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var order []string
	byChat := map[string][]turns.OutboxItem{}
	for _, it := range items {
		if it.ID <= s.finished[it.ChatID] {
			continue // delivered since the outbox was read
		}
		if _, seen := byChat[it.ChatID]; !seen {
			order = append(order, it.ChatID)
		}
		byChat[it.ChatID] = append(byChat[it.ChatID], it)
	}
	idle = len(order) == 0 && len(s.busy) == 0
	for _, chat := range order {
		if s.busy[chat] {
			continue
		}
		s.busy[chat] = true
		s.wg.Add(1)
		go s.deliverChat(ctx, chat, byChat[chat])
	}
	return idle, true
}

func (s *sender) deliverChat(ctx context.Context, chat string, items []turns.OutboxItem) {
	defer func() {
		s.mu.Lock()
		delete(s.busy, chat)
		s.mu.Unlock()
		s.notify()
		s.wg.Done()
	}()
	select {
	case s.slots <- struct{}{}:
	case <-ctx.Done():
		return
	}
	defer func() { <-s.slots }()
	for _, it := range items {
		if !s.deliver(ctx, it) {
			// The store failed: pause before the next round tries again.
			backoff.Sleep(ctx, 2*time.Second)
			return
		}
		s.mu.Lock()
		s.finished[chat] = max(s.finished[chat], it.ID)
		s.mu.Unlock()
	}
}

// deliver sends one reply, part by part; false means stop this chat (ctx
// ended or the store failed) and leave the reply pending.
func (s *sender) deliver(ctx context.Context, it turns.OutboxItem) bool {
	s.mu.Lock()
	mid, done := s.sent[it.ID]
	s.mu.Unlock()
	if done {
		return s.markSent(ctx, it.ID, mid)
	}
	log := s.c.log.With("outbox_id", it.ID, "chat_id", it.ChatID)
	chat, err := chatID(it.ChatID)
	if err != nil {
		return s.fail(ctx, it.ID, "chat id is not a number")
	}
	parts := markup.Split(markup.ToHTML(it.Text), messageLimit)
	start, last := 0, int64(0)
	if len(parts) > 1 {
		start, last = s.progress(ctx, it.ID)
	}
	for i := start; i < len(parts); i++ {
		mid, err := s.sendPart(ctx, chat, parts[i], i == 0 && it.ReplyTo != 0, it.ReplyTo, log)
		if err != nil {
			if ctx.Err() != nil {
				return false
			}
			log.Error("telegram refused a reply; giving up on it", "err", err, "part", i+1, "parts", len(parts))
			return s.fail(ctx, it.ID, err.Error())
		}
		last = mid
		if len(parts) > 1 && i < len(parts)-1 {
			// A restart continues after the parts already delivered.
			if err := s.c.store.SetState(ctx, progressKey(it.ID), fmt.Sprintf("%d %d", i+1, mid)); err != nil {
				log.Warn("save delivery progress", "err", err)
			}
		}
	}
	if !s.markSent(ctx, it.ID, last) {
		return false
	}
	if len(parts) > 1 {
		if err := s.c.store.SetState(ctx, progressKey(it.ID), ""); err != nil {
			log.Debug("clear delivery progress", "err", err)
		}
	}
	return true
}

func progressKey(id int64) string { return "telegram.outbox." + strconv.FormatInt(id, 10) + ".parts" }

// progress returns how many parts of a reply were delivered before a restart
// and the message id of the last.
func (s *sender) progress(ctx context.Context, id int64) (int, int64) {
	v, err := s.c.store.State(ctx, progressKey(id))
	if err != nil || v == "" {
		return 0, 0
	}
	a, b, _ := strings.Cut(v, " ")
	n, err1 := strconv.Atoi(a)
	mid, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil || n < 0 {
		return 0, 0
	}
	return n, mid
}

func (s *sender) markSent(ctx context.Context, id, messageID int64) bool {
	if err := s.c.store.MarkSent(ctx, id, messageID); err != nil {
		s.mu.Lock()
		s.sent[id] = messageID
		s.mu.Unlock()
		if ctx.Err() == nil {
			s.c.log.Error("record delivered reply", "outbox_id", id, "err", err)
		}
		return false
	}
	s.mu.Lock()
	delete(s.sent, id)
	s.mu.Unlock()
	return true
}

func (s *sender) fail(ctx context.Context, id int64, reason string) bool {
	if err := s.c.store.MarkOutboundFailed(ctx, id, reason); err != nil {
		s.c.log.Error("record failed reply", "outbox_id", id, "err", err)
		return false
	}
	return true
}

// sendPart sends one HTML part until Telegram takes it: 429 waits as told,
// network errors and 5xx back off, rejected entities fall back to plain
// text. The error is permanent (or ctx ended).
func (s *sender) sendPart(ctx context.Context, chat int64, html string, reply bool, replyTo int64, log *slog.Logger) (int64, error) {
	params := &bot.SendMessageParams{ChatID: chat, Text: html, ParseMode: models.ParseModeHTML}
	if reply {
		params.ReplyParameters = &models.ReplyParameters{MessageID: int(replyTo), AllowSendingWithoutReply: true}
	}
	var wait time.Duration
	for {
		callCtx, cancel := context.WithTimeout(ctx, sendTimeout)
		m, err := s.c.bot.SendMessage(callCtx, params)
		cancel()
		if err == nil {
			return int64(m.ID), nil
		}
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		err = s.c.scrub(err)
		kind, after := classify(err)
		switch kind {
		case failBadHTML:
			if params.ParseMode == "" {
				return 0, err
			}
			log.Warn("telegram rejected the formatting; sending plain text", "err", err)
			params.Text = markup.PlainText(html)
			params.ParseMode = ""
			continue
		case failPermanent:
			return 0, err
		case failRetryAfter:
			wait = after
			log.Warn("telegram rate limit", "retry_in", wait)
		default:
			wait = backoff.Next(wait)
			log.Warn("send reply", "err", err, "retry_in", wait)
		}
		if !backoff.Sleep(ctx, wait) {
			return 0, ctx.Err()
		}
		if kind == failRetryAfter {
			wait = 0
		}
	}
}
