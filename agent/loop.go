package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Config holds the loop's limits and prompts. It can be replaced while the
// daemon runs (Reconfigure); a running turn keeps the one it started with.
type Config struct {
	MaxIterations    int
	ReflectionPrompt string
	SystemPrompt     string // extra instructions appended to the built-in prompt
	Workspace        string
	TurnTimeout      time.Duration
	MaxToolOutput    int // characters kept of a tool result (head and tail)
	ContextTokens    int // the budget of one request
	ReserveTokens    int // kept free for the model's answer
	HistoryLimit     int // messages read from the session per turn
	// ToolStopGrace is how long the loop still waits for a running tool
	// once the turn's deadline has passed or the turn was stopped; a tool
	// that has not returned by then is left behind.
	ToolStopGrace time.Duration
}

func (c Config) withDefaults() Config {
	if c.MaxIterations <= 0 {
		c.MaxIterations = 20
	}
	if c.TurnTimeout <= 0 {
		c.TurnTimeout = 10 * time.Minute
	}
	if c.MaxToolOutput <= 0 {
		c.MaxToolOutput = 10000
	}
	if c.ContextTokens <= 0 {
		c.ContextTokens = 32000
	}
	if c.HistoryLimit <= 0 {
		c.HistoryLimit = 200
	}
	if c.ToolStopGrace <= 0 {
		// Longer than the 2s a killed command gets to close its output, so
		// that exec still reports what it was stopped with.
		c.ToolStopGrace = 5 * time.Second
	}
	return c
}

// MemorySource gives the long-term memory document for a turn.
type MemorySource interface {
	Memory(ctx context.Context, t Turn) (string, error)
}

// Hooks observe the loop for metrics, usage accounting and the audit trail.
// All are optional and must be quick.
type Hooks struct {
	ModelCall func(ctx context.Context, t Turn, d time.Duration, u Usage, err error)
	ToolCall  func(ctx context.Context, ev ToolEvent)
	// LeftOut is told that the endpoint refused a session's history and
	// accepted the turn without it: the messages before the given time are
	// left out of the session's requests from now on (the consolidator
	// folds them into memory, so the session's window no longer holds
	// them after a restart either).
	LeftOut func(ctx context.Context, t Turn, before time.Time)
}

// Result is the outcome of a turn.
type Result struct {
	Text       string
	Iterations int // model calls with tools offered
	ToolCalls  int
	Steered    int // messages the chat sent during the turn that it read
	Stop       StopReason
	Usage      Usage
	// Quiet reports that the answer was not sent: it repeats what a tool
	// already delivered to the chat in this turn, or says there is nothing
	// to report (Turn.NothingToReport).
	Quiet bool
}

// StopReason says why a turn ended.
type StopReason string

// Stop reasons.
const (
	StopAnswered StopReason = "answered"       // the model gave a final answer
	StopLimit    StopReason = "max_iterations" // wrapped up after max_iterations
	StopLoop     StopReason = "loop"           // the same call and result repeated
	StopTimeout  StopReason = "timeout"        // the turn deadline passed
	StopFailed   StopReason = "failed"         // the model could not be reached
)

// Loop is nanobot's single-level ReAct loop.
type Loop struct {
	history History
	memory  MemorySource
	hooks   Hooks
	logger  *slog.Logger
	now     func() time.Time
	redact  func(string) string

	workspace PromptSource // nil: no prompt files or skills
	cutWarned warnOnce

	mu    sync.RWMutex
	setup setup
	// window is the context budget that worked after the endpoint refused
	// a request as too large (0: the configured one works).
	window atomic.Int64
	// leftOut maps a session to the time before which its messages are
	// left out of requests, because the endpoint refused them.
	leftOut sync.Map
}

type setup struct {
	provider Provider
	tools    map[string]Tool
	specs    []ToolSpec
	cfg      Config
}

// Option configures a Loop.
type Option func(*Loop)

// WithMemory injects long-term memory into every system prompt.
func WithMemory(m MemorySource) Option { return func(l *Loop) { l.memory = m } }

// WithHooks sets observers.
func WithHooks(h Hooks) Option { return func(l *Loop) { l.hooks = h } }

// WithLogger sets the logger.
func WithLogger(lg *slog.Logger) Option { return func(l *Loop) { l.logger = lg } }

