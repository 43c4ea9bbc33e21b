// Package agent is the domain of nanobot: messages, tools, the model
// provider contract and the single-level ReAct loop that ties them together.
// It imports no other package of this module and knows nothing of Telegram,
// SQLite or any particular model API.
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"time"
)

// Role is the author of a message in a conversation.
type Role string

// The roles of the chat-completion protocol.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// ToolCall is one function call the model asked for.
type ToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Arguments is the JSON text exactly as the model wrote it; it may be invalid.
	Arguments string `json:"arguments"`
	// Extra holds the provider's own fields of the call (a JSON object,
	// e.g. Gemini's extra_content with its thought signature), kept
	// verbatim and sent back with the call. Empty: none.
	Extra json.RawMessage `json:"extra,omitempty"`
}

// Usage counts the tokens of one model call.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	// CachedTokens is the part of PromptTokens the provider served from
	// its prompt cache (billed at a discount); 0 when it did not say.
	CachedTokens int `json:"cached_tokens,omitempty"`
}

// Total is prompt plus completion tokens.
func (u Usage) Total() int { return u.PromptTokens + u.CompletionTokens }

// Add returns the sum of two usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{u.PromptTokens + o.PromptTokens, u.CompletionTokens + o.CompletionTokens, u.CachedTokens + o.CachedTokens}
}

// Message is one entry of a conversation.
type Message struct {
	Role    Role
	Content string
	// Images are data: URLs sent to vision-capable models with a user message.
	Images []string
	// ToolCalls are set on assistant messages that ask for tools.
	ToolCalls []ToolCall
	// ToolCallID and Name are set on tool results.
	ToolCallID string
	Name       string
	CreatedAt  time.Time
	// Usage is set on assistant messages: what the call that produced it
	// cost, and Model which model wrote it.
	Usage Usage
	Model string
	// Extra, on an assistant message, holds the provider's own fields of
	// the message besides role, content and tool calls (a JSON object: the
	// reasoning of DeepSeek, Kimi and vLLM, OpenRouter's reasoning
	// details...). It is stored with the message and sent back as it came
	// where the provider needs it, and never shown to anyone.
	Extra json.RawMessage
}

// ToolSpec describes a tool to the model.
type ToolSpec struct {
	Name        string
	Description string
	// Parameters is a JSON Schema object.
	Parameters json.RawMessage
}

// Request is one chat completion request.
type Request struct {
	Messages []Message
	Tools    []ToolSpec
	// ForceTool, when set, names the tool the model must call.
	ForceTool string
	// NoToolCalls asks for an answer without tool calls, with Tools still
	// offered (tool_choice "none").
	NoToolCalls bool
}

// Response is the model's reply to a Request.
type Response struct {
	Message Message
	Usage   Usage
	// Model is the model that answered (a provider with fallbacks may
	// answer with another than the configured one).
	Model string
}

// ErrContextOverflow is matched (errors.Is) by a Provider's error when the
// endpoint refused a request as larger than its context window. When the
// endpoint said how large its window is, the error also has a method
// ContextLimit() int returning it.
var ErrContextOverflow = errors.New("the request is larger than the model's context window")

// ErrRequestRefused is matched (errors.Is) by a Provider's error when the
// endpoint refused the request as it is (HTTP 400, 422...), so that sending
// it again cannot help: something in the conversation is not acceptable
// to it.
var ErrRequestRefused = errors.New("the model service refused the request")

// Provider sends one non-streaming chat completion to a model.
type Provider interface {
	Complete(ctx context.Context, req Request) (Response, error)
}

// Tool is something the model can call. A failure the model should see is
// returned as an error and becomes an "Error: ..." result; it never ends the
// turn.
type Tool interface {
	Spec() ToolSpec
	Run(ctx context.Context, args json.RawMessage) (string, error)
}

// ReadOnlyTool is a Tool that says whether its calls leave everything as
// it was (read a file, fetch a page). The read-only calls of one reply run
// in parallel; a tool that does not implement it is taken to have side
// effects, and its calls run one at a time, in order.
type ReadOnlyTool interface {
	Tool
	ReadOnly() bool
}

// History stores the messages of sessions.
type History interface {
	// Recent returns at most limit of the session's newest live messages,
	// oldest first, starting at a user message.
	Recent(ctx context.Context, session string, limit int) ([]Message, error)
	// Commit makes one record of turn t durable, all of it or nothing.
	Commit(ctx context.Context, t Turn, r Record) error
}

// Record is what one durable write of a turn holds: the messages since the
// previous record and the audit events of the tool calls they close.
//
// A turn writes a record before it runs tools (so a restart never runs a
// call again) and one when it ends (Last). Its first record starts with the
// user message: a History links the turn's Inbox to that message, and the
// Last record closes the Inbox and queues the answer in the same write, so
// after a crash the inbound items say exactly how far their turn got.
type Record struct {
	Messages []Message
	Events   []ToolEvent
	// Last marks the turn's final record; its last message, when it is an
	// assistant message without tool calls, is the answer.
	Last bool
	// Quiet marks a Last record whose answer is not to be sent: a tool
	// already delivered it to the chat during the turn (or the answer is
	// empty and a tool delivered something), or it is the turn's
	// NothingToReport.
	Quiet bool
	// Inbox lists inbound items the record takes into the running turn:
	// messages its chat sent while it ran, handed to it (Steer) and
	// recorded as user messages in this record. They are closed with the
	// turn's own items.
	Inbox []int64
}

