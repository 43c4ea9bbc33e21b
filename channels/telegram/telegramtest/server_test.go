package telegramtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/nanobot-go/nanobot/channels/telegram/telegramtest"
)

const token = "123456:TEST-token"

// wait bounds every "until" in these tests: generous, for loaded CI machines.
const wait = 30 * time.Second

func newBot(t *testing.T, s *telegramtest.Server, opts ...bot.Option) *bot.Bot {
	t.Helper()
	opts = append([]bot.Option{bot.WithServerURL(s.URL()), bot.WithErrorsHandler(func(error) {})}, opts...)
	b, err := bot.New(s.Token(), opts...)
	if err != nil {
		t.Fatalf("bot.New: %v", err)
	}
	return b
}

// envelope is Telegram's response body.
type envelope struct {
	OK          bool            `json:"ok"`
	Result      json.RawMessage `json:"result"`
	ErrorCode   int             `json:"error_code"`
	Description string          `json:"description"`
	Parameters  struct {
		RetryAfter int `json:"retry_after"`
	} `json:"parameters"`
}

// call makes a raw request the way a hand-written client would: form fields
// in a urlencoded body.
func call(ctx context.Context, t *testing.T, base, method string, form url.Values) (int, envelope) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/bot"+token+"/"+method, strings.NewReader(form.Encode()))
	if err != nil {
		t.Error(err)
		return 0, envelope{}
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return 0, envelope{}
	}
	defer resp.Body.Close()
	var e envelope
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
		t.Errorf("%s: decode response: %v", method, err)
	}
	return resp.StatusCode, e
}

