package telegram

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/session"
	"github.com/nanobot-go/nanobot/turns"
)

var botCommands = []models.BotCommand{
	{Command: "start", Description: "Say hello"},
	{Command: "help", Description: "What I can do"},
	{Command: "new", Description: "Start a fresh conversation"},
	{Command: "stop", Description: "Stop what I am working on"},
	{Command: "status", Description: "Model, conversation and queue"},
	{Command: "jobs", Description: "Scheduled jobs of this chat"},
	{Command: "subagents", Description: "Background tasks running for this chat"},
	{Command: "web", Description: "A sign-in link to the web console (owner)"},
}

const (
	greeting = "Hi! I'm your assistant. Send me a message, a photo, a document or a voice note. /help lists the commands."
	helpText = "Send me a message and I'll answer.\n\n" +
		"/new: start a fresh conversation\n" +
		"/stop: stop what I am working on\n" +
		"/status: model, conversation and queue\n" +
		"/jobs: scheduled jobs of this chat\n" +
		"/subagents: background tasks running for this chat\n" +
		"/web: a sign-in link to the web console (owner only)\n" +
		"/help: this list\n\n" +
		"Any other /command gets this list too; everything else goes to me.\n" +
		"In groups, mention me or reply to me."
	unknownCommandText = "I do not know /%s.\n\n" + helpText
	noVoice            = "Voice messages are not configured (set provider.transcription_model)."
	blindNote          = "[The user sent an image, which this model cannot see.]"
	noticeUnknown      = "Sorry, this assistant is private. Your Telegram user id is %d; its owner can add it to channels.telegram.allow_from."
)

// prepare decides what a recorded item needs: a queued job (queue true), or
// an immediate reply ("" for none) that completes it.
func (c *Channel) prepare(ctx context.Context, it turns.InboxItem) (j *job, reply string, queue bool) {
	if it.Channel == systemChannel {
		return systemJob(it)
	}
	var u models.Update
	if err := json.Unmarshal(it.Payload, &u); err != nil || u.Message == nil {
		return nil, "", false
	}
	m := u.Message
	if it.State == turns.InboxStarted {
		// It passed every check before the restart; finish what began.
		text, _ := c.address(m)
		return &job{item: it, msg: m, kind: jobText, text: c.withName(m, text), sender: senderID(m)}, "", true
	}
	if m.From == nil || m.From.IsBot || m.Chat.Type == models.ChatTypeChannel {
		return nil, "", false
	}
	text, addressed := c.address(m)
	if !addressed {
		return nil, "", false
	}
	if !c.allow.Load().permits(m.From, m.Chat.ID) {
		c.log.Warn("message from a sender not in allow_from", "user_id", m.From.ID, "username", m.From.Username, "chat_id", m.Chat.ID)
		if c.tellStranger(ctx, m.From.ID) {
			return nil, fmt.Sprintf(noticeUnknown, m.From.ID), false
		}
		return nil, "", false
	}
	switch cmd, forUs := command(text, c.me.Username); {
	case !forUs:
		return nil, "", false
	case cmd == "start":
		return nil, greeting, false
	case cmd == "help":
		return nil, helpText, false
	case cmd == "stop":
		return nil, c.stopReply(ctx, it.ChatID), false
	case cmd == "jobs":
		return nil, c.jobsReply(ctx, it.ChatID), false
	case cmd == "subagents":
		return nil, c.tasksReply(ctx, it.ChatID), false
	case cmd == "status":
		return nil, c.status(ctx, it.ChatID), false
	case cmd == "web":
		return nil, c.webReply(ctx, m), false
	case cmd == "new":
		return &job{item: it, msg: m, kind: jobNew, text: "/new", sender: m.From.ID}, "", true
	}
	if name, ok := unknownCommand(text); ok && m.Text != "" {
		// A command this bot lacks is a typo or an old habit: the model
		// would only guess at it.
		return nil, fmt.Sprintf(unknownCommandText, name), false
	}
	j = &job{item: it, msg: m, kind: jobText, text: c.withName(m, text), sender: m.From.ID}
	switch {
	case len(m.Photo) > 0 || m.Document != nil || m.Voice != nil || m.Audio != nil:
		j.kind = jobMedia
	case text == "":
		return nil, "", false // stickers, service messages: nothing to answer
	}
	return j, "", true
}

