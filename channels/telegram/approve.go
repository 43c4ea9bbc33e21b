package telegram

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"html"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/internal/human"
	"github.com/nanobot-go/nanobot/session"
)

// ErrNoApprover reports that nobody can be asked to approve a command.
var ErrNoApprover = errors.New("no approver: set tools.exec.approver or put a numeric user id first in channels.telegram.allow_from")

const (
	approveVerb = "approve"
	denyVerb    = "deny"
)

// approvals are the requests waiting for the owner's button press. Each
// is bound to the message that carries its buttons: a press counts only
// on that message, so no callback data, however made, answers another.
type approvals struct {
	mu      sync.Mutex
	waiting map[string]*pending
}

type pending struct {
	answer  chan bool
	message int           // the approval message; set before bound is closed
	bound   chan struct{} // closed once the message is sent
}

func newApprovals() *approvals { return &approvals{waiting: map[string]*pending{}} }

func (a *approvals) register(id string) chan bool {
	ch := make(chan bool, 1)
	a.mu.Lock()
	a.waiting[id] = &pending{answer: ch, bound: make(chan struct{})}
	a.mu.Unlock()
	return ch
}

// sent records the message that carries id's buttons.
func (a *approvals) sent(id string, message int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if p := a.waiting[id]; p != nil {
		p.message = message
		close(p.bound)
	}
}

func (a *approvals) forget(id string) {
	a.mu.Lock()
	delete(a.waiting, id)
	a.mu.Unlock()
}

// resolve delivers the owner's answer to a press on message; false when
// nothing waits for id there. A press that arrives while the approval
// message is still on its way (Telegram shows it before the channel
// learns its id) waits for it, until ctx ends.
func (a *approvals) resolve(ctx context.Context, id string, message int, approved bool) bool {
	a.mu.Lock()
	p, ok := a.waiting[id]
	a.mu.Unlock()
	if !ok {
		return false
	}
	select {
	case <-p.bound:
	case <-ctx.Done():
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.waiting[id] != p || p.message != message {
		return false
	}
	delete(a.waiting, id)
	p.answer <- approved
	return true
}

// approver is the user id asked to approve commands.
func (c *Channel) approver() (int64, bool) {
	if c.cfg.Approver != "" {
		id, err := strconv.ParseInt(strings.TrimSpace(c.cfg.Approver), 10, 64)
		return id, err == nil
	}
	id := c.allow.Load().firstID
	return id, id != 0
}

// maxApprovalText is the longest approval message (in UTF-16 units, as
// shown) with the command in it; Telegram takes 4,096, and the outcome is
// added later. A longer command is sent whole as a file and the message
// refers to it.
const maxApprovalText = 3900

// Approve asks the owner on Telegram whether command may run, with Approve
// and Deny buttons. The owner sees the command whole and every character
// of it (see visible): in the message, or, when it does not fit, in a file
// sent just before the message, which replies to it. Silence until the
// approval timeout, or ctx ending, is a denial, and so is a command that
// cannot be shown. It returns the decision and who made it ("" when
// nobody did).
func (c *Channel) Approve(ctx context.Context, command, reason string) (bool, string, error) {
	owner, ok := c.approver()
	if !ok {
		return false, "", ErrNoApprover
	}
	t, _ := agent.TurnFrom(ctx)
	id := rand.Text()
	answer := c.approvals.register(id)
	defer c.approvals.forget(id)

	shown := human.Visible(command)
	params := &bot.SendMessageParams{
		ChatID:    owner,
		ParseMode: models.ParseModeHTML,
		ReplyMarkup: models.InlineKeyboardMarkup{InlineKeyboard: [][]models.InlineKeyboardButton{{
			{Text: "Approve", CallbackData: approveVerb + ":" + id},
			{Text: "Deny", CallbackData: denyVerb + ":" + id},
		}}},
	}
	header := approvalHeader(t, reason)
	body := "Command:\n<pre>" + html.EscapeString(shown) + "</pre>"
	if utf16Len(header)+utf16Len(shown) > maxApprovalText {
		doc, name, err := c.sendCommandFile(ctx, owner, command, shown)
		if err != nil {
			return false, "", err
		}
		body = fmt.Sprintf("Command: %d characters, too long for a message: it is shown whole in the file <b>%s</b> above. "+
			"Read all of it before you approve.", utf8.RuneCountInString(command), html.EscapeString(name))
		params.ReplyParameters = &models.ReplyParameters{MessageID: doc}
	}
	text := header + body
	params.Text = text
	callCtx, cancel := context.WithTimeout(ctx, sendTimeout)
	m, err := c.bot.SendMessage(callCtx, params)
	cancel()
	if err != nil {
		return false, "", fmt.Errorf("ask for approval: %w", c.scrub(err))
	}
	c.approvals.sent(id, m.ID)

	timer := time.NewTimer(c.cfg.ApprovalTimeout)
	defer timer.Stop()
	var approved bool
	var outcome, who string
	select {
	case approved = <-answer:
		who = session.Chat("telegram", strconv.FormatInt(owner, 10)).String()
		outcome = "Denied."
		if approved {
			outcome = "Approved."
		}
	case <-timer.C:
		outcome = "No answer in time: denied."
	case <-ctx.Done():
		outcome = "The request was withdrawn: denied."
	}
	c.log.Info("approval", "approved", approved, "outcome", outcome, "chat_id", t.ChatID, "turn_id", t.ID)

	// Show the outcome and drop the buttons, even if the turn is over.
	editCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sendTimeout)
	defer cancel()
	if _, err := c.bot.EditMessageText(editCtx, &bot.EditMessageTextParams{
		ChatID:    owner,
		MessageID: m.ID,
		Text:      text + "\n\n<b>" + html.EscapeString(outcome) + "</b>",
		ParseMode: models.ParseModeHTML,
	}); err != nil {
		c.log.Warn("show approval outcome", "err", c.scrub(err))
	}
	return approved, who, nil
}