func TestLibraryMethods(t *testing.T) {
	s := telegramtest.NewServer(t, token)
	b := newBot(t, s) // runs getMe
	ctx := t.Context()

	me, err := b.GetMe(ctx)
	if err != nil || me.Username != telegramtest.BotUsername || !me.IsBot || me.ID != 123456 {
		t.Fatalf("GetMe = %+v, %v", me, err)
	}

	msg, err := b.SendMessage(ctx, &bot.SendMessageParams{
		ChatID:          int64(42),
		Text:            `<b>hi</b> &amp; <a href="https://e.com/?a=1&amp;b=2">link</a>`,
		ParseMode:       models.ParseModeHTML,
		ReplyParameters: &models.ReplyParameters{MessageID: 7},
		ReplyMarkup:     models.InlineKeyboardMarkup{InlineKeyboard: [][]models.InlineKeyboardButton{{{Text: "Stop", CallbackData: "stop"}}}},
	})
	if err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	if msg.ID == 0 || msg.Chat.ID != 42 || msg.Text != "hi & link" || msg.Date == 0 {
		t.Errorf("SendMessage returned %+v", msg)
	}
	sent := s.Sent()
	if len(sent) != 1 {
		t.Fatalf("Sent() = %+v, want one message", sent)
	}
	got := sent[0]
	if got.ChatID != 42 || got.MessageID != int64(msg.ID) || got.ParseMode != "HTML" || got.ReplyTo != 7 ||
		!strings.HasPrefix(got.Text, "<b>hi</b>") || !strings.Contains(got.ReplyMarkup, `"callback_data":"stop"`) {
		t.Errorf("Sent()[0] = %+v", got)
	}

	if ok, err := b.SendChatAction(ctx, &bot.SendChatActionParams{ChatID: int64(42), Action: models.ChatActionTyping}); err != nil || !ok {
		t.Errorf("SendChatAction = %v, %v", ok, err)
	}
	if c := s.Calls("sendChatAction"); len(c) != 1 || c[0].Params["action"] != "typing" || c[0].Params["chat_id"] != "42" {
		t.Errorf("sendChatAction calls = %+v", c)
	}

	cmds := []models.BotCommand{{Command: "start", Description: "Say hello"}, {Command: "new", Description: "Start over"}}
	if ok, err := b.SetMyCommands(ctx, &bot.SetMyCommandsParams{Commands: cmds}); err != nil || !ok {
		t.Errorf("SetMyCommands = %v, %v", ok, err)
	}
	var recorded []models.BotCommand
	if c := s.Calls("setMyCommands"); len(c) != 1 || json.Unmarshal([]byte(c[0].Params["commands"]), &recorded) != nil || len(recorded) != 2 {
		t.Errorf("setMyCommands calls = %+v", c)
	}
	if _, err := b.SetMyCommands(ctx, &bot.SetMyCommandsParams{Commands: []models.BotCommand{{Command: "Bad Command", Description: "x"}}}); !errors.Is(err, bot.ErrorBadRequest) {
		t.Errorf("SetMyCommands with an invalid command: %v, want a bad request", err)
	}
	for name, f := range map[string]func() (bool, error){
		"DeleteMyCommands": func() (bool, error) { return b.DeleteMyCommands(ctx, &bot.DeleteMyCommandsParams{}) },
		"DeleteWebhook":    func() (bool, error) { return b.DeleteWebhook(ctx, &bot.DeleteWebhookParams{DropPendingUpdates: false}) },
		"SetWebhook":       func() (bool, error) { return b.SetWebhook(ctx, &bot.SetWebhookParams{URL: "https://example.com/hook"}) },
	} {
		if ok, err := f(); err != nil || !ok {
			t.Errorf("%s = %v, %v", name, ok, err)
		}
	}

	edited, err := b.EditMessageText(ctx, &bot.EditMessageTextParams{ChatID: int64(42), MessageID: msg.ID, Text: "<i>edited</i>", ParseMode: models.ParseModeHTML})
	if err != nil || edited.Text != "edited" {
		t.Errorf("EditMessageText = %+v, %v", edited, err)
	}
	if _, err := b.EditMessageText(ctx, &bot.EditMessageTextParams{ChatID: int64(42), MessageID: msg.ID, Text: "edited"}); err == nil || !strings.Contains(err.Error(), "message is not modified") {
		t.Errorf("EditMessageText with the same text: %v, want \"message is not modified\"", err)
	}
	if _, err := b.EditMessageText(ctx, &bot.EditMessageTextParams{ChatID: int64(42), MessageID: 9999, Text: "x"}); err == nil || !strings.Contains(err.Error(), "message to edit not found") {
		t.Errorf("EditMessageText of an unknown message: %v", err)
	}
	if _, err := b.EditMessageReplyMarkup(ctx, &bot.EditMessageReplyMarkupParams{ChatID: int64(42), MessageID: msg.ID, ReplyMarkup: models.InlineKeyboardMarkup{InlineKeyboard: [][]models.InlineKeyboardButton{}}}); err != nil {
		t.Errorf("EditMessageReplyMarkup: %v", err)
	}
	if len(s.Sent()) != 1 {
		t.Errorf("edits appear in Sent(): %+v", s.Sent())
	}
	if e := s.Edits(); len(e) != 1 || e[0].MessageID != int64(msg.ID) || e[0].Text != "<i>edited</i>" || e[0].ParseMode != "HTML" {
		t.Errorf("Edits() = %+v, want the one accepted edit", e)
	}
	if text, ok := s.Visible(42, int64(msg.ID)); !ok || text != "edited" {
		t.Errorf("Visible = %q, %v; want the edited text", text, ok)
	}

	if ok, err := b.DeleteMessage(ctx, &bot.DeleteMessageParams{ChatID: int64(42), MessageID: msg.ID}); err != nil || !ok {
		t.Errorf("DeleteMessage = %v, %v", ok, err)
	}
	if _, ok := s.Visible(42, int64(msg.ID)); ok {
		t.Error("a deleted message is still visible")
	}
	if d := s.Deleted(); len(d) != 1 || d[0] != [2]int64{42, int64(msg.ID)} {
		t.Errorf("Deleted() = %v", d)
	}
	if _, err := b.DeleteMessage(ctx, &bot.DeleteMessageParams{ChatID: int64(42), MessageID: msg.ID}); !errors.Is(err, bot.ErrorBadRequest) ||
		!strings.Contains(err.Error(), "message to delete not found") {
		t.Errorf("DeleteMessage of a deleted message: %v, want \"message to delete not found\"", err)
	}
	if _, err := b.EditMessageText(ctx, &bot.EditMessageTextParams{ChatID: int64(42), MessageID: msg.ID, Text: "x"}); err == nil || !strings.Contains(err.Error(), "message to edit not found") {
		t.Errorf("EditMessageText of a deleted message: %v", err)
	}
}