func senderID(m *models.Message) int64 {
	if m.From == nil {
		return 0
	}
	return m.From.ID
}

func isGroup(m *models.Message) bool {
	return m.Chat.Type == models.ChatTypeGroup || m.Chat.Type == models.ChatTypeSupergroup
}

// address returns the message's text (or caption) without the bot's
// @mention and whether the group policy lets the bot answer it.
func (c *Channel) address(m *models.Message) (string, bool) {
	text := m.Text
	if text == "" {
		text = m.Caption
	}
	if !isGroup(m) {
		return strings.TrimSpace(text), true
	}
	mention := "@" + c.me.Username
	stripped, mentioned := stripMention(text, mention)
	switch c.cfg.GroupPolicy {
	case "ignore":
		return "", false
	case "all":
		return stripped, true
	}
	if mentioned {
		return stripped, true
	}
	if r := m.ReplyToMessage; r != nil && r.From != nil && r.From.ID == c.me.ID {
		return stripped, true
	}
	if cmd, forUs := command(stripped, c.me.Username); cmd != "" && forUs {
		return stripped, true
	}
	return "", false
}

// stripMention removes every whole-word, case-insensitive occurrence of
// mention ("@name") from text.
func stripMention(text, mention string) (string, bool) {
	if len(mention) < 2 {
		return strings.TrimSpace(text), false
	}
	var b strings.Builder
	found := false
	rest := text
	for {
		i := indexFold(rest, mention)
		if i < 0 {
			b.WriteString(rest)
			break
		}
		end := i + len(mention)
		r, _ := utf8.DecodeRuneInString(rest[end:])
		if end < len(rest) && (r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)) {
			b.WriteString(rest[:end]) // a longer name: not us
			rest = rest[end:]
			continue
		}
		found = true
		b.WriteString(rest[:i])
		rest = rest[end:]
		// "hey @bot what" reads "hey what", not "hey  what".
		if s := b.String(); s == "" || strings.HasSuffix(s, " ") || strings.HasSuffix(s, "\n") {
			rest = strings.TrimPrefix(rest, " ")
		}
	}
	return strings.TrimSpace(b.String()), found
}

func indexFold(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(sub)], sub) {
			return i
		}
	}
	return -1
}

// command returns the bot command text starts with ("" when none) and
// whether it is meant for this bot (false for "/cmd@otherbot").
func command(text, botName string) (string, bool) {
	if !strings.HasPrefix(text, "/") {
		return "", true
	}
	word, _, _ := strings.Cut(text[1:], " ")
	word, _, _ = strings.Cut(word, "\n")
	name, target, hasTarget := strings.Cut(word, "@")
	if hasTarget && !strings.EqualFold(target, botName) {
		return "", false
	}
	switch name = strings.ToLower(name); name {
	case "start", "help", "new", "stop", "status", "jobs", "subagents", "web":
		return name, true
	}
	return "", true // unknown commands are answered by prepare
}

// unknownCommand reports text that starts with a command of Telegram's
// shape (a slash, then 1 to 32 letters, digits or underscores, maybe
// "@bot") that command does not know, and its name. A path such as
// "/etc/hosts is gone" is no command.
func unknownCommand(text string) (string, bool) {
	rest, ok := strings.CutPrefix(text, "/")
	if !ok {
		return "", false
	}
	word, _, _ := strings.Cut(rest, " ")
	word, _, _ = strings.Cut(word, "\n")
	name, _, _ := strings.Cut(word, "@")
	if len(name) == 0 || len(name) > 32 {
		return "", false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_') {
			return "", false
		}
	}
	if cmd, _ := command("/"+name, ""); cmd != "" {
		return "", false
	}
	return strings.ToLower(name), true
}

func displayName(u *models.User) string {
	name := strings.TrimSpace(u.FirstName + " " + u.LastName)
	if name == "" {
		name = u.Username
	}
	if name == "" {
		name = strconv.FormatInt(u.ID, 10)
	}
	return name
}

