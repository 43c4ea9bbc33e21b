package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/internal/lazyre"
)

// StoredMessage is a session message with its position in the store.
type StoredMessage struct {
	ID int64
	Message
}

// Consolidation is the result of folding old messages into long-term
// memory. The store applies it in one transaction.
type Consolidation struct {
	Session      string
	Scope        string
	UpToID       int64 // live messages of the session up to this id become consolidated
	HistoryEntry string
	Memory       *string // the new MEMORY document; nil keeps the old one
	At           time.Time
}

// ConsolidationStore is what consolidation needs from storage.
type ConsolidationStore interface {
	LiveMessages(ctx context.Context, session string, limit int) ([]StoredMessage, error)
	Memory(ctx context.Context, scope string) (string, error)
	Consolidate(ctx context.Context, c Consolidation) error
}

// ConsolidatorConfig sets when and how consolidation runs.
type ConsolidatorConfig struct {
	Window        int           // consolidate when more live messages than this
	ContextTokens int           // or when they would not fit this budget
	MaxChars      int           // MEMORY above this size is asked to be condensed
	Attempts      int           // tries before the user is told
	Backoff       time.Duration // wait before the second try; doubled after
	// Scope maps a session to its memory scope.
	Scope func(session string) string
	// Notify tells the chat of a session something, once per failure streak.
	Notify func(ctx context.Context, session, text string)
	// Notices, when set, remembers across restarts that a chat was told, so
	// a restart does not tell it again.
	Notices NoticeStore
	// Provider returns the provider to use now (it follows config reloads).
	Provider func() Provider
}

// NoticeStore remembers what a chat was told once.
type NoticeStore interface {
	// ClaimNotice reports whether the notice may be given now (not given
	// within period; 0: ever) and records it if so.
	ClaimNotice(ctx context.Context, key string, period time.Duration) (bool, error)
	// ForgetNotice lets it be given again.
	ForgetNotice(ctx context.Context, key string) error
}

// Consolidator moves the oldest part of long sessions into MEMORY and
// HISTORY in the background, one session at a time each.
type Consolidator struct {
	store  ConsolidationStore
	cfg    ConsolidatorConfig
	logger *slog.Logger
	now    func() time.Time
	hook   func(outcome string)

	mu      sync.Mutex
	running map[string]chan struct{}
	told    map[string]bool
	clean   map[string]bool      // sessions with no notice on record since this process started
	failed  map[string]time.Time // when a session's last streak of attempts failed
	closing chan struct{}        // closed when Close starts: no new work, no more waiting
	stop    chan struct{}        // closed when the grace period is over: cancel what runs
	closed  bool
	wg      sync.WaitGroup
}