func TestFiles(t *testing.T) {
	s := telegramtest.NewServer(t, token)
	b := newBot(t, s, bot.WithSkipGetMe())
	ctx := t.Context()
	content := []byte("%PDF-1.4 fake document")
	s.AddFile("doc-1", content)

	f, err := b.GetFile(ctx, &bot.GetFileParams{FileID: "doc-1"})
	if err != nil {
		t.Fatalf("GetFile: %v", err)
	}
	if f.FilePath == "" || f.FileSize != int64(len(content)) {
		t.Errorf("GetFile = %+v", f)
	}
	resp, err := http.Get(b.FileDownloadLink(f))
	if err != nil {
		t.Fatalf("download: %v", err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Equal(data, content) {
		t.Errorf("download = %d %q, want %q", resp.StatusCode, data, content)
	}
	if _, err := b.GetFile(ctx, &bot.GetFileParams{FileID: "missing"}); !errors.Is(err, bot.ErrorBadRequest) {
		t.Errorf("GetFile of an unknown file: %v, want a bad request", err)
	}
	resp, err = http.Get(s.URL() + "/file/botWRONG/" + f.FilePath)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		t.Error("download with a wrong token succeeded")
	}

	msg, err := b.SendDocument(ctx, &bot.SendDocumentParams{
		ChatID:   int64(42),
		Document: &models.InputFileUpload{Filename: "report.txt", Data: strings.NewReader("report body")},
		Caption:  "<b>report</b>", ParseMode: models.ParseModeHTML,
	})
	if err != nil || msg.Document == nil || msg.Caption != "report" {
		t.Fatalf("SendDocument = %+v, %v", msg, err)
	}
	c := s.Calls("sendDocument")
	if len(c) != 1 || string(c[0].Files["document"]) != "report body" || c[0].Params["document"] != "report.txt" {
		t.Errorf("sendDocument calls = %+v", c)
	}
}

func TestWrongToken(t *testing.T) {
	s := telegramtest.NewServer(t, token)
	_, err := bot.New("999:other", bot.WithServerURL(s.URL()))
	if !errors.Is(err, bot.ErrorUnauthorized) {
		t.Fatalf("bot.New with a wrong token: %v, want unauthorized", err)
	}
	if strings.Contains(err.Error(), "999:other") {
		t.Errorf("the library's error contains the token: %v", err)
	}
	if c := s.Calls("getMe"); len(c) != 1 {
		t.Errorf("getMe calls = %d, want 1 (failed calls are recorded)", len(c))
	}
}

func TestUnknownMethod(t *testing.T) {
	s := telegramtest.NewServer(t, token)
	status, e := call(t.Context(), t, s.URL(), "noSuchMethod", nil)
	if status != http.StatusNotFound || e.OK || e.ErrorCode != 404 || e.Description != "Not Found" {
		t.Errorf("unknown method = %d %+v", status, e)
	}
}

func TestSendMessageValidation(t *testing.T) {
	s := telegramtest.NewServer(t, token)
	b := newBot(t, s, bot.WithSkipGetMe())
	tests := []struct {
		name, text string
		parseMode  models.ParseMode
		wantErr    string // "" when accepted
	}{
		{"plain", "a < b & c", "", ""},
		{"html", "<b>bold <i>both</i></b> <code>x &lt; y</code>", models.ParseModeHTML, ""},
		{"pre with language", `<pre><code class="language-go">x := 1</code></pre>`, models.ParseModeHTML, ""},
		{"numeric entity", "&#128512; &#x41;", models.ParseModeHTML, ""},
		{"spoiler and quote", `<span class="tg-spoiler">s</span><blockquote expandable>q</blockquote>`, models.ParseModeHTML, ""},
		{"bare greater-than", "a > b", models.ParseModeHTML, ""},
		{"unknown tag", "<foo>x</foo>", models.ParseModeHTML, `can't parse entities: Unsupported start tag "foo" at byte offset 0`},
		{"unclosed", "<b>x", models.ParseModeHTML, `can't parse entities: Can't find end tag corresponding to start tag "b"`},
		{"misnested", "<b><i>x</b></i>", models.ParseModeHTML, `can't parse entities: Unmatched end tag at byte offset 7, expected "</i>", found "</b>"`},
		{"stray end tag", "x</b>", models.ParseModeHTML, "can't parse entities: Unexpected end tag at byte offset 1"},
		{"bare less-than", "a < b", models.ParseModeHTML, "can't parse entities: Unsupported start tag"},
		{"bare ampersand", "AT&T", models.ParseModeHTML, "can't parse entities: Unsupported HTML entity at byte offset 2"},
		{"unclosed start tag", "<b", models.ParseModeHTML, "can't parse entities: Unclosed start tag at byte offset 0"},
		{"empty", "", "", "Bad Request: message text is empty"},
		{"only tags", "<b> </b>", models.ParseModeHTML, "Bad Request: message text is empty"},
		{"too long", strings.Repeat("😀", 2049), "", "Bad Request: message is too long"},
		{"long markup, short text", "<b>" + strings.Repeat("&amp;", 4096) + "</b>", models.ParseModeHTML, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(s.Sent())
			_, err := b.SendMessage(t.Context(), &bot.SendMessageParams{ChatID: int64(1), Text: tt.text, ParseMode: tt.parseMode})
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("SendMessage(%q) = %v, want success", tt.text, err)
				}
				if len(s.Sent()) != before+1 {
					t.Errorf("accepted message not in Sent()")
				}
				return
			}
			if !errors.Is(err, bot.ErrorBadRequest) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("SendMessage(%q) = %v, want a bad request containing %q", tt.text, err, tt.wantErr)
			}
			if len(s.Sent()) != before {
				t.Errorf("rejected message appears in Sent()")
			}
		})
	}
	if n := len(s.Calls("sendMessage")); n != len(tests) {
		t.Errorf("sendMessage calls = %d, want %d (rejected ones too)", n, len(tests))
	}
}