// Answer returns the answer a Last record carries ("" when none).
func (r Record) Answer() string {
	if !r.Last || len(r.Messages) == 0 {
		return ""
	}
	m := r.Messages[len(r.Messages)-1]
	if m.Role != RoleAssistant || len(m.ToolCalls) > 0 {
		return ""
	}
	return m.Content
}

// Turn identifies one run of the loop: who asked, in which conversation.
type Turn struct {
	ID      string // unique per turn; appears on every log line of the turn
	Session string // "channel:chat_id"
	Channel string // "telegram", "cli"
	ChatID  string
	// SenderID and SenderName identify the person who wrote the message.
	SenderID   string
	SenderName string
	// Inbox lists the channel's inbound records this turn answers (none for
	// a terminal chat), and ReplyTo the channel's id of the message the
	// answer replies to (0: none).
	Inbox   []int64
	ReplyTo int64
	// Mirror names a session that also records the delivered answer as
	// an assistant message, in the write that queues it: the answer of a
	// turn the daemon started on its own (a scheduled job) then reads as
	// part of the chat's conversation. Empty: none.
	Mirror string
	// Fallback is delivered instead of an empty answer, so a turn that
	// must say something (a reminder) never ends in silence.
	Fallback string
	// NothingToReport is an answer that means there is nothing worth
	// sending (a heartbeat's): an answer that starts or ends with it is
	// recorded but not sent.
	NothingToReport string
}

type turnKey struct{}

// WithTurn returns a context that carries t, for tools that need to know
// which chat they serve.
func WithTurn(ctx context.Context, t Turn) context.Context {
	return context.WithValue(ctx, turnKey{}, t)
}

// TurnFrom returns the turn carried by ctx.
func TurnFrom(ctx context.Context) (Turn, bool) {
	t, ok := ctx.Value(turnKey{}).(Turn)
	return t, ok
}

// ToolEvent is the record of one tool call, for the audit trail. The loop
// fills in the call; tools that judge or run something (exec) add what they
// decided through EventFrom.
type ToolEvent struct {
	Turn     Turn
	Tool     string
	Args     string
	Result   string
	Failed   bool
	Duration time.Duration
	// Unknown is set when no tool has the name the model called: Tool is
	// then the model's invention (cut to MaxToolNameBytes), not a name
	// to count or group by.
	Unknown bool
	// Set by tools that apply a policy.
	Verdict  string // "allow" | "ask" | "deny"
	Category string
	Reason   string
	Approver string
	// Approval is what came of asking about the call: ApprovalApproved,
	// ApprovalDenied, ApprovalTimedOut or ApprovalFailed; "" when nobody
	// was asked.
	Approval string
	ExitCode int
}

// The outcomes of asking about a tool call (ToolEvent.Approval).
const (
	ApprovalApproved = "approved"
	ApprovalDenied   = "denied"
	ApprovalTimedOut = "timed out"
	ApprovalFailed   = "not asked" // asking failed, or the turn ended while waiting
)

type sentKey struct{}

// sentLog is what tools delivered to chats during one turn.
type sentLog struct {
	mu    sync.Mutex
	texts map[string][]string // by chat id
}

// withSentLog returns a context in which NoteSent records for the turn.
func withSentLog(ctx context.Context) (context.Context, *sentLog) {
	l := &sentLog{texts: map[string][]string{}}
	return context.WithValue(ctx, sentKey{}, l), l
}

// NoteSent records that a tool delivered text to chat during the running
// turn, so an answer that repeats it is not sent again.
func NoteSent(ctx context.Context, chat, text string) {
	l, ok := ctx.Value(sentKey{}).(*sentLog)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.texts[chat] = append(l.texts[chat], normalizeText(text))
}

// repeats reports whether answer adds nothing to what tools sent to chat:
// it is empty and something was sent, or it is the same as (or part of)
// one of the sent texts.
func (l *sentLog) repeats(chat, answer string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	sent := l.texts[chat]
	if len(sent) == 0 {
		return false
	}
	a := normalizeText(answer)
	if a == "" {
		return true
	}
	for _, s := range sent {
		if strings.Contains(s, a) {
			return true
		}
	}
	return false
}

func normalizeText(s string) string { return strings.Join(strings.Fields(s), " ") }

// saysNothing reports whether answer is the turn's nothing-to-report word,
// alone or at its start or end, markup and punctuation aside.
func saysNothing(t Turn, answer string) bool {
	if t.NothingToReport == "" {
		return false
	}
	a := strings.Trim(strings.TrimSpace(answer), "*_`.!\"' \n")
	return strings.HasPrefix(a, t.NothingToReport) || strings.HasSuffix(a, t.NothingToReport)
}

type eventKey struct{}

// WithEvent returns a context carrying ev for the tool being run.
func WithEvent(ctx context.Context, ev *ToolEvent) context.Context {
	return context.WithValue(ctx, eventKey{}, ev)
}

// EventFrom returns the audit record of the running tool call, or nil.
func EventFrom(ctx context.Context) *ToolEvent {
	ev, _ := ctx.Value(eventKey{}).(*ToolEvent)
	return ev
}
