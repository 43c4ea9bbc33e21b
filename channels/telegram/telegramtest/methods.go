package telegramtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/go-telegram/bot/models"
)

// apiError is a failed call: an HTTP status and Telegram's description.
type apiError struct {
	status int
	desc   string
}

func badRequest(format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, desc: "Bad Request: " + fmt.Sprintf(format, args...)}
}

type methodFunc func(ctx context.Context, p map[string]string, files map[string][]byte) (any, *apiError)

func (s *Server) handler(method string) (methodFunc, bool) {
	ok := func(context.Context, map[string]string, map[string][]byte) (any, *apiError) { return true, nil }
	switch strings.ToLower(method) {
	case "getme":
		return func(context.Context, map[string]string, map[string][]byte) (any, *apiError) { return s.me(), nil }, true
	case "getupdates":
		return s.getUpdates, true
	case "sendmessage":
		return s.sendMessage, true
	case "sendchataction":
		return s.sendChatAction, true
	case "setmycommands":
		return s.setMyCommands, true
	case "deletemycommands":
		return ok, true
	case "setwebhook", "deletewebhook":
		return s.setWebhook, true
	case "getwebhookinfo":
		return s.getWebhookInfo, true
	case "getfile":
		return s.getFile, true
	case "editmessagetext":
		return s.editMessageText, true
	case "deletemessage":
		return s.deleteMessage, true
	case "editmessagereplymarkup":
		return s.editMessageReplyMarkup, true
	case "answercallbackquery":
		return s.answerCallbackQuery, true
	case "senddocument":
		return s.sendDocument, true
	}
	return nil, false
}

// getUpdates confirms every update below offset, then returns the pending
// ones, waiting up to timeout seconds for one to arrive.
func (s *Server) getUpdates(ctx context.Context, p map[string]string, _ map[string][]byte) (any, *apiError) {
	offset, _ := strconv.ParseInt(p["offset"], 10, 64)
	limit, _ := strconv.Atoi(p["limit"])
	if limit <= 0 || limit > 100 {
		limit = 100
	}
	timeout, _ := strconv.Atoi(p["timeout"])
	var expired <-chan time.Time
	if timeout > 0 {
		timer := time.NewTimer(time.Duration(timeout) * time.Second)
		defer timer.Stop()
		expired = timer.C
	}
	for {
		s.mu.Lock()
		if s.webhook != "" {
			s.mu.Unlock()
			return nil, &apiError{status: http.StatusConflict, desc: "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first"}
		}
		s.confirm(offset)
		batch := append([]json.RawMessage{}, s.updates[:min(limit, len(s.updates))]...)
		changed := s.changed
		s.mu.Unlock()
		if len(batch) > 0 || timeout <= 0 {
			return batch, nil
		}
		select {
		case <-changed:
		case <-expired:
			return []json.RawMessage{}, nil
		case <-ctx.Done():
			return []json.RawMessage{}, nil
		case <-s.done:
			return []json.RawMessage{}, nil
		}
	}
}

// confirm drops the updates offset acknowledges. A negative offset keeps
// only the last -offset updates, as Telegram does. The caller holds s.mu.
func (s *Server) confirm(offset int64) {
	drop := 0
	switch {
	case offset > 0:
		for drop < len(s.updateIDs) && s.updateIDs[drop] < offset {
			drop++
		}
		if offset > s.offset {
			s.offset = offset
			s.notify()
		}
	case offset < 0:
		drop = max(0, len(s.updates)+int(offset))
		if drop > 0 {
			s.offset = max(s.offset, s.updateIDs[drop-1]+1)
		}
	}
	if drop > 0 {
		s.updates = s.updates[drop:]
		s.updateIDs = s.updateIDs[drop:]
	}
}

func (s *Server) getWebhookInfo(context.Context, map[string]string, map[string][]byte) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return models.WebhookInfo{URL: s.webhook, PendingUpdateCount: len(s.updates)}, nil
}

// setWebhook serves setWebhook and deleteWebhook (a webhook with no URL).
// While a webhook is set, getUpdates fails with 409 as on Telegram.
func (s *Server) setWebhook(_ context.Context, p map[string]string, _ map[string][]byte) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.webhook = p["url"]
	if p["drop_pending_updates"] == "true" {
		s.updates, s.updateIDs = nil, nil
	}
	return true, nil
}