func TestFailNext(t *testing.T) {
	s := telegramtest.NewServer(t, token)
	b := newBot(t, s, bot.WithSkipGetMe())
	ctx := t.Context()
	send := func() error {
		_, err := b.SendMessage(ctx, &bot.SendMessageParams{ChatID: int64(5), Text: "hello"})
		return err
	}

	s.FailNext("sendMessage", 2, http.StatusTooManyRequests, 7, "")
	for i := range 2 {
		err := send()
		var tooMany *bot.TooManyRequestsError
		if !errors.As(fmt.Errorf("send reply: %w", err), &tooMany) || tooMany.RetryAfter != 7 {
			t.Fatalf("attempt %d: %v, want a *bot.TooManyRequestsError with RetryAfter 7", i, err)
		}
		if errors.Is(err, bot.ErrorTooManyRequests) {
			t.Errorf("the library now wraps ErrorTooManyRequests; update the package documentation")
		}
	}
	s.FailNext("sendMessage", 1, http.StatusBadGateway, 0, "")
	if err := send(); err == nil || !strings.Contains(err.Error(), "502") {
		t.Errorf("after FailNext 502: %v, want an error mentioning 502", err)
	}
	s.FailNext("sendMessage", 1, http.StatusForbidden, 0, "")
	if err := send(); !errors.Is(err, bot.ErrorForbidden) {
		t.Errorf("after FailNext 403: %v, want forbidden", err)
	}
	if err := send(); err != nil {
		t.Errorf("after the injected failures: %v", err)
	}
	if got := len(s.Calls("sendMessage")); got != 5 {
		t.Errorf("sendMessage calls = %d, want 5", got)
	}
	if got := len(s.Sent()); got != 1 {
		t.Errorf("Sent() has %d messages, want 1", got)
	}

	status, e := func() (int, envelope) {
		s.FailNext("getUpdates", 1, http.StatusTooManyRequests, 3, "")
		return call(ctx, t, s.URL(), "getUpdates", nil)
	}()
	if status != http.StatusTooManyRequests || e.OK || e.ErrorCode != 429 || e.Parameters.RetryAfter != 3 || e.Description != "Too Many Requests: retry after 3" {
		t.Errorf("429 on the wire = %d %+v", status, e)
	}
}

