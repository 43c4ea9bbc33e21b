package daemon

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nanobot-go/nanobot/admin"
	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/mcp"
	"github.com/nanobot-go/nanobot/agent/openai"
	"github.com/nanobot-go/nanobot/agent/prompt"
	"github.com/nanobot-go/nanobot/agent/tools"
	"github.com/nanobot-go/nanobot/channels/approvals"
	"github.com/nanobot-go/nanobot/config"
	"github.com/nanobot-go/nanobot/heartbeat"
	"github.com/nanobot-go/nanobot/jobs"
	"github.com/nanobot-go/nanobot/memory"
	"github.com/nanobot-go/nanobot/memory/backup"
	"github.com/nanobot-go/nanobot/safety"
	"github.com/nanobot-go/nanobot/safety/sandbox"
	"github.com/nanobot-go/nanobot/schedule"
	"github.com/nanobot-go/nanobot/session"
	"github.com/nanobot-go/nanobot/turns"
	"github.com/nanobot-go/nanobot/turns/budget"
)

// daemon is everything a conversation needs, built from one config.
type Daemon struct {
	logger  *slog.Logger
	level   *slog.LevelVar
	store   *memory.Store
	loop    *agent.Loop
	cons    *agent.Consolidator
	metrics *admin.Metrics   // nil outside the gateway
	secrets *Redactor        // shared with the logger
	prompts *prompt.Source   // the workspace's prompt files and skills
	mcp     *mcp.Manager     // the MCP servers and their tools
	reconf  sync.Mutex       // one rebuild of the loop's tools at a time
	boxes   *sandboxes       // the exec tool's sandbox
	now     func() time.Time // the daemon's clock: messages, usage, today's budget
	clock   schedule.Clock   // the same clock, for scheduled work

	turns     *turns.Engine    // every turn of this process waits in its chat's queue here
	budget    *budget.Budget   // agent.daily_token_budget, per chat
	bell      *turns.Bell      // rung when a reply was queued for a channel
	approvals approvals.Broker // the exec tool asks; the gateway's channel serves it
	pro       *proactive       // the gateway's background work; nil elsewhere
	serving   bool             // a gateway: notices go to the owner's chat

	mu       sync.RWMutex
	cfg      *config.Config
	provider *openai.Provider // the configured endpoint (transcription)
	chain    *openai.Chain    // it and its fallbacks (chat completions)
	backups  *backup.Schedule // nil when storage.backup is off, and outside the gateway

	health   dbHealth     // the database's last quick_check
	rejected rejectedEdit // the last edit of config.yaml refused
}

// Options are what a daemon is built with besides its config.
type Options struct {
	Logger  *slog.Logger
	Level   *slog.LevelVar
	Secrets *Redactor
	Metrics *admin.Metrics // nil outside the gateway
	ABI     int            // the kernel's Landlock ABI
	Clock   schedule.Clock // the daemon's clock
	// Gateway builds the background work (jobs, heartbeat, tasks, the
	// message tool) and sends notices to the owner's chat.
	Gateway bool
	Version string // the program's, for MCP servers
}

// New opens the store and builds everything a turn needs, top
// down: the turn engine and its bell, the providers, the background work,
// the tools, the loop, the consolidator.
func New(ctx context.Context, cfg *config.Config, opt Options) (*Daemon, error) {
	if err := os.MkdirAll(cfg.Agent.Workspace, 0o755); err != nil {
		return nil, fmt.Errorf("create workspace: %w", err)
	}
	store, err := memory.Open(ctx, cfg.Storage.Path)
	if err != nil {
		return nil, StorageProblem(cfg, err)
	}
	logger, now, metrics := opt.Logger, opt.Clock.Now, opt.Metrics
	r := &Daemon{logger: logger, level: opt.Level, store: store, metrics: metrics, secrets: opt.Secrets, cfg: cfg,
		boxes: &sandboxes{abi: opt.ABI}, now: now, clock: opt.Clock, serving: opt.Gateway, bell: turns.NewBell()}
	r.budget = budget.New(store, r.budgetLimits, now, logger)
	r.turns = turns.New(store, r, turns.Config{MaxConcurrent: cfg.Agent.MaxConcurrent, ShutdownTimeout: cfg.Agent.ShutdownTimeout,
		Steering: cfg.Agent.Steering == config.SteeringOn},
		logger, turns.Hooks{Queue: r.observeQueue, Queued: r.bell.Ring})
	r.prompts = NewPromptSource(cfg)
	r.mcp = r.newMCP(cfg, opt.Version)
	r.provider, r.chain = r.newProviders(cfg)
	if opt.Gateway {
		if r.pro, err = newProactive(r, opt.Clock); err != nil {
			store.Close()
			return nil, err
		}
	}
	toolset, err := r.tools(cfg)
	if err != nil {
		store.Close()
		return nil, err
	}
	r.announceSandbox()
	r.loop = agent.New(r.chain, store, toolset, AgentConfig(cfg),
		agent.WithLogger(logger),
		agent.WithClock(now),
		agent.WithMemory(memorySource{r}),
		agent.WithRedactor(r.secrets.Redact),
		agent.WithHooks(agent.Hooks{ModelCall: r.observeModelCall, ToolCall: r.observeToolCall,
			LeftOut: func(_ context.Context, t agent.Turn, before time.Time) { r.cons.Fold(t.Session, before) }}),
		agent.WithPromptSource(r.prompts),
	)
	r.cons = agent.NewConsolidator(store, agent.ConsolidatorConfig{
		Window:        cfg.Memory.Window,
		ContextTokens: cfg.Agent.ContextTokens,
		MaxChars:      cfg.Memory.MaxChars,
		Scope:         r.scope,
		Notify:        r.notifyChat,
		Notices:       store,
		Provider:      func() agent.Provider { return meteredProvider{r} },
	}, logger, r.observeConsolidation)
	r.mcp.Apply(mcpServers(cfg))
	return r, nil
}