// NewConsolidator returns a consolidator. hook, if set, is told the outcome
// of each consolidation ("ok", "failed").
func NewConsolidator(store ConsolidationStore, cfg ConsolidatorConfig, logger *slog.Logger, hook func(outcome string)) *Consolidator {
	if cfg.Window <= 0 {
		cfg.Window = 50
	}
	if cfg.Attempts <= 0 {
		cfg.Attempts = 3
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = 2 * time.Second
	}
	if cfg.Scope == nil {
		cfg.Scope = func(string) string { return "global" }
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Consolidator{store: store, cfg: cfg, logger: logger, now: time.Now, hook: hook,
		running: make(map[string]chan struct{}), told: make(map[string]bool), clean: make(map[string]bool), failed: make(map[string]time.Time),
		closing: make(chan struct{}), stop: make(chan struct{})}
}

// SetLimits changes the window and budget for later checks.
func (c *Consolidator) SetLimits(window, contextTokens, maxChars int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if window > 0 {
		c.cfg.Window = window
	}
	c.cfg.ContextTokens = contextTokens
	c.cfg.MaxChars = maxChars
}

// cooldown is how long a session whose consolidation failed waits before
// the next turn tries again, so a model that cannot call save_memory does
// not cost a failed call on every turn.
const cooldown = 10 * time.Minute

// Check starts a background consolidation of the session if it has grown
// past the window or the context budget. It returns at once.
func (c *Consolidator) Check(ctx context.Context, session string) {
	c.mu.Lock()
	_, busy := c.running[session]
	cooling := c.now().Sub(c.failed[session]) < cooldown
	window, budget := c.cfg.Window, c.cfg.ContextTokens
	c.mu.Unlock()
	if busy || cooling {
		return
	}
	// Reading one message past the window is enough to decide: more than
	// that is over the window whatever their size.
	msgs, err := c.store.LiveMessages(ctx, session, window+1)
	if err != nil {
		c.logger.Error("consolidation check", "session", session, "err", err)
		return
	}
	tokens := 0
	for _, m := range msgs {
		tokens += EstimateTokens(m.Message)
	}
	if len(msgs) <= window && (budget <= 0 || tokens <= budget*3/4) {
		return
	}
	if len(msgs) > window {
		// Over the window: the cut is counted from the newest message.
		if msgs, err = c.store.LiveMessages(ctx, session, 0); err != nil {
			c.logger.Error("consolidation check", "session", session, "err", err)
			return
		}
	}
	upTo := cutPoint(msgs, window/2, budget/2)
	if upTo == 0 {
		return
	}
	c.start(session, func(ctx context.Context) error { return c.withRetries(ctx, session, upTo) })
}

// Fold consolidates, in the background, the session's live messages from
// before the given time: the loop left them out of its requests because
// the endpoint refused them, and folding them into memory keeps what they
// said while taking them out of the session's window for good. While a
// consolidation of the session runs, it does nothing: the next refusal
// asks again.
func (c *Consolidator) Fold(session string, before time.Time) {
	c.start(session, func(ctx context.Context) error {
		msgs, err := c.store.LiveMessages(ctx, session, 0)
		if err != nil {
			return fmt.Errorf("read session: %w", err)
		}
		var upTo int64
		for i, m := range msgs {
			if !m.CreatedAt.Before(before) {
				break
			}
			// The rest still starts at a user message (the turn that
			// was refused may not be on record yet).
			if i+1 == len(msgs) || msgs[i+1].Role == RoleUser {
				upTo = m.ID
			}
		}
		if upTo == 0 {
			return nil
		}
		return c.withRetries(ctx, session, upTo)
	})
}

// Flush consolidates everything live in the session now, after any
// background run for it has finished. /new calls it before starting over.
func (c *Consolidator) Flush(ctx context.Context, session string) error {
	c.waitFor(ctx, session)
	msgs, err := c.store.LiveMessages(ctx, session, 0)
	if err != nil {
		return fmt.Errorf("read session: %w", err)
	}
	return c.consolidateAll(ctx, session, msgs)
}

// consolidateAll folds msgs into memory in chunks that each fit one
// request, oldest first.
func (c *Consolidator) consolidateAll(ctx context.Context, session string, msgs []StoredMessage) error {
	c.mu.Lock()
	budget := c.cfg.ContextTokens
	c.mu.Unlock()
	for len(msgs) > 0 {
		part := chunk(msgs, budget/2)
		err := c.consolidate(ctx, session, part)
		c.observe(err)
		if err != nil {
			return err
		}
		msgs = msgs[len(part):]
	}
	return nil
}

// chunk returns the oldest messages whose transcript fits maxTokens,
// ending just before a user message; a single turn larger than that is
// taken whole (its lines are truncated in the transcript).
func chunk(msgs []StoredMessage, maxTokens int) []StoredMessage {
	if maxTokens <= 0 {
		return msgs
	}
	used, end := 0, 0
	for i, m := range msgs {
		if i > 0 && m.Role == RoleUser {
			if used > maxTokens && end == 0 {
				return msgs[:i]
			}
			end = i
		}
		used += textTokens(transcriptLine(m.Message))
		if used > maxTokens && end > 0 {
			return msgs[:end]
		}
	}
	return msgs
}

// Wait returns when no background consolidation runs, retries included.
func (c *Consolidator) Wait() { c.wg.Wait() }

// Close stops background work: retries waiting for their turn are dropped
// at once, a model call under way gets up to grace to finish.
func (c *Consolidator) Close(grace time.Duration) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	close(c.closing)
	c.mu.Unlock()
	done := make(chan struct{})
	go func() { c.wg.Wait(); close(done) }()
	select {
	case <-done:
		return
	case <-time.After(grace):
	}
	close(c.stop)
	<-done
}

func (c *Consolidator) waitFor(ctx context.Context, session string) {
	c.mu.Lock()
	ch := c.running[session]
	c.mu.Unlock()
	if ch == nil {
		return
	}
	select {
	case <-ch:
	case <-ctx.Done():
	}
}

func (c *Consolidator) start(session string, work func(context.Context) error) {
	c.mu.Lock()
	if _, busy := c.running[session]; busy || c.closed {
		c.mu.Unlock()
		return
	}
	done := make(chan struct{})
	c.running[session] = done
	c.wg.Add(1)
	c.mu.Unlock()

	go func() {
		defer c.wg.Done()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			select {
			case <-c.stop:
				cancel()
			case <-done:
			}
		}()
		err := work(ctx)
		c.mu.Lock()
		delete(c.running, session)
		c.mu.Unlock()
		close(done)
		if err != nil {
			c.logger.Error("consolidation failed", "session", session, "err", err)
		}
	}()
}

