//go:build bench

// Command telegram is the baseline plus github.com/go-telegram/bot as
// channels/telegram uses it: a client on a configured server URL, updates
// decoded into models.Update, HTML messages with replies and inline
// keyboards, typing actions, edits, callback answers, files, commands and
// webhooks, and the library's error types.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/nanobot-go/nanobot/bench/depcost/internal/base"
)

func main() {
	ctx, log, stop := base.Run()
	defer stop()
	b, err := bot.New(os.Getenv("TOKEN"),
		bot.WithSkipGetMe(),
		bot.WithServerURL(os.Getenv("API_URL")),
		bot.WithHTTPClient(25*time.Second, &http.Client{}),
		bot.WithErrorsHandler(func(err error) { log.Warn("telegram", "err", err) }),
		bot.WithDebugHandler(func(string, ...any) {}),
	)
	if err != nil {
		log.Error("new bot", "err", err)
		return
	}
	var u models.Update
	if err := json.Unmarshal([]byte(os.Getenv("UPDATE")), &u); err == nil && u.Message != nil {
		use(ctx, b, u)
	}
	if q := u.CallbackQuery; q != nil {
		_, _ = b.AnswerCallbackQuery(ctx, &bot.AnswerCallbackQueryParams{CallbackQueryID: q.ID, Text: "done"})
	}
	me, err := b.GetMe(ctx)
	report(err)
	fmt.Println(me.Username)
	_, err = b.SetMyCommands(ctx, &bot.SetMyCommandsParams{Commands: []models.BotCommand{{Command: "status", Description: "status"}}})
	report(err)
	_, err = b.DeleteWebhook(ctx, &bot.DeleteWebhookParams{})
	report(err)
	_, err = b.SetWebhook(ctx, &bot.SetWebhookParams{URL: os.Getenv("WEBHOOK"), SecretToken: os.Getenv("SECRET")})
	report(err)
}

func use(ctx context.Context, b *bot.Bot, u models.Update) {
	chat := u.Message.Chat.ID
	_, err := b.SendChatAction(ctx, &bot.SendChatActionParams{ChatID: chat, Action: models.ChatActionTyping})
	report(err)
	m, err := b.SendMessage(ctx, &bot.SendMessageParams{
		ChatID: chat, Text: "<b>" + u.Message.Text + "</b>", ParseMode: models.ParseModeHTML,
		ReplyParameters: &models.ReplyParameters{MessageID: u.Message.ID, AllowSendingWithoutReply: true},
		ReplyMarkup: models.InlineKeyboardMarkup{InlineKeyboard: [][]models.InlineKeyboardButton{{
			{Text: "Allow", CallbackData: "allow"}, {Text: "Deny", CallbackData: "deny"},
		}}},
	})
	report(err)
	if m != nil {
		_, err = b.EditMessageText(ctx, &bot.EditMessageTextParams{ChatID: chat, MessageID: m.ID, Text: "done"})
		report(err)
	}
	if len(u.Message.Photo) > 0 {
		f, err := b.GetFile(ctx, &bot.GetFileParams{FileID: u.Message.Photo[0].FileID})
		if err == nil {
			fmt.Println(b.FileDownloadLink(f))
		}
	}
}

func report(err error) {
	var tooMany *bot.TooManyRequestsError
	var migrate *bot.MigrateError
	switch {
	case err == nil:
	case errors.As(err, &tooMany):
		fmt.Println("retry after", tooMany.RetryAfter)
	case errors.As(err, &migrate):
		fmt.Println("migrated to", migrate.MigrateToChatID)
	case errors.Is(err, bot.ErrorBadRequest), errors.Is(err, bot.ErrorForbidden), errors.Is(err, bot.ErrorUnauthorized),
		errors.Is(err, bot.ErrorNotFound), errors.Is(err, bot.ErrorConflict):
		fmt.Println("permanent:", err)
	default:
		fmt.Println(err)
	}
}