// WithClock sets the clock used in prompts and timestamps.
func WithClock(now func() time.Time) Option { return func(l *Loop) { l.now = now } }

// WithRedactor removes secrets from tool results before anyone sees them.
func WithRedactor(r func(string) string) Option { return func(l *Loop) { l.redact = r } }

// New returns a loop over the given provider, history and tools.
func New(p Provider, h History, tools []Tool, cfg Config, opts ...Option) *Loop {
	l := &Loop{history: h, logger: slog.New(slog.DiscardHandler), now: time.Now, redact: func(s string) string { return s }}
	for _, o := range opts {
		o(l)
	}
	l.Reconfigure(p, tools, cfg)
	return l
}

// Reconfigure swaps the provider, tools and limits for turns that start
// from now on.
func (l *Loop) Reconfigure(p Provider, tools []Tool, cfg Config) {
	s := setup{provider: p, tools: make(map[string]Tool, len(tools)), cfg: cfg.withDefaults()}
	for _, t := range tools {
		spec := t.Spec()
		s.tools[spec.Name] = t
		s.specs = append(s.specs, spec)
	}
	l.mu.Lock()
	l.setup = s
	l.mu.Unlock()
	l.window.Store(0)
}

func (l *Loop) current() setup {
	l.mu.RLock()
	s := l.setup
	l.mu.RUnlock()
	if w := int(l.window.Load()); w > 0 && w < s.cfg.ContextTokens {
		s.cfg.ContextTokens = w
	}
	return s
}

// Run answers one user message: it calls the model and its tools until
// there is an answer or a limit is reached. The message is recorded with
// the model's first reply, in one write. When the model cannot be reached,
// Result.Text still holds an honest sentence for the user and the error
// says why.
func (l *Loop) Run(ctx context.Context, t Turn, in Message) (Result, error) {
	in.Role = RoleUser
	if in.CreatedAt.IsZero() {
		in.CreatedAt = l.now()
	}
	return l.continueTurn(ctx, t, []Message{in}, nil)
}

// Resume finishes a turn that a crash interrupted, from what its records
// hold. It never re-runs a tool call: calls without a recorded result are
// closed with an error result.
func (l *Loop) Resume(ctx context.Context, t Turn) (Result, error) {
	s := l.current()
	msgs, err := l.history.Recent(ctx, t.Session, s.cfg.HistoryLimit)
	if err != nil {
		return Result{}, fmt.Errorf("read session: %w", err)
	}
	repair, events := interrupted(t, keepCallsTogether(msgs), l.now())
	for i := range events {
		events[i].Args = l.redact(events[i].Args)
	}
	return l.continueTurn(ctx, t, repair, events)
}

// interrupted returns results for the tool calls of the last assistant
// message that have none, with their audit events. The calls ran, or some
// of them did: their results were to be recorded with the next reply.
func interrupted(t Turn, msgs []Message, now time.Time) ([]Message, []ToolEvent) {
	last := -1
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == RoleAssistant {
			last = i
			break
		}
	}
	if last < 0 || len(msgs[last].ToolCalls) == 0 {
		return nil, nil
	}
	done := make(map[string]bool)
	for _, m := range msgs[last+1:] {
		if m.Role == RoleTool {
			done[m.ToolCallID] = true
		}
	}
	const text = "Error: interrupted by a restart; the call may or may not have run, and its output is lost. Check before running it again."
	var out []Message
	var events []ToolEvent
	for _, c := range msgs[last].ToolCalls {
		if done[c.ID] {
			continue
		}
		// Records written before calls were bounded may hold any size.
		c.Name, c.Arguments = cutBytes(c.Name, MaxToolNameBytes), cutBytes(c.Arguments, MaxArgsBytes)
		out = append(out, Message{Role: RoleTool, ToolCallID: c.ID, Name: c.Name, Content: text, CreatedAt: now})
		events = append(events, ToolEvent{Turn: t, Tool: c.Name, Args: c.Arguments, Result: text, Failed: true,
			Verdict: "unknown", Reason: "interrupted by a restart"})
	}
	return out, events
}