func getUpdates(ctx context.Context, t *testing.T, s *telegramtest.Server, offset int64, timeout int) []models.Update {
	t.Helper()
	form := url.Values{"timeout": {fmt.Sprint(timeout)}}
	if offset != 0 {
		form.Set("offset", fmt.Sprint(offset))
	}
	status, e := call(ctx, t, s.URL(), "getUpdates", form)
	if status != http.StatusOK || !e.OK {
		t.Errorf("getUpdates = %d %+v", status, e)
		return nil
	}
	var ups []models.Update
	if err := json.Unmarshal(e.Result, &ups); err != nil {
		t.Errorf("decode updates %s: %v", e.Result, err)
	}
	return ups
}

func TestGetUpdatesLongPoll(t *testing.T) {
	s := telegramtest.NewServer(t, token)
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()

	type result struct{ ups []models.Update }
	done := make(chan result, 1)
	go func() { done <- result{getUpdates(ctx, t, s, 0, 50)} }()
	if _, err := s.WaitCalls(ctx, "getUpdates", 1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
		t.Fatal("getUpdates returned before any update was queued")
	default:
	}
	id := s.SendText(42, 42, "alice", "/start hello @"+telegramtest.BotUsername)
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		t.Fatal("long poll did not return when an update arrived")
	}
	if len(r.ups) != 1 || r.ups[0].ID != id || r.ups[0].Message == nil {
		t.Fatalf("getUpdates = %+v, want update %d", r.ups, id)
	}
	m := r.ups[0].Message
	if m.Text != "/start hello @nanobot_test_bot" || m.Chat.Type != models.ChatTypePrivate || m.From.Username != "alice" || m.From.ID != 42 {
		t.Errorf("message = %+v", m)
	}
	if len(m.Entities) != 2 || m.Entities[0].Type != models.MessageEntityTypeBotCommand || m.Entities[0].Length != 6 ||
		m.Entities[1].Type != models.MessageEntityTypeMention || m.Entities[1].Offset != 13 {
		t.Errorf("entities = %+v", m.Entities)
	}

	// Not confirmed yet: delivered again.
	if ups := getUpdates(ctx, t, s, 0, 0); len(ups) != 1 || ups[0].ID != id {
		t.Errorf("unconfirmed update not redelivered: %+v", ups)
	}
	id2 := s.SendText(-100, 7, "bob", "group message")
	ups := getUpdates(ctx, t, s, id+1, 0)
	if len(ups) != 1 || ups[0].ID != id2 || ups[0].Message.Chat.Type != models.ChatTypeGroup {
		t.Errorf("getUpdates(offset %d) = %+v, want only update %d from a group", id+1, ups, id2)
	}
	if got := s.Offset(); got != id+1 {
		t.Errorf("Offset() = %d, want %d", got, id+1)
	}
	if ups := getUpdates(ctx, t, s, id2+1, 0); len(ups) != 0 {
		t.Errorf("confirmed updates delivered again: %+v", ups)
	}
	if ups := getUpdates(ctx, t, s, 0, 0); len(ups) != 0 {
		t.Errorf("confirmed updates came back with offset 0: %+v", ups)
	}
	if got := s.Offset(); got != id2+1 {
		t.Errorf("Offset() = %d, want %d", got, id2+1)
	}
}

func TestGetUpdatesTimeoutAndCancel(t *testing.T) {
	s := telegramtest.NewServer(t, token)
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	if ups := getUpdates(ctx, t, s, 0, 1); len(ups) != 0 {
		t.Errorf("getUpdates with nothing queued = %+v", ups)
	}

	pollCtx, stop := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(pollCtx, http.MethodGet, s.URL()+"/bot"+token+"/getUpdates?timeout=50", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	if _, err := s.WaitCalls(ctx, "getUpdates", 2); err != nil {
		t.Fatal(err)
	}
	stop()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled poll: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("cancelled long poll did not end")
	}
}