// notifyChat tells the chat of a session something that failed in the
// background, through its outbox. Outside the gateway nobody would
// deliver it: it is logged.
func (r *Daemon) notifyChat(ctx context.Context, session, text string) {
	channel, chat, ok := strings.Cut(session, ":")
	if !r.serving || !ok || channel != "telegram" {
		r.logger.Warn("a notice for a chat is only logged", "session", session, "message", text)
		return
	}
	_, err := r.store.Enqueue(ctx, turns.OutboxItem{Channel: channel, ChatID: chat, Text: text,
		State: turns.OutboxPending, CreatedAt: time.Now().UTC()})
	if err != nil {
		r.logger.Error("notify chat", "session", session, "err", err)
		return
	}
	r.bell.Ring(channel)
}

// observeQueue counts the turns waiting and running.
func (r *Daemon) observeQueue(pending, running int) {
	if r.metrics != nil {
		r.metrics.SetQueue("pending", pending)
		r.metrics.SetQueue("running", running)
	}
}

// Turns is the turn engine every turn of this process waits in.
func (r *Daemon) Turns() *turns.Engine { return r.turns }

// RunJob runs job id now, outside its schedule, in its chat's queue, and
// returns its answer, which is also queued for the chat.
func (r *Daemon) RunJob(ctx context.Context, id int64) (string, error) {
	jc, err := JobsConfig(r.Config())
	if err != nil {
		return "", err
	}
	return jobs.New(r.store, r.turns, r.clock, jc, r.logger).RunAndWait(ctx, id)
}

// Close stops the MCP servers, lets a running consolidation finish within
// grace, removes the sandbox's state and closes the store: the reverse of
// New. The turn engine is drained first by whoever ran it.
func (r *Daemon) Close(grace time.Duration) error {
	r.mcp.Close()
	r.cons.Close(grace)
	r.boxes.close()
	return r.store.Close()
}

// Config is the live config: the one loaded at start or by the last valid
// edit.
func (r *Daemon) Config() *config.Config {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.cfg
}

func (r *Daemon) currentProvider() *openai.Provider {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.provider
}

// Redactor removes the secrets of the current config; a reload swaps
// them, for the logger and the loop at once.
type Redactor struct {
	p atomic.Pointer[safety.Redactor]
}

func NewRedactor(cfg *config.Config) *Redactor {
	l := &Redactor{}
	l.set(cfg)
	return l
}

func (l *Redactor) set(cfg *config.Config) { l.p.Store(safety.NewRedactor(cfg.Secrets()...)) }

// Redact removes the secrets from s.
func (l *Redactor) Redact(s string) string { return l.p.Load().Redact(s) }

func (r *Daemon) currentChain() *openai.Chain {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.chain
}

// newProviders builds the configured endpoint and the chain of it and its
// fallbacks.
func (r *Daemon) newProviders(cfg *config.Config) (*openai.Provider, *openai.Chain) {
	primary := r.newProvider(cfg, config.Endpoint{BaseURL: cfg.Provider.BaseURL, APIKey: cfg.Provider.APIKey, Model: cfg.Provider.Model})
	var fallbacks []*openai.Provider
	for _, f := range cfg.Provider.Fallbacks {
		fallbacks = append(fallbacks, r.newProvider(cfg, f))
	}
	return primary, openai.NewChain(primary, fallbacks, cfg.Provider.FallbackCooldown, r.logger, r.metrics.ModelEndpoint)
}