func (c *Consolidator) withRetries(ctx context.Context, session string, upTo int64) error {
	wait := c.cfg.Backoff
	var err error
	for attempt := 1; attempt <= c.cfg.Attempts; attempt++ {
		var msgs []StoredMessage
		msgs, err = c.store.LiveMessages(ctx, session, 0)
		if err == nil {
			err = c.consolidateAll(ctx, session, upToID(msgs, upTo))
		}
		if err == nil {
			c.mu.Lock()
			told := c.told[session]
			delete(c.told, session)
			delete(c.failed, session)
			c.mu.Unlock()
			c.recovered(ctx, session, told)
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
		c.logger.Warn("consolidation attempt failed", "session", session, "attempt", attempt, "err", err)
		if attempt < c.cfg.Attempts {
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return err
			case <-c.closing:
				return err
			}
			wait *= 2
		}
	}
	c.mu.Lock()
	first := !c.told[session]
	c.told[session] = true
	delete(c.clean, session)
	c.failed[session] = c.now()
	c.mu.Unlock()
	if first && c.cfg.Notices != nil {
		// Told before a restart, in this streak: not again.
		ok, nerr := c.cfg.Notices.ClaimNotice(context.WithoutCancel(ctx), noticeKey(session), 0)
		if nerr != nil {
			c.logger.Error("record memory failure notice", "session", session, "err", nerr)
		}
		first = ok
	}
	if first && c.cfg.Notify != nil {
		c.cfg.Notify(ctx, session, fmt.Sprintf("I could not update my long-term memory after %d attempts (%s). Nothing is lost: the conversation is kept and I will try again later.", c.cfg.Attempts, shortError(err)))
	}
	return err
}

func noticeKey(session string) string { return "memory.failing:" + session }

// recovered ends a failure streak: the next one is told again. told says
// this process told it; after a restart only the store knows.
func (c *Consolidator) recovered(ctx context.Context, session string, told bool) {
	if c.cfg.Notices == nil {
		return
	}
	c.mu.Lock()
	known := c.clean[session]
	c.clean[session] = true
	c.mu.Unlock()
	if known && !told {
		return // nothing on record since the last success
	}
	if err := c.cfg.Notices.ForgetNotice(context.WithoutCancel(ctx), noticeKey(session)); err != nil {
		c.logger.Error("forget memory failure notice", "session", session, "err", err)
	}
}

func (c *Consolidator) observe(err error) {
	if c.hook == nil {
		return
	}
	if err != nil {
		c.hook("failed")
		return
	}
	c.hook("ok")
}

func upToID(msgs []StoredMessage, upTo int64) []StoredMessage {
	n := 0
	for n < len(msgs) && msgs[n].ID <= upTo {
		n++
	}
	return msgs[:n]
}

// cutPoint chooses how much of a session to consolidate: everything but
// the newest keep messages (and at most keepTokens of them), ending just
// before a user message so the rest still starts at one. 0 means no cut.
func cutPoint(msgs []StoredMessage, keep, keepTokens int) int64 {
	k := len(msgs) - keep
	if keepTokens > 0 {
		tokens := 0
		for i := len(msgs) - 1; i >= 0 && i >= k; i-- {
			tokens += EstimateTokens(msgs[i].Message)
			if tokens > keepTokens {
				k = i + 1
				break
			}
		}
	}
	if k >= len(msgs) {
		k = len(msgs) - 1
	}
	for ; k > 0; k-- {
		if msgs[k].Role == RoleUser {
			return msgs[k-1].ID
		}
	}
	return 0
}

const consolidationPrompt = `You maintain the long-term memory of a personal assistant. You receive the current MEMORY document and a part of a conversation that is about to leave the assistant's context. Call save_memory exactly once with:
- history_entry: 2-5 sentences starting with "[YYYY-MM-DD HH:MM]" that summarise what happened in this part of the conversation, with the details someone would search for later (names, places, decisions, file names).
- memory_update: the full updated MEMORY document in Markdown: durable facts about the user, their preferences, projects and standing instructions. Keep everything still true from the current document, add new facts, remove what is no longer true. If nothing changed, return the current document unchanged.`

var savedStamp = lazyre.New(`^\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}\]`)

