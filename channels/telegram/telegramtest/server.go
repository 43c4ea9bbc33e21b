// Package telegramtest is a fake Telegram Bot API for tests: an HTTP server on
// 127.0.0.1 that speaks the wire format github.com/go-telegram/bot uses
// (multipart/form-data POSTs to /bot<token>/<method>, answers in the
// {"ok":...} envelope), keeps a queue of updates for getUpdates with
// Telegram's offset and long-poll semantics, validates HTML messages the way
// Telegram does, and records every request.
//
// # Errors as the library reports them
//
// The fake answers failures exactly like Telegram, so the errors a
// github.com/go-telegram/bot v1.19.0 client sees are the real ones:
//
//   - 429 (FailNext with status 429): a *bot.TooManyRequestsError with
//     RetryAfter set from parameters.retry_after. It is returned unwrapped
//     and does not wrap bot.ErrorTooManyRequests, so match it with errors.As
//     (bot.IsTooManyRequestsError is a plain type assertion and fails once the
//     error has been wrapped).
//   - 400: an error wrapping bot.ErrorBadRequest whose text is
//     "bad request, Bad Request: can't parse entities: ..." (or "message is
//     too long", "message text is empty"); match with errors.Is and inspect
//     err.Error(). A 400 carrying migrate_to_chat_id would be a
//     *bot.MigrateError instead.
//   - 401, 403, 404, 409: errors wrapping bot.ErrorUnauthorized,
//     bot.ErrorForbidden, bot.ErrorNotFound, bot.ErrorConflict.
//   - 5xx and other codes: a plain error "error response from telegram for
//     method <m>, <code> <description>", with no sentinel to match.
//   - network failures: "error do request for method <m>, ..." wrapping the
//     *url.Error, whose URL has the token replaced by "***".
//
// # Outages
//
// Stall makes the server accept requests and never answer them (a dead
// network path; only the client's own deadline ends such a call), Resume
// ends it for new requests. RevokeToken answers every call with 401 from
// then on, as Telegram does for a revoked token. A 409 Conflict (another
// instance polling, or a webhook set) comes from FailNext("getUpdates", n,
// 409, ...) or, persistently, from setWebhook.
package telegramtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/go-telegram/bot/models"
)

// BotUsername is the username getMe reports for the fake bot.
const BotUsername = "nanobot_test_bot"

// Call is one request the server received, failed ones included.
type Call struct {
	Method string            // as in the URL, e.g. "sendMessage"
	Params map[string]string // form, query or JSON fields; non-string JSON values as JSON text; an upload's filename
	Files  map[string][]byte // uploaded files by form field
	At     time.Time
}

// Sent is a sendMessage call the server accepted.
type Sent struct {
	ChatID      int64
	MessageID   int64
	Text        string // as sent, markup included
	ParseMode   string
	ReplyTo     int64  // reply_parameters.message_id (or reply_to_message_id)
	ReplyMarkup string // the reply_markup JSON as sent
	LinkPreview string // the link_preview_options JSON as sent
}

// Edit is an editMessageText call the server accepted.
type Edit struct {
	ChatID    int64
	MessageID int64
	Text      string // as sent, markup included
	ParseMode string
}

type failure struct {
	status     int
	retryAfter int
	desc       string
	drop       bool // close the connection without an answer
}

type file struct {
	path string
	data []byte
}

// Server is a fake Telegram Bot API. All methods are safe for concurrent use.
type Server struct {
	token string
	srv   *httptest.Server
	done  chan struct{} // closed at cleanup: long polls return

	mu          sync.Mutex
	changed     chan struct{} // closed and replaced on every change
	nextUpdate  int64
	nextMessage int64
	updates     []json.RawMessage // unconfirmed, in update_id order
	updateIDs   []int64
	offset      int64
	calls       []Call
	sent        []Sent
	fails       map[string][]failure
	files       map[string]file   // by file_id
	paths       map[string][]byte // by file_path
	chats       map[int64]models.Chat
	messages    map[[2]int64]string // (chat, message id) -> text of messages the bot sent
	edits       []Edit
	deleted     [][2]int64      // (chat, message id) of messages deleteMessage removed
	callbacks   map[string]bool // callback query ids not yet answered
	webhook     string          // URL set by setWebhook
	stalled     bool            // requests are accepted and never answered
	held        int             // requests held by a stall, still waiting
	revoked     bool            // every call fails with 401, as for a revoked token
}