// chatID reads the chat_id parameter; only numeric ids are known here.
func chatID(p map[string]string) (int64, *apiError) {
	v, ok := p["chat_id"]
	if !ok || v == "" {
		return 0, badRequest("chat_id is empty")
	}
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id == 0 {
		return 0, badRequest("chat not found")
	}
	return id, nil
}

// chat describes chat id as Telegram would. The caller holds s.mu.
func (s *Server) chat(id int64) models.Chat {
	if c, ok := s.chats[id]; ok {
		return c
	}
	if id > 0 {
		return models.Chat{ID: id, Type: models.ChatTypePrivate}
	}
	return models.Chat{ID: id, Type: models.ChatTypeGroup}
}

func (s *Server) sendMessage(_ context.Context, p map[string]string, _ map[string][]byte) (any, *apiError) {
	chat, apiErr := chatID(p)
	if apiErr != nil {
		return nil, apiErr
	}
	visible, desc := checkText(p["text"], p["parse_mode"])
	if desc != "" {
		return nil, &apiError{status: http.StatusBadRequest, desc: desc}
	}
	replyTo, apiErr := replyTo(p)
	if apiErr != nil {
		return nil, apiErr
	}
	if m := p["reply_markup"]; m != "" && !json.Valid([]byte(m)) {
		return nil, badRequest("can't parse reply keyboard markup JSON object")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.nextMessage
	s.nextMessage++
	s.sent = append(s.sent, Sent{
		ChatID: chat, MessageID: id, Text: p["text"], ParseMode: p["parse_mode"], ReplyTo: replyTo, ReplyMarkup: p["reply_markup"],
		LinkPreview: p["link_preview_options"],
	})
	s.messages[[2]int64{chat, id}] = visible
	s.notify()
	return s.message(chat, id, visible), nil
}

// message is what Telegram returns for a message the bot sent. The caller
// holds s.mu.
func (s *Server) message(chat, id int64, text string) *models.Message {
	return &models.Message{ID: int(id), From: s.me(), Chat: s.chat(chat), Date: int(time.Now().Unix()), Text: text}
}

func replyTo(p map[string]string) (int64, *apiError) {
	if v := p["reply_parameters"]; v != "" {
		var rp struct {
			MessageID int64 `json:"message_id"`
		}
		if err := json.Unmarshal([]byte(v), &rp); err != nil {
			return 0, badRequest("can't parse reply parameters JSON object")
		}
		return rp.MessageID, nil
	}
	if v := p["reply_to_message_id"]; v != "" {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, badRequest("wrong parameter reply_to_message_id")
		}
		return id, nil
	}
	return 0, nil
}

func (s *Server) sendChatAction(_ context.Context, p map[string]string, _ map[string][]byte) (any, *apiError) {
	if _, apiErr := chatID(p); apiErr != nil {
		return nil, apiErr
	}
	switch p["action"] {
	case "typing", "upload_photo", "record_video", "upload_video", "record_voice", "upload_voice",
		"upload_document", "choose_sticker", "find_location", "record_video_note", "upload_video_note":
		return true, nil
	}
	return nil, badRequest("wrong parameter action in request")
}

var commandRE = regexp.MustCompile(`^[a-z0-9_]{1,32}$`)

func (s *Server) setMyCommands(_ context.Context, p map[string]string, _ map[string][]byte) (any, *apiError) {
	var cmds []models.BotCommand
	if err := json.Unmarshal([]byte(p["commands"]), &cmds); err != nil {
		return nil, badRequest("can't parse commands JSON object")
	}
	if len(cmds) > 100 {
		return nil, badRequest("BOT_COMMANDS_TOO_MUCH")
	}
	for _, c := range cmds {
		if !commandRE.MatchString(c.Command) || c.Description == "" || len([]rune(c.Description)) > 256 {
			return nil, badRequest("BOT_COMMAND_INVALID")
		}
	}
	return true, nil
}

func (s *Server) getFile(_ context.Context, p map[string]string, _ map[string][]byte) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.files[p["file_id"]]
	if !ok {
		return nil, badRequest("invalid file_id")
	}
	return models.File{FileID: p["file_id"], FileUniqueID: "u-" + p["file_id"], FileSize: int64(len(f.data)), FilePath: f.path}, nil
}