func (c *Consolidator) consolidate(ctx context.Context, session string, msgs []StoredMessage) error {
	if len(msgs) == 0 {
		return nil
	}
	if c.cfg.Provider == nil {
		return errors.New("no model configured")
	}
	scope := c.cfg.Scope(session)
	current, err := c.store.Memory(ctx, scope)
	if err != nil {
		return fmt.Errorf("load memory: %w", err)
	}
	c.mu.Lock()
	maxChars := c.cfg.MaxChars
	c.mu.Unlock()

	var b strings.Builder
	b.WriteString("## Current MEMORY\n")
	if strings.TrimSpace(current) == "" {
		b.WriteString("(empty)\n")
	} else {
		b.WriteString(current + "\n")
	}
	if maxChars > 0 && len([]rune(current)) > maxChars {
		fmt.Fprintf(&b, "\nThe MEMORY document is %d characters, over its limit of %d: condense it in memory_update, keeping the most important facts.\n", len([]rune(current)), maxChars)
	}
	b.WriteString("\n## Conversation to fold into memory\n")
	for _, m := range msgs {
		b.WriteString(transcriptLine(m.Message))
	}

	req := Request{
		Messages: []Message{
			{Role: RoleSystem, Content: consolidationPrompt},
			{Role: RoleUser, Content: b.String()},
		},
		Tools:     []ToolSpec{saveMemorySpec},
		ForceTool: saveMemorySpec.Name,
	}
	// The session rides along so the provider can account for the call.
	resp, err := c.cfg.Provider().Complete(WithTurn(ctx, Turn{ID: "consolidation", Session: session}), req)
	if err != nil {
		return fmt.Errorf("consolidation call: %w", err)
	}
	var args struct {
		HistoryEntry string `json:"history_entry"`
		MemoryUpdate string `json:"memory_update"`
	}
	found := false
	for _, call := range resp.Message.ToolCalls {
		if call.Name == saveMemorySpec.Name {
			if err := json.Unmarshal([]byte(call.Arguments), &args); err != nil {
				return fmt.Errorf("consolidation reply: save_memory arguments are not valid JSON: %w", err)
			}
			found = true
			break
		}
	}
	if !found {
		return errors.New("consolidation reply did not call save_memory")
	}
	if strings.TrimSpace(args.HistoryEntry) == "" && strings.TrimSpace(args.MemoryUpdate) == "" {
		return errors.New("consolidation reply: save_memory was called without content")
	}
	now := c.now()
	entry := strings.TrimSpace(args.HistoryEntry)
	if entry != "" && !savedStamp.MatchString(entry) {
		entry = "[" + now.Format("2006-01-02 15:04") + "] " + entry
	}
	cons := Consolidation{Session: session, Scope: scope, UpToID: msgs[len(msgs)-1].ID, HistoryEntry: entry, At: now}
	if doc := strings.TrimSpace(args.MemoryUpdate); doc != "" {
		cons.Memory = &doc
	}
	if err := c.store.Consolidate(ctx, cons); err != nil {
		return fmt.Errorf("save consolidation: %w", err)
	}
	c.logger.Info("session consolidated", "session", session, "messages", len(msgs), "memory_chars", len([]rune(args.MemoryUpdate)))
	return nil
}

func transcriptLine(m Message) string {
	at := m.CreatedAt.Format("2006-01-02 15:04")
	switch {
	case m.Role == RoleTool:
		return fmt.Sprintf("[%s] TOOL %s: %s\n", at, m.Name, Truncate(m.Content, 500))
	case len(m.ToolCalls) > 0:
		names := make([]string, len(m.ToolCalls))
		for i, c := range m.ToolCalls {
			names[i] = c.Name + " " + Truncate(c.Arguments, 200)
		}
		return fmt.Sprintf("[%s] ASSISTANT (calls %s) %s\n", at, strings.Join(names, "; "), Truncate(m.Content, 2000))
	default:
		return fmt.Sprintf("[%s] %s: %s\n", at, strings.ToUpper(string(m.Role)), Truncate(m.Content, 2000))
	}
}

func shortError(err error) string {
	var ue interface{ UserMessage() string }
	if errors.As(err, &ue) {
		return ue.UserMessage()
	}
	return Truncate(err.Error(), 200)
}

var saveMemorySpec = ToolSpec{
	Name:        "save_memory",
	Description: "Save to long-term memory: append a dated HISTORY entry and/or replace the MEMORY document.",
	Parameters: json.RawMessage(`{"type":"object","properties":{` +
		`"history_entry":{"type":"string","description":"2-5 sentences starting with [YYYY-MM-DD HH:MM]"},` +
		`"memory_update":{"type":"string","description":"the full updated MEMORY document in Markdown"}},` +
		`"additionalProperties":false}`),
}