// NewServer starts a fake Bot API for token on 127.0.0.1. It is shut down
// when the test ends.
func NewServer(t testing.TB, token string) *Server {
	t.Helper()
	s := &Server{
		token:       token,
		done:        make(chan struct{}),
		changed:     make(chan struct{}),
		nextUpdate:  1000,
		nextMessage: 1,
		fails:       map[string][]failure{},
		files:       map[string]file{},
		paths:       map[string][]byte{},
		chats:       map[int64]models.Chat{},
		messages:    map[[2]int64]string{},
		callbacks:   map[string]bool{},
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	t.Cleanup(func() {
		close(s.done)
		s.srv.Close()
	})
	return s
}

// URL is the server's base URL, for bot.WithServerURL.
func (s *Server) URL() string { return s.srv.URL }

// Token is the only token the server accepts.
func (s *Server) Token() string { return s.token }

// notify wakes every waiter. The caller holds s.mu.
func (s *Server) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// SendText queues a text message from userID in chatID and returns its
// update_id. The chat is private when chatID == userID, else a group. Like
// Telegram, it marks a leading /command and @mentions as entities.
func (s *Server) SendText(chatID, userID int64, username, text string) (updateID int64) {
	chat := models.Chat{ID: chatID, Type: models.ChatTypePrivate, FirstName: username, Username: username}
	if chatID != userID {
		chat = models.Chat{ID: chatID, Type: models.ChatTypeGroup, Title: fmt.Sprintf("group %d", chatID)}
	}
	s.mu.Lock()
	s.chats[chatID] = chat
	id := s.nextMessage
	s.nextMessage++
	s.mu.Unlock()
	msg := &models.Message{
		ID:       int(id),
		From:     &models.User{ID: userID, FirstName: username, Username: username},
		Date:     int(time.Now().Unix()),
		Chat:     chat,
		Text:     text,
		Entities: textEntities(text),
	}
	return s.PushUpdate(models.Update{Message: msg})
}

// textEntities finds the bot_command and mention entities Telegram would
// attach to text, with offsets in UTF-16 code units.
func textEntities(text string) []models.MessageEntity {
	var ents []models.MessageEntity
	offset := 0 // of the current rune, in UTF-16 code units
	wordStart, wordOffset := -1, 0
	endWord := func(end int) {
		word := text[wordStart:end]
		switch {
		case wordStart == 0 && len(word) > 1 && word[0] == '/':
			ents = append(ents, models.MessageEntity{Type: models.MessageEntityTypeBotCommand, Offset: wordOffset, Length: utf16Len(word)})
		case len(word) > 1 && word[0] == '@':
			word = strings.TrimRight(word, ".,!?:;")
			ents = append(ents, models.MessageEntity{Type: models.MessageEntityTypeMention, Offset: wordOffset, Length: utf16Len(word)})
		}
		wordStart = -1
	}
	for i, r := range text {
		switch {
		case r == ' ' || r == '\n':
			if wordStart >= 0 {
				endWord(i)
			}
		case wordStart < 0:
			wordStart, wordOffset = i, offset
		}
		offset += utf16.RuneLen(r)
	}
	if wordStart >= 0 {
		endWord(len(text))
	}
	return ents
}

// PushUpdate queues u and returns its update_id, assigned when u.ID is 0.
func (s *Server) PushUpdate(u models.Update) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if u.ID == 0 {
		u.ID = s.nextUpdate
	}
	s.nextUpdate = max(s.nextUpdate, u.ID+1)
	raw, err := json.Marshal(&u)
	if err != nil {
		panic(fmt.Sprintf("telegramtest: encode update: %v", err))
	}
	// Keep the queue in update_id order, as Telegram delivers it.
	k := len(s.updateIDs)
	for k > 0 && s.updateIDs[k-1] > u.ID {
		k--
	}
	s.updateIDs = append(s.updateIDs[:k], append([]int64{u.ID}, s.updateIDs[k:]...)...)
	s.updates = append(s.updates[:k], append([]json.RawMessage{raw}, s.updates[k:]...)...)
	s.notify()
	return u.ID
}