// withName prefixes group messages with the sender's name so the model
// knows who is speaking.
func (c *Channel) withName(m *models.Message, text string) string {
	if !isGroup(m) || m.From == nil {
		return text
	}
	return "[" + displayName(m.From) + "]: " + text
}

func (c *Channel) status(ctx context.Context, chat string) string {
	var conv string
	if c.sessions != nil {
		s, err := c.sessions.Status(ctx, session.Chat("telegram", chat).String())
		if err != nil {
			c.log.Error("session status", "chat_id", chat, "err", err)
			s = "Conversation: unavailable"
		}
		conv = strings.TrimSpace(s)
	}
	var b strings.Builder
	if !strings.HasPrefix(conv, "Model:") && !strings.Contains(conv, "\nModel:") {
		fmt.Fprintf(&b, "Model: %s\n", *c.model.Load())
	}
	if conv != "" {
		b.WriteString(conv + "\n")
	}
	fmt.Fprintf(&b, "Uptime: %s\n", time.Since(c.startedAt).Round(time.Second))
	l := c.turns.ChatLoad(queueOf(chat))
	state := "idle"
	if l.Busy {
		state = "working on a reply"
	}
	fmt.Fprintf(&b, "This chat: %s, %d waiting\nAll chats: %d running, %d waiting", state, l.Waiting, l.Running, l.Queued)
	return b.String()
}

// buildMessage turns a batch into the user message for the model,
// downloading media. When ok is false, reply answers the user instead.
func (c *Channel) buildMessage(ctx context.Context, batch []*job) (msg agent.Message, reply string, ok bool) {
	msg = agent.Message{Role: agent.RoleUser, CreatedAt: batch[0].item.ReceivedAt}
	j := batch[0]
	if len(batch) > 1 || j.kind != jobMedia {
		msg.Content = mergedText(batch)
		return msg, "", true
	}
	m := j.msg
	caption, _ := c.address(m)
	var note string
	switch {
	case len(m.Photo) > 0:
		note, msg.Images, reply = c.photo(ctx, m.Photo)
	case m.Document != nil:
		note, reply = c.document(ctx, m.Document)
	case m.Voice != nil:
		note, reply = c.voice(ctx, m.Voice.FileID, m.Voice.FileSize, "voice.ogg")
	case m.Audio != nil:
		name := m.Audio.FileName
		if name == "" {
			name = "audio.mp3"
		}
		note, reply = c.voice(ctx, m.Audio.FileID, m.Audio.FileSize, name)
	}
	if reply != "" {
		return msg, reply, false
	}
	content := strings.TrimSpace(strings.Join([]string{note, caption}, "\n"))
	msg.Content = c.withName(m, content)
	return msg, "", true
}

var errTooLarge = errors.New("file too large")

func (c *Channel) tooLarge(size int64) string {
	if size > 0 {
		return fmt.Sprintf("That file is too large for me (%s; the limit is %s).", humanSize(size), humanSize(c.cfg.MaxFileSize))
	}
	return fmt.Sprintf("That file is too large for me (the limit is %s).", humanSize(c.cfg.MaxFileSize))
}