// sendCommandFile sends the command, as visible shows it, to the owner as
// a text file, and returns the file message's id and the file's name.
func (c *Channel) sendCommandFile(ctx context.Context, owner int64, command, shown string) (int, string, error) {
	sum := sha256.Sum256([]byte(command))
	digest := hex.EncodeToString(sum[:])
	name := "command-" + digest[:12] + ".txt"
	callCtx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	m, err := c.bot.SendDocument(callCtx, &bot.SendDocumentParams{
		ChatID:   owner,
		Document: &models.InputFileUpload{Filename: name, Data: strings.NewReader(shown + "\n")},
		Caption: fmt.Sprintf("The command waiting for your approval, whole: %d characters, SHA-256 %s. "+
			"Line breaks are shown as ⏎, invisible and control characters as \\uNNNN and \\xNN escapes.",
			utf8.RuneCountInString(command), digest),
	})
	if err != nil {
		return 0, "", fmt.Errorf("send the command for approval: %w", c.scrub(err))
	}
	return m.ID, name, nil
}

// approvalHeader says who asks and why. The sender's name and the reason
// are shown like the command: every character visible, and short.
func approvalHeader(t agent.Turn, reason string) string {
	var b strings.Builder
	b.WriteString("<b>Approval needed</b>\n")
	if t.ChatID != "" {
		from := t.ChatID
		if t.SenderName != "" {
			from += " (" + truncate(t.SenderName, 64) + ")"
		}
		b.WriteString("Chat: " + html.EscapeString(human.Visible(from)) + "\n")
	}
	if reason != "" {
		b.WriteString("Why it needs approval: " + html.EscapeString(human.Visible(truncate(reason, 300))) + "\n")
	}
	return b.String()
}

func truncate(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// handleCallback answers a button press. Only the approver's presses on
// the approval's own message, in the approver's chat, count.
func (c *Channel) handleCallback(q *models.CallbackQuery) {
	verb, id, _ := strings.Cut(q.Data, ":")
	owner, ok := c.approver()
	if verb != approveVerb && verb != denyVerb {
		c.answerPress(q, func(context.Context) string { return "" })
		return
	}
	if !ok || q.From.ID != owner {
		c.log.Warn("approval button pressed by someone else", "user_id", q.From.ID)
		c.answerPress(q, func(context.Context) string { return "Only the owner can answer this." })
		return
	}
	c.answerPress(q, func(ctx context.Context) string {
		m := q.Message.Message
		if m == nil || m.Chat.ID != owner || !c.approvals.resolve(ctx, id, m.ID, verb == approveVerb) {
			return "This request is no longer waiting."
		}
		if verb == denyVerb {
			return "Denied"
		}
		return "Approved"
	})
}

// answerPress answers the press with what decide returns, in the
// background: intake goes on meanwhile.
func (c *Channel) answerPress(q *models.CallbackQuery, decide func(ctx context.Context) string) {
	c.bg.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
		defer cancel()
		text := decide(ctx)
		if _, err := c.bot.AnswerCallbackQuery(ctx, &bot.AnswerCallbackQueryParams{CallbackQueryID: q.ID, Text: text}); err != nil {
			c.log.Debug("answer button press", "err", c.scrub(err))
		}
	})
}

// utf16Len is the length of s as Telegram counts it.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r > 0xffff {
			n++
		}
	}
	return n
}