// PressButton queues a callback_query update: userID pressed the inline
// button carrying data under message messageID in chatID.
func (s *Server) PressButton(chatID, userID int64, messageID int64, data string) int64 {
	s.mu.Lock()
	chat, ok := s.chats[chatID]
	if !ok {
		chat = models.Chat{ID: chatID, Type: models.ChatTypePrivate}
		if chatID != userID {
			chat.Type = models.ChatTypeGroup
		}
	}
	queryID := fmt.Sprintf("cbq-%d", s.nextUpdate)
	s.callbacks[queryID] = true
	s.mu.Unlock()
	return s.PushUpdate(models.Update{CallbackQuery: &models.CallbackQuery{
		ID:   queryID,
		From: models.User{ID: userID, FirstName: fmt.Sprintf("user %d", userID)},
		Message: models.MaybeInaccessibleMessage{
			Type: models.MaybeInaccessibleMessageTypeMessage,
			Message: &models.Message{
				ID:   int(messageID),
				From: s.me(),
				Date: int(time.Now().Unix()),
				Chat: chat,
			},
		},
		ChatInstance: strconv.FormatInt(chatID, 10),
		Data:         data,
	}})
}

// AddFile makes data downloadable as fileID: getFile returns a file_path
// and GET /file/bot<token>/<file_path> serves the bytes.
func (s *Server) AddFile(fileID string, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	path := fmt.Sprintf("documents/file_%d_%s", len(s.files), url.PathEscape(fileID))
	s.files[fileID] = file{path: path, data: append([]byte(nil), data...)}
	s.paths[path] = s.files[fileID].data
}

// Calls returns every request for method (every request when method is ""),
// in arrival order.
func (s *Server) Calls(method string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.callsLocked(method)
}

func (s *Server) callsLocked(method string) []Call {
	var out []Call
	for _, c := range s.calls {
		if method == "" || strings.EqualFold(c.Method, method) {
			out = append(out, c)
		}
	}
	return out
}

// WaitCalls waits until at least n requests for method have arrived and
// returns them all, or returns ctx's error.
func (s *Server) WaitCalls(ctx context.Context, method string, n int) ([]Call, error) {
	for {
		s.mu.Lock()
		calls, changed := s.callsLocked(method), s.changed
		s.mu.Unlock()
		if len(calls) >= n {
			return calls, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return calls, fmt.Errorf("wait for %d %s calls, have %d: %w", n, method, len(calls), ctx.Err())
		}
	}
}

// Sent returns the accepted sendMessage calls in order.
func (s *Server) Sent() []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Sent(nil), s.sent...)
}

// WaitSent waits until at least n messages were accepted and returns them
// all, or returns ctx's error.
func (s *Server) WaitSent(ctx context.Context, n int) ([]Sent, error) {
	for {
		s.mu.Lock()
		sent, changed := append([]Sent(nil), s.sent...), s.changed
		s.mu.Unlock()
		if len(sent) >= n {
			return sent, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return sent, fmt.Errorf("wait for %d sent messages, have %d: %w", n, len(sent), ctx.Err())
		}
	}
}

// Edits returns the accepted editMessageText calls in order.
func (s *Server) Edits() []Edit {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Edit(nil), s.edits...)
}

// Deleted returns the (chat, message id) of every message deleteMessage
// removed, in order.
func (s *Server) Deleted() [][2]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][2]int64(nil), s.deleted...)
}

// Visible returns the text a message the bot sent shows now, markup
// removed; false when it was deleted or never sent.
func (s *Server) Visible(chat, id int64) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	text, ok := s.messages[[2]int64{chat, id}]
	return text, ok
}

// WaitUntil re-checks cond after every request and every change until it
// holds, or returns ctx's error. cond may call the server's methods.
func (s *Server) WaitUntil(ctx context.Context, cond func() bool) error {
	for {
		s.mu.Lock()
		changed := s.changed
		s.mu.Unlock()
		if cond() {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("wait for a condition: %w", ctx.Err())
		}
	}
}

// Offset is the highest offset a getUpdates call has confirmed: every update
// with a smaller update_id is gone for good.
func (s *Server) Offset() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.offset
}

func (s *Server) me() *models.User {
	id, _ := strconv.ParseInt(strings.SplitN(s.token, ":", 2)[0], 10, 64)
	if id <= 0 {
		id = 1
	}
	return &models.User{ID: id, IsBot: true, FirstName: "nanobot", Username: BotUsername, CanJoinGroups: true}
}