func humanSize(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

func (c *Channel) photo(ctx context.Context, sizes []models.PhotoSize) (note string, images []string, reply string) {
	best := sizes[0]
	for _, p := range sizes[1:] {
		if p.Width*p.Height > best.Width*best.Height {
			best = p
		}
	}
	if int64(best.FileSize) > c.cfg.MaxFileSize {
		return "", nil, c.tooLarge(int64(best.FileSize))
	}
	if !c.cfg.Vision {
		return blindNote, nil, ""
	}
	data, err := c.download(ctx, best.FileID)
	if err != nil {
		return "", nil, c.downloadFailed(err, "image")
	}
	mime := http.DetectContentType(data)
	if !strings.HasPrefix(mime, "image/") {
		mime = "image/jpeg"
	}
	return "", []string{"data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(data)}, ""
}

func (c *Channel) document(ctx context.Context, d *models.Document) (note, reply string) {
	if d.FileSize > c.cfg.MaxFileSize {
		return "", c.tooLarge(d.FileSize)
	}
	if c.cfg.Workspace == "" {
		return "", "I can't receive files: no workspace is configured."
	}
	data, err := c.download(ctx, d.FileID)
	if err != nil {
		return "", c.downloadFailed(err, "file")
	}
	name, err := saveUnique(filepath.Join(c.cfg.Workspace, "inbox"), sanitizeName(d.FileName), data)
	if err != nil {
		c.log.Error("save received file", "err", err)
		return "", "Sorry, I could not save that file."
	}
	rel := "inbox/" + name
	return fmt.Sprintf("[The user sent a file, saved in the workspace as %s (%s).]", rel, humanSize(int64(len(data)))), ""
}

func (c *Channel) voice(ctx context.Context, fileID string, size int64, name string) (note, reply string) {
	if c.transcriber == nil {
		return "", noVoice
	}
	if size > c.cfg.MaxFileSize {
		return "", c.tooLarge(size)
	}
	data, err := c.download(ctx, fileID)
	if err != nil {
		return "", c.downloadFailed(err, "voice message")
	}
	text, err := c.transcriber.Transcribe(ctx, name, data)
	if err != nil {
		c.log.Error("transcribe voice message", "err", err)
		return "", "Sorry, I could not transcribe that voice message."
	}
	return "[Voice message, transcribed]: " + strings.TrimSpace(text), ""
}

func (c *Channel) downloadFailed(err error, what string) string {
	if errors.Is(err, errTooLarge) {
		return c.tooLarge(0)
	}
	c.log.Error("download file", "err", err)
	return "Sorry, I could not download that " + what + " from Telegram."
}

// download fetches a file through getFile, reading at most MaxFileSize.
func (c *Channel) download(ctx context.Context, fileID string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	f, err := c.bot.GetFile(ctx, &bot.GetFileParams{FileID: fileID})
	if err != nil {
		return nil, fmt.Errorf("get file: %w", c.scrub(err))
	}
	if f.FileSize > c.cfg.MaxFileSize {
		return nil, errTooLarge
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.bot.FileDownloadLink(f), nil)
	if err != nil {
		return nil, fmt.Errorf("download file: %w", c.scrub(err))
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("download file: %w", c.scrub(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("download file: HTTP %d", resp.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, c.cfg.MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("download file: %w", c.scrub(err))
	}
	if int64(len(data)) > c.cfg.MaxFileSize {
		return nil, errTooLarge
	}
	return data, nil
}

const maxNameBytes = 100

// sanitizeName makes a sender's file name safe to create in one directory:
// no path, no leading dot, only ordinary characters, bounded length.
func sanitizeName(name string) string {
	name = strings.ReplaceAll(name, `\`, "/")
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	var b strings.Builder
	for _, r := range name {
		switch {
		case r == '.' || r == '-' || r == '_' || r == ' ', unicode.IsLetter(r), unicode.IsDigit(r):
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	name = strings.TrimLeft(strings.TrimSpace(b.String()), ". ")
	if len(name) > maxNameBytes {
		ext := filepath.Ext(name)
		if len(ext) > 16 || !utf8.ValidString(ext) {
			ext = ""
		}
		stem := name[:maxNameBytes-len(ext)]
		for !utf8.ValidString(stem) {
			stem = stem[:len(stem)-1]
		}
		name = stem + ext
	}
	if name == "" {
		name = "file"
	}
	return name
}

// saveUnique writes data to dir/name, or name-1, name-2… when taken, and
// returns the name used. It never overwrites.
func saveUnique(dir, name string, data []byte) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create inbox: %w", err)
	}
	ext := filepath.Ext(name)
	stem := strings.TrimSuffix(name, ext)
	for i := 0; i < 1000; i++ {
		candidate := name
		if i > 0 {
			candidate = fmt.Sprintf("%s-%d%s", stem, i, ext)
		}
		f, err := os.OpenFile(filepath.Join(dir, candidate), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("create file: %w", err)
		}
		_, werr := f.Write(data)
		cerr := f.Close()
		if err := errors.Join(werr, cerr); err != nil {
			os.Remove(f.Name())
			return "", fmt.Errorf("write file: %w", err)
		}
		return candidate, nil
	}
	return "", errors.New("too many files with the same name")
}
