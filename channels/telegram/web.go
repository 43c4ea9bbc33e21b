package telegram

import (
	"context"
	"html"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
)

// webReply is /web: the owner, in a private chat, gets a one-time link
// that signs in to the web console. The link is sent straight to the
// chat, not through the outbox, so that no sign-in secret is stored; the
// reply the outbox keeps only says it was sent.
func (c *Channel) webReply(ctx context.Context, m *models.Message) string {
	owner, ok := c.approver()
	switch {
	case c.cfg.WebLogin == nil:
		return "The web console is off: set web.listen in config.yaml and restart."
	case !ok || m.From == nil || m.From.ID != owner:
		c.log.Warn("a web console link was asked for by someone who is not the owner", "user_id", senderID(m))
		return "Only the owner may sign in to the web console."
	case m.Chat.Type != models.ChatTypePrivate:
		return "Ask for /web in our private chat: a sign-in link must not be shown to a group."
	}
	link, err := c.cfg.WebLogin(ctx)
	if err != nil {
		c.log.Error("make a web console link", "err", err)
		return "Sorry, I could not make a sign-in link. Please try again."
	}
	callCtx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	_, err = c.bot.SendMessage(callCtx, &bot.SendMessageParams{
		ChatID:             m.Chat.ID,
		ParseMode:          models.ParseModeHTML,
		LinkPreviewOptions: &models.LinkPreviewOptions{IsDisabled: bot.True()},
		Text: "Sign in to the web console (the link works once, for 10 minutes):\n" +
			html.EscapeString(link),
	})
	if err != nil {
		c.log.Error("send a web console link", "err", c.scrub(err))
		return "Sorry, I could not send the sign-in link. Please try again."
	}
	return "Open the link above to sign in. Sessions are listed, and revoked, in the console and with `nanobot web sessions`."
}