// serveHTTP routes /bot<token>/<method> and /file/bot<token>/<path>.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if rest, ok := strings.CutPrefix(r.URL.Path, "/file/bot"); ok {
		if s.hold(r.Context()) {
			return
		}
		s.serveFile(w, rest)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/bot")
	token, method, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 || method == "" {
		writeError(w, http.StatusNotFound, "Not Found", 0)
		return
	}
	call, err := readCall(r, method)
	s.record(call)
	if s.hold(r.Context()) {
		return
	}
	if token != s.token || s.isRevoked() {
		writeError(w, http.StatusUnauthorized, "Unauthorized", 0)
		return
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "Bad Request: "+err.Error(), 0)
		return
	}
	if f, ok := s.takeFailure(method); ok {
		if f.drop {
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				conn.Close()
			}
			return
		}
		writeError(w, f.status, f.desc, f.retryAfter)
		return
	}
	h, ok := s.handler(method)
	if !ok {
		writeError(w, http.StatusNotFound, "Not Found", 0)
		return
	}
	result, apiErr := h(r.Context(), call.Params, call.Files)
	if apiErr != nil {
		writeError(w, apiErr.status, apiErr.desc, 0)
		return
	}
	writeResult(w, result)
}

func (s *Server) record(c Call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, c)
	s.notify()
}

func (s *Server) serveFile(w http.ResponseWriter, rest string) {
	token, path, _ := strings.Cut(rest, "/")
	if token != s.token {
		writeError(w, http.StatusUnauthorized, "Unauthorized", 0)
		return
	}
	s.mu.Lock()
	data, ok := s.paths[path]
	s.mu.Unlock()
	if !ok {
		writeError(w, http.StatusNotFound, "Not Found", 0)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write(data)
}

// readCall decodes a request the way Telegram does: query string plus a
// multipart, urlencoded or JSON body.
func readCall(r *http.Request, method string) (Call, error) {
	c := Call{Method: method, Params: map[string]string{}, Files: map[string][]byte{}, At: time.Now()}
	for k, v := range r.URL.Query() {
		c.Params[k] = v[0]
	}
	if r.Body == nil {
		return c, nil
	}
	ct, ctParams, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "multipart/form-data":
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return c, fmt.Errorf("read body: %w", err)
		}
		if len(body) == 0 {
			return c, nil // the library sends parameterless calls such as getMe this way
		}
		form, err := multipart.NewReader(bytes.NewReader(body), ctParams["boundary"]).ReadForm(64 << 20)
		if err != nil {
			return c, fmt.Errorf("can't parse multipart body: %w", err)
		}
		defer func() { _ = form.RemoveAll() }()
		for k, v := range form.Value {
			c.Params[k] = v[0]
		}
		for k, fhs := range form.File {
			f, err := fhs[0].Open()
			if err != nil {
				return c, err
			}
			data, err := io.ReadAll(f)
			_ = f.Close()
			if err != nil {
				return c, err
			}
			c.Files[k] = data
			if _, ok := c.Params[k]; !ok {
				c.Params[k] = fhs[0].Filename
			}
		}
	case "application/x-www-form-urlencoded":
		if err := r.ParseForm(); err != nil {
			return c, fmt.Errorf("can't parse form body: %w", err)
		}
		for k, v := range r.PostForm {
			c.Params[k] = v[0]
		}
	case "application/json":
		var fields map[string]json.RawMessage
		if err := json.NewDecoder(r.Body).Decode(&fields); err != nil && err != io.EOF {
			return c, fmt.Errorf("can't parse JSON body: %w", err)
		}
		for k, v := range fields {
			var str string
			if json.Unmarshal(v, &str) == nil {
				c.Params[k] = str
			} else {
				c.Params[k] = string(v)
			}
		}
	}
	return c, nil
}

type envelope struct {
	OK          bool            `json:"ok"`
	Result      any             `json:"result,omitempty"`
	ErrorCode   int             `json:"error_code,omitempty"`
	Description string          `json:"description,omitempty"`
	Parameters  *responseParams `json:"parameters,omitempty"`
}

type responseParams struct {
	RetryAfter int `json:"retry_after,omitempty"`
}

func writeResult(w http.ResponseWriter, result any) {
	writeJSON(w, http.StatusOK, envelope{OK: true, Result: result})
}

func writeError(w http.ResponseWriter, status int, desc string, retryAfter int) {
	e := envelope{ErrorCode: status, Description: desc}
	if retryAfter > 0 {
		e.Parameters = &responseParams{RetryAfter: retryAfter}
	}
	writeJSON(w, status, e)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		body = []byte(`{"ok":false,"error_code":500,"description":"Internal Server Error"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