// turnState is a running turn's conversation and what of it is not yet
// recorded.
type turnState struct {
	msgs    []Message // what the model sees: the window and the turn so far
	turn    int       // where in msgs the turn's own messages start
	pending []Message // the tail of msgs since the last record
	events  []ToolEvent
	sent    *sentLog // what tools delivered to chats
	inbox   []int64  // items of steered messages in pending
}

func (st *turnState) add(m Message) {
	st.msgs = append(st.msgs, m)
	st.pending = append(st.pending, m)
}

// amendLast changes the newest message, which is not recorded yet.
func (st *turnState) amendLast(change func(*Message)) {
	change(&st.msgs[len(st.msgs)-1])
	change(&st.pending[len(st.pending)-1])
}

func (l *Loop) continueTurn(ctx context.Context, t Turn, pending []Message, events []ToolEvent) (Result, error) {
	s := l.current()
	ctx, cancel := context.WithTimeout(ctx, s.cfg.TurnTimeout)
	defer cancel()
	ctx, sent := withSentLog(ctx)
	log := l.logger.With("turn_id", t.ID, "session", t.Session)

	window, err := l.history.Recent(ctx, t.Session, s.cfg.HistoryLimit)
	if err != nil {
		return Result{}, fmt.Errorf("read session: %w", err)
	}
	system, err := l.systemPrompt(ctx, s, t)
	if err != nil {
		return Result{}, err
	}
	window = keepCallsTogether(window)
	turn := len(window)
	if len(pending) == 0 || pending[0].Role != RoleUser {
		turn = lastUser(window) // resumed: the turn's messages are on record
	}
	st := &turnState{msgs: append(window, pending...), turn: turn, pending: pending, events: events, sent: sent}

	var res Result
	var repeats loopDetector
	prog := progressFrom(ctx)
	for res.Iterations < s.cfg.MaxIterations {
		if res.Iterations > 0 {
			if n := l.steer(ctx, st, res.Iterations, prog); n > 0 {
				res.Steered += n
				repeats = loopDetector{} // the user has a say: no loop across it
			}
		}
		prog.tell(ProgressEvent{Kind: ProgressModel, Round: res.Iterations})
		reply, err := l.ask(ctx, s, t, system, st, s.specs, nil, &res)
		if err != nil {
			return l.failed(ctx, s, t, st, system, &res, err)
		}
		res.Iterations++
		l.add(st, reply)
		if len(reply.ToolCalls) == 0 {
			res.Text, res.Stop = reply.Content, StopAnswered
			return l.finish(ctx, t, st, res)
		}
		// The calls are on record before any of them runs.
		if err := l.commit(ctx, t, st, false); err != nil {
			return res, err
		}
		for i, r := range l.runRound(ctx, s, t, res.Iterations, reply.ToolCalls, prog) {
			call := reply.ToolCalls[i]
			res.ToolCalls++
			l.add(st, Message{Role: RoleTool, ToolCallID: call.ID, Name: call.Name, Content: r.out})
			st.events = append(st.events, r.ev)
			repeats.add(call, r.out)
		}
		if ctx.Err() != nil {
			return l.failed(ctx, s, t, st, system, &res, ctx.Err())
		}
		if repeats.looping() {
			log.Warn("tool loop detected", "tool", reply.ToolCalls[0].Name)
			return l.wrapUp(ctx, s, t, st, system, &res, StopLoop,
				"You have called the same tool with the same arguments and got the same result three times in a row, so this turn is being stopped.")
		}
		if s.cfg.ReflectionPrompt != "" {
			// After the round's last result rather than as a user message
			// of its own, which some providers refuse after tool results.
			st.amendLast(func(m *Message) { m.Content = withReflection(m.Content, s.cfg.ReflectionPrompt) })
		}
	}
	log.Info("max iterations reached", "iterations", res.Iterations)
	return l.wrapUp(ctx, s, t, st, system, &res, StopLimit,
		fmt.Sprintf("You have used all %d steps of this turn.", s.cfg.MaxIterations))
}

// add stamps m and appends it to the turn, to be recorded with the next
// commit.
func (l *Loop) add(st *turnState, m Message) {
	m.CreatedAt = l.now()
	st.add(m)
}

// commit records what the turn has not recorded yet as one write.
func (l *Loop) commit(ctx context.Context, t Turn, st *turnState, last bool) error {
	if len(st.pending) == 0 && len(st.events) == 0 && len(st.inbox) == 0 && !last {
		return nil
	}
	return l.record(ctx, t, st, Record{Last: last})
}

