package telegram

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/go-telegram/bot"
)

// statusKey is the state key that lists the status messages on screen,
// "chat:message" separated by spaces: a start after a crash removes what
// a turn that never ended left claiming work in progress.
const statusKey = "telegram.status"

// statusRef is a status message on screen.
type statusRef struct {
	chat int64
	msg  int
}

// statusBook is the durable list of status messages on screen.
type statusBook struct {
	mu   sync.Mutex
	live map[statusRef]bool
}

// put records that ref is on screen (on) or gone, and saves the list. The
// lock is held across the save so saves land in the order they were made.
func (b *statusBook) put(ctx context.Context, c *Channel, ref statusRef, on bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.live == nil {
		b.live = map[statusRef]bool{}
	}
	if on {
		b.live[ref] = true
	} else {
		delete(b.live, ref)
	}
	b.save(ctx, c)
}

// save writes the list; the caller holds b.mu.
func (b *statusBook) save(ctx context.Context, c *Channel) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), statusTimeout)
	defer cancel()
	if err := c.store.SetState(ctx, statusKey, encodeStatuses(b.live)); err != nil {
		c.log.Warn("record status messages", "err", err)
	}
}

func encodeStatuses(live map[statusRef]bool) string {
	refs := slices.SortedFunc(maps.Keys(live), func(a, b statusRef) int {
		return cmp.Or(cmp.Compare(a.chat, b.chat), cmp.Compare(a.msg, b.msg))
	})
	parts := make([]string, len(refs))
	for i, r := range refs {
		parts[i] = fmt.Sprintf("%d:%d", r.chat, r.msg)
	}
	return strings.Join(parts, " ")
}

func decodeStatuses(v string) []statusRef {
	var refs []statusRef
	for _, f := range strings.Fields(v) {
		a, b, _ := strings.Cut(f, ":")
		chat, err1 := strconv.ParseInt(a, 10, 64)
		msg, err2 := strconv.Atoi(b)
		if err1 == nil && err2 == nil && msg > 0 {
			refs = append(refs, statusRef{chat: chat, msg: msg})
		}
	}
	return refs
}

// tidyStatuses removes the status messages the last run left on screen
// (in verbose mode it says they were interrupted). One that Telegram
// could not be asked about stays listed for the next start.
func (c *Channel) tidyStatuses(ctx context.Context) {
	v, err := c.store.State(ctx, statusKey)
	if err != nil {
		c.log.Warn("read status messages", "err", err)
		return
	}
	refs := decodeStatuses(v)
	if len(refs) == 0 {
		return
	}
	verbose := c.progressMode() == ProgressVerbose
	b := &c.statuses
	b.mu.Lock()
	defer b.mu.Unlock()
	b.live = map[statusRef]bool{}
	for _, r := range refs {
		callCtx, cancel := context.WithTimeout(ctx, statusTimeout)
		if verbose {
			_, err = c.bot.EditMessageText(callCtx, &bot.EditMessageTextParams{ChatID: r.chat, MessageID: r.msg, Text: interrupted})
		} else {
			_, err = c.bot.DeleteMessage(callCtx, &bot.DeleteMessageParams{ChatID: r.chat, MessageID: r.msg})
		}
		cancel()
		if err == nil || notModified(err) || gone(err) {
			continue
		}
		err = c.scrub(err)
		if kind, _ := classify(err); kind == failPermanent || kind == failBadHTML {
			c.log.Debug("status message left by the last run cannot be removed", "chat_id", r.chat, "err", err)
			continue
		}
		c.log.Warn("remove status message left by the last run", "chat_id", r.chat, "err", err)
		b.live[r] = true
	}
	c.log.Info("tidied status messages left by the last run", "messages", len(refs), "kept", len(b.live))
	b.save(ctx, c)
}