func (r *Daemon) newProvider(cfg *config.Config, ep config.Endpoint) *openai.Provider {
	return openai.New(openai.Config{
		BaseURL:            ep.BaseURL,
		APIKey:             string(ep.APIKey),
		Model:              ep.Model,
		Timeout:            cfg.Provider.Timeout,
		MaxRetries:         cfg.Provider.MaxRetries,
		MaxTokens:          cfg.Provider.MaxTokens,
		Temperature:        temperature(cfg.Provider.Temperature),
		Vision:             cfg.Provider.Vision,
		TranscriptionModel: cfg.Provider.TranscriptionModel,
		Logger:             r.logger,
	})
}

// temperature is the configured sampling temperature, nil when unset.
func temperature(t *float64) *float32 {
	if t == nil {
		return nil
	}
	v := float32(*t)
	return &v
}

func AgentConfig(cfg *config.Config) agent.Config {
	return agent.Config{
		MaxIterations:    cfg.Agent.MaxIterations,
		ReflectionPrompt: cfg.Agent.ReflectionPrompt,
		SystemPrompt:     cfg.Agent.SystemPrompt,
		Workspace:        cfg.Agent.Workspace,
		TurnTimeout:      cfg.Agent.TurnTimeout,
		MaxToolOutput:    cfg.Tools.Exec.MaxOutput,
		ContextTokens:    cfg.Agent.ContextTokens,
		ReserveTokens:    min(cfg.Provider.MaxTokens, cfg.Agent.ContextTokens/4),
	}
}

// protectedPaths are the files no tool may touch: the bot's own config,
// database (with its lock and backups) and binary.
func protectedPaths(cfg *config.Config) []string {
	db := cfg.Storage.Path
	out := []string{cfg.Path, db, db + "-wal", db + "-shm", db + "-journal", memory.LockPath(db)}
	if dir := cfg.Storage.Backup.Dir; dir != "" {
		out = append(out, dir)
	}
	if exe, err := os.Executable(); err == nil {
		out = append(out, exe)
	}
	return out
}

func NewPolicy(cfg *config.Config) (*safety.Policy, error) {
	home, _ := os.UserHomeDir()
	cats := make(map[string]safety.Action, len(cfg.Tools.Exec.Categories))
	for k, v := range cfg.Tools.Exec.Categories {
		cats[k] = safety.Action(v)
	}
	p, err := safety.NewPolicy(safety.PolicyConfig{
		Workspace:  cfg.Agent.Workspace,
		Home:       home,
		Protected:  protectedPaths(cfg),
		Deny:       cfg.Tools.Exec.Deny,
		Allow:      cfg.Tools.Exec.Allow,
		Categories: cats,
		Resolver:   net.DefaultResolver,
	})
	if err != nil {
		return nil, &config.Error{File: cfg.Path, Key: "tools.exec", Problem: err.Error()}
	}
	return p, nil
}

// tools builds the tool set for cfg.
func (r *Daemon) tools(cfg *config.Config) ([]agent.Tool, error) {
	protected := protectedPaths(cfg)
	out := tools.NewFileTools(tools.Files{Workspace: cfg.Agent.Workspace, Restrict: cfg.Tools.RestrictToWorkspace, Protected: protected, Builtin: prompt.Builtin()})
	if cfg.Tools.Exec.Enabled {
		policy, err := NewPolicy(cfg)
		if err != nil {
			return nil, err
		}
		box, err := r.boxes.get(cfg)
		if err != nil {
			return nil, err
		}
		shellTool := &tools.Exec{
			Workspace:       cfg.Agent.Workspace,
			Restrict:        cfg.Tools.RestrictToWorkspace,
			Timeout:         cfg.Tools.Exec.Timeout,
			MaxOutput:       cfg.Tools.Exec.MaxOutput,
			Policy:          policy,
			Approver:        &r.approvals,
			Approval:        cfg.Tools.Exec.Approval,
			ApprovalTimeout: cfg.Tools.Exec.ApprovalTimeout,
			Secrets:         cfg.Secrets(),
			PassEnv:         cfg.Tools.Exec.Env,
			Redactor:        safety.NewRedactor(cfg.Secrets()...),
			Confinement:     confinement(box.Status()),
		}
		if box.Status().Mode != sandbox.ModeOff {
			shellTool.Sandbox = box
		}
		out = append(out, shellTool)
	}
	out = append(out, tools.NewMemoryTools(r.memoryTools(cfg))...)
	out = append(out, r.mcp.Tools()...)
	if r.pro != nil {
		out = append(out, r.pro.tools()...)
	}
	if cfg.Tools.Web.Enabled {
		guard := safety.NewURLGuard(cfg.Tools.Web.AllowPrivate)
		out = append(out, &tools.Web{Client: guard.HTTPClient(cfg.Tools.Web.Timeout), MaxBytes: int64(cfg.Tools.Web.MaxBytes)})
	}
	if cfg.SearchReady() {
		out = append(out, WebSearch(cfg))
	}
	return out, nil
}