func (l *Loop) record(ctx context.Context, t Turn, st *turnState, r Record) error {
	r.Messages, r.Events, r.Inbox = st.pending, st.events, st.inbox
	if err := l.history.Commit(ctx, t, r); err != nil {
		return fmt.Errorf("record turn: %w", err)
	}
	st.pending, st.events, st.inbox = nil, nil, nil
	return nil
}

// commitLast records the end of the turn with res.Text as its answer,
// which is not sent again when a tool already delivered it.
func (l *Loop) commitLast(ctx context.Context, t Turn, st *turnState, res *Result) error {
	res.Quiet = (st.sent != nil && st.sent.repeats(t.ChatID, res.Text)) || saysNothing(t, res.Text)
	return l.record(ctx, t, st, Record{Last: true, Quiet: res.Quiet})
}

// keep records what an ending turn still holds, even when its context is
// gone: the user's message and the results of calls that ran stay on record.
func (l *Loop) keep(ctx context.Context, t Turn, st *turnState) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if err := l.commit(ctx, t, st, false); err != nil {
		l.logger.Error("record interrupted turn", "turn_id", t.ID, "err", err)
	}
}

// ask makes one model call over the conversation fitted to the budget, and
// extra after it when set. An endpoint whose real window is smaller than
// the budget refuses the request; then it is fitted to a smaller budget and
// sent once more, and the budget that worked is kept for the next turns
// and logged, so the owner can set agent.context_tokens to it.
func (l *Loop) ask(ctx context.Context, s setup, t Turn, system string, st *turnState, specs []ToolSpec, extra *Message, res *Result) (Message, error) {
	earlier, own := l.withoutLeftOut(t.Session, st.msgs[:st.turn]), st.msgs[st.turn:]
	msgs := stamped(inOrder(slices.Concat(earlier, own), s.cfg.ReflectionPrompt), l.now().Location())
	turn := len(msgs) - len(inOrder(own, s.cfg.ReflectionPrompt)) // what inOrder adds inside the turn is the turn's
	request := func(msgs []Message, turn int, cfg Config) Request {
		req := Request{Messages: fit(system, msgs, turn, specs, cfg), Tools: specs}
		if extra != nil {
			if req.Messages[len(req.Messages)-1].Role == RoleTool {
				// Some providers refuse a user message right after tool
				// results.
				req.Messages = append(req.Messages, Message{Role: RoleAssistant, Content: stoppedEarly})
			}
			req.Messages = append(req.Messages, *extra)
			req.NoToolCalls = true
		}
		return req
	}
	req := request(msgs, turn, s.cfg)
	reply, err := l.complete(ctx, s, t, req, res)
	if errors.Is(err, ErrRequestRefused) && turn > 0 && len(own) > 0 {
		return l.withoutHistory(ctx, s, t, request(msgs[turn:], 0, s.cfg), own[0].CreatedAt, res, err)
	}
	if !errors.Is(err, ErrContextOverflow) {
		return reply, err
	}
	smaller := s.cfg
	smaller.ContextTokens = smallerWindow(err, req, s.cfg)
	reply, err = l.complete(ctx, s, t, request(msgs, turn, smaller), res)
	if err != nil {
		return reply, err
	}
	l.window.Store(int64(smaller.ContextTokens))
	l.logger.Warn("the model's context window is smaller than agent.context_tokens; a smaller budget worked",
		"turn_id", t.ID, "context_tokens", s.cfg.ContextTokens, "worked", smaller.ContextTokens)
	return reply, nil
}

func (l *Loop) complete(ctx context.Context, s setup, t Turn, req Request, res *Result) (Message, error) {
	start := time.Now()
	resp, err := s.provider.Complete(WithTurn(ctx, t), req)
	if l.hooks.ModelCall != nil {
		l.hooks.ModelCall(ctx, t, time.Since(start), resp.Usage, err)
	}
	if err != nil {
		return Message{}, err
	}
	res.Usage = res.Usage.Add(resp.Usage)
	m := resp.Message
	var dropped int
	m.ToolCalls, dropped = boundCalls(m.ToolCalls, s.tools)
	if dropped > 0 {
		l.logger.Warn("tool calls beyond the limit of one reply dropped", "turn_id", t.ID, "dropped", dropped, "kept", MaxCallsPerReply)
	}
	m.Role = RoleAssistant
	m.Usage = resp.Usage
	m.Model = cutBytes(resp.Model, maxModelBytes) // the endpoint's word, kept per usage row
	return m, nil
}

