package telegram

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"html"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/nanobot-go/nanobot/agent"
)

// ErrNoApprover reports that nobody can be asked to approve a command.
var ErrNoApprover = errors.New("no approver: set tools.exec.approver or put a numeric user id first in channels.telegram.allow_from")

const (
	approveVerb = "approve"
	denyVerb    = "deny"
)

// approvals are the requests waiting for the owner's button press.
type approvals struct {
	mu      sync.Mutex
	waiting map[string]chan bool
}

func newApprovals() *approvals { return &approvals{waiting: map[string]chan bool{}} }

func (a *approvals) register(id string) chan bool {
	ch := make(chan bool, 1)
	a.mu.Lock()
	a.waiting[id] = ch
	a.mu.Unlock()
	return ch
}

func (a *approvals) forget(id string) {
	a.mu.Lock()
	delete(a.waiting, id)
	a.mu.Unlock()
}

// resolve delivers the owner's answer; false when nothing waits for id.
func (a *approvals) resolve(id string, approved bool) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	ch, ok := a.waiting[id]
	if !ok {
		return false
	}
	delete(a.waiting, id)
	ch <- approved
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

// Approve asks the owner on Telegram whether command may run, with Approve
// and Deny buttons. Silence until the approval timeout, or ctx ending, is a
// denial. It returns the decision and who made it ("" when nobody did).
func (c *Channel) Approve(ctx context.Context, command, reason string) (bool, string, error) {
	owner, ok := c.approver()
	if !ok {
		return false, "", ErrNoApprover
	}
	t, _ := agent.TurnFrom(ctx)
	id := rand.Text()
	answer := c.approvals.register(id)
	defer c.approvals.forget(id)

	text := approvalText(t, command, reason)
	callCtx, cancel := context.WithTimeout(ctx, sendTimeout)
	m, err := c.bot.SendMessage(callCtx, &bot.SendMessageParams{
		ChatID:    owner,
		Text:      text,
		ParseMode: models.ParseModeHTML,
		ReplyMarkup: models.InlineKeyboardMarkup{InlineKeyboard: [][]models.InlineKeyboardButton{{
			{Text: "Approve", CallbackData: approveVerb + ":" + id},
			{Text: "Deny", CallbackData: denyVerb + ":" + id},
		}}},
	})
	cancel()
	if err != nil {
		return false, "", fmt.Errorf("ask for approval: %w", c.scrub(err))
	}

	timer := time.NewTimer(c.cfg.ApprovalTimeout)
	defer timer.Stop()
	var approved bool
	var outcome, who string
	select {
	case approved = <-answer:
		who = "telegram:" + strconv.FormatInt(owner, 10)
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

func approvalText(t agent.Turn, command, reason string) string {
	var b strings.Builder
	b.WriteString("<b>Approval needed</b>\n")
	if t.ChatID != "" {
		from := t.ChatID
		if t.SenderName != "" {
			from += " (" + t.SenderName + ")"
		}
		b.WriteString("Chat: " + html.EscapeString(from) + "\n")
	}
	if reason != "" {
		b.WriteString("Why it needs approval: " + html.EscapeString(reason) + "\n")
	}
	b.WriteString("Command:\n<pre>" + html.EscapeString(truncate(command, 3000)) + "</pre>")
	return b.String()
}

func truncate(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// handleCallback answers a button press. Only the approver's presses count.
func (c *Channel) handleCallback(q *models.CallbackQuery) {
	verb, id, _ := strings.Cut(q.Data, ":")
	var text string
	switch owner, ok := c.approver(); {
	case verb != approveVerb && verb != denyVerb:
	case !ok || q.From.ID != owner:
		c.log.Warn("approval button pressed by someone else", "user_id", q.From.ID)
		text = "Only the owner can answer this."
	case c.approvals.resolve(id, verb == approveVerb):
		text = "Approved"
		if verb == denyVerb {
			text = "Denied"
		}
	default:
		text = "This request is no longer waiting."
	}
	c.bg.Go(func() {
		ctx, cancel := context.WithTimeout(c.bgCtx, sendTimeout)
		defer cancel()
		if _, err := c.bot.AnswerCallbackQuery(ctx, &bot.AnswerCallbackQueryParams{CallbackQueryID: q.ID, Text: text}); err != nil {
			c.log.Debug("answer button press", "err", c.scrub(err))
		}
	})
}