func (r *Daemon) memoryTools(cfg *config.Config) tools.Memory {
	return tools.Memory{
		Scope: func(ctx context.Context) string {
			t, _ := agent.TurnFrom(ctx)
			return r.scope(t.Session)
		},
		Save:   r.store.SetMemory,
		Append: r.store.AppendHistory,
		Search: func(ctx context.Context, scope, query string, limit int) ([]tools.HistoryHit, error) {
			entries, err := r.store.SearchHistory(ctx, scope, query, limit)
			if err != nil {
				return nil, err
			}
			hits := make([]tools.HistoryHit, len(entries))
			for i, e := range entries {
				hits[i] = tools.HistoryHit{At: e.At, Text: e.Text}
			}
			return hits, nil
		},
		Chat:     r.transcriptChat,
		Find:     r.findMessages,
		Read:     r.readMessages,
		MaxChars: cfg.Memory.MaxChars,
	}
}

// scope is the memory scope of a session.
func (r *Daemon) scope(session string) string {
	cfg := r.Config()
	if cfg.Memory.Scope == config.ScopeChat {
		session = r.chatSession(session)
	}
	return ScopeOf(cfg, session)
}

// ScopeOf is the memory scope of a session under cfg.
func ScopeOf(cfg *config.Config, session string) string {
	if cfg.Memory.Scope == config.ScopeChat {
		return memory.ChatScope(session)
	}
	return memory.GlobalScope
}

// reconfigure applies a new config to turns that start from now on.
func (r *Daemon) reconfigure(cfg *config.Config) error {
	r.reconf.Lock()
	defer r.reconf.Unlock()
	toolset, err := r.tools(cfg)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.cfg = cfg
	r.provider, r.chain = r.newProviders(cfg)
	p := r.chain
	r.mu.Unlock()
	r.secrets.set(cfg)
	r.prompts.Configure(cfg.Agent.Workspace, cfg.Agent.PromptFileMaxChars, cfg.Tools.RestrictToWorkspace)
	r.loop.Reconfigure(p, toolset, AgentConfig(cfg))
	r.mcp.Apply(mcpServers(cfg))
	r.cons.SetLimits(cfg.Memory.Window, cfg.Agent.ContextTokens, cfg.Memory.MaxChars)
	if r.pro != nil {
		r.pro.reconfigure(cfg)
	}
	r.level.Set(parseLevel(cfg.Log.Level))
	return nil
}

// Answer runs a turn: the daily budget first, then the loop, then a
// background consolidation check. When the model cannot be reached it
// returns both an honest text for the user and the error.
func (r *Daemon) Answer(ctx context.Context, t agent.Turn, msg agent.Message, resume bool) (agent.Result, error) {
	if t.ID == "" {
		t.ID = newTurnID()
	}
	log := r.logger.With("turn_id", t.ID, "session", t.Session)
	if text, over := r.budget.Over(ctx, t.Session); over {
		log.Warn("daily token budget reached")
		r.countTurn("budget")
		return agent.Result{Text: text}, nil
	}
	start := time.Now()
	log.Info("turn started", "resume", resume)
	var res agent.Result
	var err error
	if resume {
		res, err = r.loop.Resume(ctx, t)
	} else {
		res, err = r.loop.Run(ctx, t, msg)
	}
	if err != nil {
		if res.Text != "" {
			log.Error("turn failed", "err", err, "dur", time.Since(start))
			r.countTurn("failed")
		} else {
			log.Warn("turn interrupted", "err", err, "dur", time.Since(start))
			r.countTurn("stopped")
		}
		return res, err
	}
	log.Info("turn finished", "stop", string(res.Stop), "iterations", res.Iterations, "tool_calls", res.ToolCalls,
		"prompt_tokens", res.Usage.PromptTokens, "completion_tokens", res.Usage.CompletionTokens,
		"cached_tokens", res.Usage.CachedTokens, "dur", time.Since(start))
	r.countTurn("answered")
	r.cons.Check(context.WithoutCancel(ctx), t.Session)
	return res, nil
}