func TestGetUpdatesLimitAndOrder(t *testing.T) {
	s := telegramtest.NewServer(t, token)
	ctx := t.Context()
	var ids []int64
	for i := range 5 {
		ids = append(ids, s.SendText(1, 1, "u", fmt.Sprint(i)))
	}
	custom := s.PushUpdate(models.Update{ID: ids[4] + 100, EditedMessage: &models.Message{ID: 1, Chat: models.Chat{ID: 1, Type: models.ChatTypePrivate}, Text: "edited"}})
	form := url.Values{"limit": {"2"}, "offset": {fmt.Sprint(ids[1])}}
	_, e := call(ctx, t, s.URL(), "getUpdates", form)
	var ups []models.Update
	if err := json.Unmarshal(e.Result, &ups); err != nil {
		t.Fatal(err)
	}
	if len(ups) != 2 || ups[0].ID != ids[1] || ups[1].ID != ids[2] {
		t.Errorf("limit 2 from offset %d = %+v", ids[1], ups)
	}
	all := getUpdates(ctx, t, s, 0, 0)
	if len(all) != 5 || all[4].ID != custom || all[4].EditedMessage == nil {
		t.Errorf("remaining updates = %+v", all)
	}
	if next := s.SendText(1, 1, "u", "after"); next != custom+1 {
		t.Errorf("update id after a custom one = %d, want %d", next, custom+1)
	}
}

// TestLibraryPolling drives the library's own poll loop: the updates the
// fake encodes decode into the library's models, callback queries included.
func TestLibraryPolling(t *testing.T) {
	s := telegramtest.NewServer(t, token)
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	got := make(chan *models.Update, 10)
	b := newBot(t, s, bot.WithDefaultHandler(func(_ context.Context, _ *bot.Bot, u *models.Update) { got <- u }))
	var wg sync.WaitGroup
	wg.Go(func() { b.Start(ctx) })
	defer wg.Wait()
	defer cancel()

	s.SendText(42, 42, "alice", "hello")
	s.PressButton(42, 42, 9, "stop")
	var text string
	var query *models.CallbackQuery
	for text == "" || query == nil {
		select {
		case u := <-got:
			if u.Message != nil {
				text = u.Message.Text
			}
			if u.CallbackQuery != nil {
				query = u.CallbackQuery
			}
		case <-ctx.Done():
			t.Fatalf("updates not delivered through the library (text %q, query %v)", text, query)
		}
	}
	if text != "hello" || query.Data != "stop" || query.Message.Message == nil || query.Message.Message.ID != 9 || query.Message.Message.Chat.ID != 42 {
		t.Errorf("got text %q, callback %+v", text, query)
	}
	if ok, err := b.AnswerCallbackQuery(ctx, &bot.AnswerCallbackQueryParams{CallbackQueryID: query.ID, Text: "Stopped"}); err != nil || !ok {
		t.Errorf("AnswerCallbackQuery = %v, %v", ok, err)
	}
	if _, err := b.AnswerCallbackQuery(ctx, &bot.AnswerCallbackQueryParams{CallbackQueryID: query.ID}); !errors.Is(err, bot.ErrorBadRequest) {
		t.Errorf("answering twice: %v, want a bad request", err)
	}
}

func TestWebhookBlocksPolling(t *testing.T) {
	s := telegramtest.NewServer(t, token)
	b := newBot(t, s, bot.WithSkipGetMe())
	ctx := t.Context()
	if _, err := b.SetWebhook(ctx, &bot.SetWebhookParams{URL: "https://example.com/hook"}); err != nil {
		t.Fatal(err)
	}
	status, e := call(ctx, t, s.URL(), "getUpdates", nil)
	if status != http.StatusConflict || e.ErrorCode != 409 || !strings.HasPrefix(e.Description, "Conflict:") {
		t.Errorf("getUpdates with a webhook set = %d %+v, want 409", status, e)
	}
	if _, err := b.DeleteWebhook(ctx, &bot.DeleteWebhookParams{}); err != nil {
		t.Fatal(err)
	}
	if status, _ := call(ctx, t, s.URL(), "getUpdates", nil); status != http.StatusOK {
		t.Errorf("getUpdates after deleteWebhook = %d", status)
	}
}