// editedMessage finds the bot's message a call refers to. The caller holds s.mu.
func (s *Server) editedMessage(p map[string]string) ([2]int64, string, *apiError) {
	if p["inline_message_id"] != "" {
		return [2]int64{}, "", badRequest("MESSAGE_ID_INVALID")
	}
	chat, apiErr := chatID(p)
	if apiErr != nil {
		return [2]int64{}, "", apiErr
	}
	id, _ := strconv.ParseInt(p["message_id"], 10, 64)
	key := [2]int64{chat, id}
	text, ok := s.messages[key]
	if !ok {
		return key, "", badRequest("message to edit not found")
	}
	return key, text, nil
}

func (s *Server) editMessageText(_ context.Context, p map[string]string, _ map[string][]byte) (any, *apiError) {
	visible, desc := checkText(p["text"], p["parse_mode"])
	s.mu.Lock()
	defer s.mu.Unlock()
	key, old, apiErr := s.editedMessage(p)
	if apiErr != nil {
		return nil, apiErr
	}
	if desc != "" {
		return nil, &apiError{status: http.StatusBadRequest, desc: desc}
	}
	if visible == old && p["reply_markup"] == "" {
		return nil, badRequest("message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message")
	}
	s.messages[key] = visible
	s.edits = append(s.edits, Edit{ChatID: key[0], MessageID: key[1], Text: p["text"], ParseMode: p["parse_mode"]})
	s.notify()
	return s.message(key[0], key[1], visible), nil
}

// deleteMessage removes a message the bot sent. Telegram answers true, or
// 400 for a message it does not know (never sent, or deleted already).
func (s *Server) deleteMessage(_ context.Context, p map[string]string, _ map[string][]byte) (any, *apiError) {
	chat, apiErr := chatID(p)
	if apiErr != nil {
		return nil, apiErr
	}
	id, err := strconv.ParseInt(p["message_id"], 10, 64)
	if err != nil {
		return nil, badRequest("message identifier is not specified")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	key := [2]int64{chat, id}
	if _, ok := s.messages[key]; !ok {
		return nil, badRequest("message to delete not found")
	}
	delete(s.messages, key)
	s.deleted = append(s.deleted, key)
	s.notify()
	return true, nil
}

func (s *Server) editMessageReplyMarkup(_ context.Context, p map[string]string, _ map[string][]byte) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key, text, apiErr := s.editedMessage(p)
	if apiErr != nil {
		return nil, apiErr
	}
	if m := p["reply_markup"]; m != "" && !json.Valid([]byte(m)) {
		return nil, badRequest("can't parse reply keyboard markup JSON object")
	}
	return s.message(key[0], key[1], text), nil
}

func (s *Server) answerCallbackQuery(_ context.Context, p map[string]string, _ map[string][]byte) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.callbacks[p["callback_query_id"]] {
		return nil, badRequest("query is too old and response timeout expired or query ID is invalid")
	}
	delete(s.callbacks, p["callback_query_id"])
	return true, nil
}

func (s *Server) sendDocument(_ context.Context, p map[string]string, files map[string][]byte) (any, *apiError) {
	chat, apiErr := chatID(p)
	if apiErr != nil {
		return nil, apiErr
	}
	data, uploaded := files["document"]
	if !uploaded && p["document"] == "" {
		return nil, badRequest("there is no document in the request")
	}
	caption := p["caption"]
	if caption != "" {
		if strings.EqualFold(p["parse_mode"], "html") {
			v, err := parseHTML(caption)
			if err != nil {
				return nil, badRequest("can't parse entities: %v", err)
			}
			caption = v
		}
		if utf16Len(caption) > 1024 {
			return nil, badRequest("message caption is too long")
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.nextMessage
	s.nextMessage++
	msg := s.message(chat, id, "")
	msg.Caption = caption
	msg.Document = &models.Document{FileID: fmt.Sprintf("doc-%d", id), FileUniqueID: fmt.Sprintf("udoc-%d", id), FileName: p["document"], FileSize: int64(len(data))}
	s.messages[[2]int64{chat, id}] = caption
	s.notify()
	return msg, nil
}