// budgetLimits are the budget's settings in the live config.
func (r *Daemon) budgetLimits() budget.Limits {
	cfg := r.Config()
	l := budget.Limits{Daily: cfg.Agent.DailyTokenBudget, Heartbeat: heartbeat.Session}
	if chat := cfg.HeartbeatChat(); chat != "" {
		l.HeartbeatChat = session.Chat(heartbeatChannel, chat)
	}
	return l
}

// Reset is /new: fold the session into long-term memory, then start over.
// Its errors carry a sentence for the user.
func (r *Daemon) Reset(ctx context.Context, session string) error {
	if text, over := r.budget.Over(ctx, session); over {
		return &userError{msg: "I can't save this conversation to memory today: " + text}
	}
	if err := r.cons.Flush(ctx, session); err != nil {
		reason := "an internal error"
		var ue interface{ UserMessage() string }
		if errors.As(err, &ue) {
			reason = ue.UserMessage()
		}
		return &userError{
			msg: fmt.Sprintf("I could not save this conversation to long-term memory first (%s), so I kept it as it is. Try /new again later.", reason),
			err: fmt.Errorf("save the conversation to memory first: %w", err),
		}
	}
	return r.store.ResetSession(ctx, session)
}

// userError is an error with a sentence fit for the user.
type userError struct {
	msg string
	err error
}

func (e *userError) Error() string {
	if e.err != nil {
		return e.err.Error()
	}
	return e.msg
}

func (e *userError) Unwrap() error       { return e.err }
func (e *userError) UserMessage() string { return e.msg }

// observeModelCall counts a call in the metrics. A turn's calls reach the
// usage table with the assistant message the store appends.
func (r *Daemon) observeModelCall(_ context.Context, t agent.Turn, d time.Duration, u agent.Usage, err error) {
	if r.metrics != nil {
		outcome := "ok"
		if err != nil {
			outcome = "error"
		}
		r.metrics.ModelCall(outcome, d, u.PromptTokens, u.CompletionTokens, u.CachedTokens)
		if t.Session == heartbeat.Session {
			r.metrics.HeartbeatTokens(u.PromptTokens, u.CompletionTokens)
		}
	}
}

// observeToolCall counts and logs a call; its audit row is written with
// the turn's next record.
func (r *Daemon) observeToolCall(_ context.Context, ev agent.ToolEvent) {
	verdict := ev.Verdict
	if verdict == "" {
		verdict = "allow"
	}
	if r.metrics != nil {
		tool := ev.Tool
		if ev.Unknown {
			tool = admin.ToolUnknown // the model's invention: one series for them all
		}
		r.metrics.ToolCall(tool, verdict)
	}
	r.logger.Info("tool call", "turn_id", ev.Turn.ID, "tool", ev.Tool, "verdict", verdict, "failed", ev.Failed, "dur", ev.Duration)
}

func (r *Daemon) observeConsolidation(outcome string) {
	if r.metrics != nil {
		r.metrics.Consolidation(outcome)
	}
}

func (r *Daemon) countTurn(outcome string) {
	if r.metrics != nil {
		r.metrics.Turn(outcome)
	}
}

// memorySource gives the loop the MEMORY document of a turn's scope.
type memorySource struct{ r *Daemon }

func (m memorySource) Memory(ctx context.Context, t agent.Turn) (string, error) {
	return m.r.store.Memory(ctx, m.r.scope(t.Session))
}

func newTurnID() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// meteredProvider is the provider for consolidation calls: they count
// against the session's daily budget and are recorded like any other call.
type meteredProvider struct{ r *Daemon }

func (m meteredProvider) Complete(ctx context.Context, req agent.Request) (agent.Response, error) {
	t, _ := agent.TurnFrom(ctx)
	if _, over := m.r.budget.Over(ctx, t.Session); over {
		return agent.Response{}, errors.New("today's token budget for this chat is used up")
	}
	start := time.Now()
	resp, err := m.r.currentChain().Complete(ctx, req)
	m.r.observeModelCall(ctx, t, time.Since(start), resp.Usage, err)
	if err == nil {
		if rerr := m.r.store.RecordUsage(context.WithoutCancel(ctx), t.Session, m.r.now(), resp.Model, resp.Usage); rerr != nil {
			m.r.logger.Error("record usage", "session", t.Session, "err", rerr)
		}
	}
	return resp, err
}