// wrapUp makes one last call without tools so the model tells the user
// what it did and what is left.
func (l *Loop) wrapUp(ctx context.Context, s setup, t Turn, st *turnState, system string, res *Result, why StopReason, reason string) (Result, error) {
	res.Stop = why
	if err := ctx.Err(); err != nil {
		// Only the turn's own deadline earns a summary; a cancelled turn
		// (stopped by the user, or the daemon shutting down) ends here.
		if !errors.Is(err, context.DeadlineExceeded) {
			l.keep(ctx, t, st)
			return *res, fmt.Errorf("turn interrupted: %w", err)
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
	}
	ask := Message{Role: RoleUser, Content: reason + " Do not call any tools. Tell the user plainly what you have done so far, what is not done, and what they could do next."}
	// The tools are still offered, with calls ruled out: some providers
	// refuse a history with tool calls and no tools, and the request keeps
	// the prefix the provider's cache holds.
	reply, err := l.ask(ctx, s, t, system, st, s.specs, &ask, res)
	if err != nil || strings.TrimSpace(reply.Content) == "" {
		res.Text = stoppedText(why, res, s.cfg.MaxIterations)
	} else {
		res.Text = reply.Content
	}
	l.add(st, Message{Role: RoleAssistant, Content: res.Text, Usage: reply.Usage, Model: reply.Model})
	return l.finish(ctx, t, st, *res)
}

// finish writes the turn's last record. An answer that could not be
// recorded was neither kept nor queued: the turn returns no text, only the
// error, so its caller does not take it for an answer.
func (l *Loop) finish(ctx context.Context, t Turn, st *turnState, res Result) (Result, error) {
	if err := l.commitLast(ctx, t, st, &res); err != nil {
		res.Text = ""
		return res, err
	}
	return res, nil
}

// failed ends a turn whose model call failed or whose deadline passed.
func (l *Loop) failed(ctx context.Context, s setup, t Turn, st *turnState, system string, res *Result, err error) (Result, error) {
	if ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) && res.Iterations > 0 {
		return l.wrapUp(ctx, s, t, st, system, res, StopTimeout, "The time for this turn is up.")
	}
	l.keep(ctx, t, st)
	if ctx.Err() != nil {
		return *res, fmt.Errorf("turn interrupted: %w", ctx.Err())
	}
	res.Stop = StopFailed
	res.Text = unavailableText(err, res)
	return *res, fmt.Errorf("model call: %w", err)
}

func stoppedText(why StopReason, res *Result, max int) string {
	switch why {
	case StopLoop:
		return fmt.Sprintf("I stopped because I was repeating the same step without progress (%d tool calls made). The task is not finished; please rephrase or give me more details.", res.ToolCalls)
	case StopTimeout:
		return fmt.Sprintf("I ran out of time for this request after %d steps and %d tool calls. The task is not finished.", res.Iterations, res.ToolCalls)
	default:
		return fmt.Sprintf("I stopped after %d steps (the limit is %d) with %d tool calls made, and could not summarise the result. The task is not finished; ask me to continue.", res.Iterations, max, res.ToolCalls)
	}
}

func unavailableText(err error, res *Result) string {
	var ue interface{ UserMessage() string }
	reason := "the model service did not answer"
	if errors.As(err, &ue) {
		reason = ue.UserMessage()
	}
	next := "please try again later"
	if errors.Is(err, ErrRequestRefused) {
		// Trying the same again would be refused the same way; the next
		// message is sent without what was refused.
		next = "the service refuses this request as it is, so please rephrase it or check the provider settings (model, temperature)"
	}
	if res.ToolCalls > 0 {
		return fmt.Sprintf("Sorry, I could not finish: %s. I had already made %d tool calls for this request. Your message is saved; %s.", reason, res.ToolCalls, next)
	}
	return fmt.Sprintf("Sorry, I cannot answer right now: %s. Your message is saved; %s.", reason, next)
}