func TestRequestEncodings(t *testing.T) {
	s := telegramtest.NewServer(t, token)
	ctx := t.Context()
	post := func(contentType, body string) envelope {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/bot"+token+"/sendMessage", strings.NewReader(body))
		req.Header.Set("Content-Type", contentType)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var e envelope
		_ = json.NewDecoder(resp.Body).Decode(&e)
		return e
	}
	if e := post("application/json", `{"chat_id":7,"text":"<b>json</b>","parse_mode":"HTML","reply_parameters":{"message_id":3}}`); !e.OK {
		t.Errorf("JSON body rejected: %+v", e)
	}
	if e := post("application/x-www-form-urlencoded", "chat_id=8&text=form"); !e.OK {
		t.Errorf("form body rejected: %+v", e)
	}
	sent := s.Sent()
	if len(sent) != 2 || sent[0].ChatID != 7 || sent[0].ReplyTo != 3 || sent[0].Text != "<b>json</b>" || sent[1].ChatID != 8 {
		t.Errorf("Sent() = %+v", sent)
	}
}

func TestConcurrentUse(t *testing.T) {
	s := telegramtest.NewServer(t, token)
	b := newBot(t, s, bot.WithSkipGetMe())
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	const n = 40
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			s.SendText(int64(i+1), int64(i+1), "u", "hi")
			_, err := b.SendMessage(ctx, &bot.SendMessageParams{ChatID: int64(i + 1), Text: fmt.Sprintf("reply %d", i)})
			errs <- err
		})
	}
	sent, err := s.WaitSent(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	ids := map[int64]bool{}
	for _, m := range sent {
		if ids[m.MessageID] {
			t.Errorf("message id %d used twice", m.MessageID)
		}
		ids[m.MessageID] = true
	}
	if ups := getUpdates(ctx, t, s, 0, 0); len(ups) != n {
		t.Errorf("%d updates queued, want %d", len(ups), n)
	}
}

func TestStall(t *testing.T) {
	s := telegramtest.NewServer(t, token)
	b := newBot(t, s, bot.WithSkipGetMe())
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()

	s.Stall()
	callCtx, give := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := b.GetMe(callCtx)
		done <- err
	}()
	if err := s.WaitHeld(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if calls := s.Calls("getMe"); len(calls) != 1 {
		t.Errorf("the held request is not recorded: %d getMe calls", len(calls))
	}
	s.Resume()
	// Resuming does not answer what the stall holds: the caller must give up.
	select {
	case err := <-done:
		t.Fatalf("a held request was answered after Resume: %v", err)
	default:
	}
	give()
	if err := <-done; err == nil {
		t.Error("a held request returned no error after its caller gave up")
	}
	if _, err := b.GetMe(ctx); err != nil {
		t.Errorf("after Resume, a new request: %v", err)
	}
	if err := s.WaitReleased(ctx); err != nil || s.Held() != 0 {
		t.Errorf("Held = %d after the caller gave up (%v)", s.Held(), err)
	}
}

func TestRevokeToken(t *testing.T) {
	s := telegramtest.NewServer(t, token)
	b := newBot(t, s, bot.WithSkipGetMe())
	ctx := t.Context()
	if _, err := b.GetMe(ctx); err != nil {
		t.Fatal(err)
	}
	s.RevokeToken()
	if _, err := b.GetMe(ctx); !errors.Is(err, bot.ErrorUnauthorized) {
		t.Errorf("getMe after RevokeToken = %v, want unauthorized", err)
	}
	status, e := call(ctx, t, s.URL(), "getUpdates", nil)
	if status != http.StatusUnauthorized || e.ErrorCode != 401 || e.Description != "Unauthorized" {
		t.Errorf("getUpdates after RevokeToken = %d %+v", status, e)
	}
}

func TestConflict(t *testing.T) {
	s := telegramtest.NewServer(t, token)
	s.FailNext("getUpdates", 1, http.StatusConflict, 0, "")
	status, e := call(t.Context(), t, s.URL(), "getUpdates", nil)
	if status != http.StatusConflict || e.Description != "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running" {
		t.Errorf("getUpdates after FailNext 409 = %d %+v", status, e)
	}
}
