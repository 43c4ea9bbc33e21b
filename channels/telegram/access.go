package telegram

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/nanobot-go/nanobot/turns"
)

// allowList decides who may talk to the assistant. It is immutable; the
// channel swaps it whole on reload.
type allowList struct {
	everyone bool
	ids      map[int64]bool
	names    map[string]bool // lower case, without "@"
	firstID  int64           // first numeric entry: the default approver
	size     int
}

func newAllowList(entries []string) *allowList {
	a := &allowList{ids: map[int64]bool{}, names: map[string]bool{}}
	for _, e := range entries {
		e = strings.TrimSpace(e)
		switch {
		case e == "":
			continue
		case e == "*":
			a.everyone = true
		default:
			if id, err := strconv.ParseInt(e, 10, 64); err == nil {
				a.ids[id] = true
				if a.firstID == 0 {
					a.firstID = id
				}
			} else {
				a.names[strings.ToLower(strings.TrimPrefix(e, "@"))] = true
			}
		}
		a.size++
	}
	return a
}

// permits reports whether u, writing in chat, may use the assistant. A
// listed chat id admits everyone in that chat.
func (a *allowList) permits(u *models.User, chat int64) bool {
	if a.everyone {
		return true
	}
	if u == nil {
		return false
	}
	if a.ids[u.ID] || a.ids[chat] {
		return true
	}
	return u.Username != "" && a.names[strings.ToLower(u.Username)]
}

func (a *allowList) warn(log *slog.Logger) {
	switch {
	case a.everyone:
		log.Warn(`channels.telegram.allow_from contains "*": anyone on Telegram can use this assistant and its tools`)
	case a.size == 0:
		log.Warn("channels.telegram.allow_from is empty: nobody can use this assistant; unknown senders are told their user id")
	}
}

// turnAway answers a message from someone allow_from does not admit,
// before anything of it is recorded: the sender is told their id, at most
// once per strangerNoticePeriod, when the message is addressed to the bot;
// the message itself is dropped. Only the notice and when it was given are
// stored. An error means the notice could not be queued, and the update is
// not acknowledged, so Telegram sends it again.
func (c *Channel) turnAway(ctx context.Context, m *models.Message) error {
	if m.From == nil || m.From.IsBot || m.Chat.Type == models.ChatTypeChannel {
		return nil
	}
	if _, addressed := c.address(m); !addressed || !c.tellStranger(ctx, m.From.ID) {
		c.log.Debug("message from a sender not in allow_from dropped", "user_id", m.From.ID, "chat_id", m.Chat.ID)
		return nil
	}
	c.log.Warn("message from a sender not in allow_from; telling them their id", "user_id", m.From.ID,
		"username", truncate(m.From.Username, 64), "chat_id", m.Chat.ID)
	_, err := c.store.Enqueue(ctx, turns.OutboxItem{
		Channel:   channelName,
		ChatID:    strconv.FormatInt(m.Chat.ID, 10),
		Text:      fmt.Sprintf(noticeUnknown, m.From.ID),
		State:     turns.OutboxPending,
		CreatedAt: time.Now().UTC(),
	})
	if err != nil {
		return fmt.Errorf("queue the notice to an unknown sender: %w", err)
	}
	c.send.notify()
	return nil
}

// strangerNoticePeriod is how often an unknown sender may be told their id,
// so strangers cannot make the bot spam anyone.
const strangerNoticePeriod = time.Hour

// tellStranger reports whether user may be told their id now, and if so
// records it; the record outlives restarts. A store failure tells nobody.
func (c *Channel) tellStranger(ctx context.Context, user int64) bool {
	ok, err := c.store.ClaimNotice(ctx, "telegram.stranger:"+strconv.FormatInt(user, 10), strangerNoticePeriod)
	if err != nil {
		c.log.Error("record notice to an unknown sender", "user_id", user, "err", err)
	}
	return ok
}
