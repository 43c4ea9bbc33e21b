// Package telegram is nanobot's Telegram channel. It records every update
// before Telegram may forget it, answers each chat in arrival order while
// different chats run in parallel, and delivers replies from a durable outbox
// until Telegram accepts them. It uses github.com/go-telegram/bot for
// everything it sends, but fetches updates itself: the library's poll loop
// acknowledges an update before anything has handled it.
package telegram

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/channels"
)

const (
	channelName = "telegram"

	defaultAPIURL          = "https://api.telegram.org"
	defaultMaxFileSize     = 20 << 20 // the Bot API's own download limit
	defaultMaxConcurrent   = 4
	defaultShutdownTimeout = 30 * time.Second
	defaultApprovalTimeout = 5 * time.Minute
	defaultPollTimeout     = 25 * time.Second
	defaultTypingInterval  = 4 * time.Second
	defaultHeartbeat       = 30 * time.Second
	defaultWatchdog        = 2 * time.Minute
	defaultFlushTimeout    = 5 * time.Second
)

// ErrBadToken reports that Telegram refused the configured bot token.
var ErrBadToken = errors.New("channels.telegram.token: telegram rejected the bot token: set TELEGRAM_BOT_TOKEN to the token from @BotFather")

// TokenRejectedKey is the state key under which the channel records that
// Telegram rejected the token (the time, RFC 3339), so `nanobot status` can
// say so after the gateway stopped; a successful start clears it.
const TokenRejectedKey = "telegram.token_rejected_at"

// Config is the channel's part of config.yaml plus the few agent settings it
// needs. Zero durations and sizes take their defaults.
type Config struct {
	Token  string
	APIURL string // default https://api.telegram.org; a self-hosted Bot API server works too
	// AllowFrom lists numeric user (or chat) ids and @usernames; "*" admits
	// everybody; empty admits nobody.
	AllowFrom      []string
	GroupPolicy    string // "mention" (default) | "all" | "ignore"
	ReplyToMessage bool

	Mode          string // "polling" (default) | "webhook"
	WebhookURL    string // public HTTPS URL Telegram posts to
	WebhookListen string // local address of the endpoint behind the reverse proxy
	WebhookSecret string // checked against X-Telegram-Bot-Api-Secret-Token

	MaxFileSize int64  // bytes; default 20 MB
	Workspace   string // documents are saved under Workspace/inbox/
	Vision      bool   // the model accepts images

	MaxConcurrent   int           // chats answered in parallel; default 4
	ShutdownTimeout time.Duration // how long running turns may finish on shutdown; default 30 s
	Approver        string        // user id asked to approve commands; "" = first numeric AllowFrom
	ApprovalTimeout time.Duration // silence after this long is a denial; default 5 min
	Model           string        // shown by /status

	PollTimeout    time.Duration // getUpdates long-poll timeout; default 25 s
	TypingInterval time.Duration // how often "typing" is repeated during a turn; default 4 s
	// Heartbeat is how often webhook mode calls getMe, so LastContact stays
	// fresh on a quiet bot as polling keeps it; default 30 s.
	Heartbeat time.Duration
	// Watchdog is how long intake may go without a sign of life (a
	// completed getUpdates; in webhook mode an update or a heartbeat)
	// before the connections are restarted; default 2 min. It must be at
	// least twice PollTimeout (and Heartbeat in webhook mode).
	Watchdog time.Duration
	// Now is the clock messages are stamped with when they arrive;
	// time.Now when nil.
	Now func() time.Time
}

// Store is the durable inbox, outbox and small key-value state the channel
// keeps; *memory.Store satisfies it.
type Store interface {
	Inbox
	Outbox
	StateStore
	Notices
}

// Notices remembers what a chat was told once, across restarts.
type Notices interface {
	// ClaimNotice reports whether the notice key may be given now (not
	// given within period) and records it if so.
	ClaimNotice(ctx context.Context, key string, period time.Duration) (bool, error)
}

// Inbox records inbound updates and tracks their progress.
type Inbox interface {
	RecordInbound(ctx context.Context, it channels.InboxItem) (id int64, inserted bool, err error)
	PendingInbound(ctx context.Context, channel string) ([]channels.InboxItem, error)
	CompleteInbound(ctx context.Context, ids []int64, reply *channels.OutboxItem) (outboxID int64, err error)
}

// Outbox holds replies until they are delivered.
type Outbox interface {
	Enqueue(ctx context.Context, it channels.OutboxItem) (int64, error)
	PendingOutbound(ctx context.Context, channel string) ([]channels.OutboxItem, error)
	MarkSent(ctx context.Context, id, messageID int64) error
	MarkOutboundFailed(ctx context.Context, id int64, reason string) error
}

// StateStore is a small key-value store ("" when a key is absent).
type StateStore interface {
	State(ctx context.Context, key string) (string, error)
	SetState(ctx context.Context, key, value string) error
}

// Responder answers one turn. The turn carries the inbox items it answers:
// the responder's records start them with the user message and close them
// with the answer queued (see agent.Record). With resume set, the turn's
// first record was written before a crash: the responder continues from the
// session instead of adding the message again. The reply is Markdown.
// Errors are infrastructure failures; model outages come back as honest
// reply text, which the channel queues itself.
type Responder interface {
	Respond(ctx context.Context, t agent.Turn, msg agent.Message, resume bool) (string, error)
}

// Sessions serves the /new and /status commands. A Status text with a
// "Model:" line of its own (one that knows of fallbacks, say) replaces the
// channel's.
type Sessions interface {
	Reset(ctx context.Context, session string) error
	Status(ctx context.Context, session string) (string, error)
}

// Transcriber turns a voice note into text.
type Transcriber interface {
	Transcribe(ctx context.Context, filename string, audio []byte) (string, error)
}

// Hooks let the daemon count what the channel does. All are optional and
// must return quickly.
type Hooks struct {
	Inbound       func()                     // an update was recorded
	TelegramError func(method string)        // a Bot API call failed
	Queue         func(pending, running int) // turns waiting and running
	Restart       func()                     // the watchdog restarted the connections
}

// Channel is the Telegram channel. Create it with New and start it with Run.
type Channel struct {
	cfg         Config
	store       Store
	responder   Responder
	sessions    Sessions
	transcriber Transcriber
	log         *slog.Logger
	hooks       Hooks

	bot    *bot.Bot
	tr     *transport
	client *http.Client // every call: the library's, getUpdates and file downloads
	me     models.User  // set by Run before anything reads it

	allow       atomic.Pointer[allowList]
	model       atomic.Pointer[string]
	background  atomic.Pointer[Background]
	sysMu       sync.Mutex   // orders Announce with the start-up load of the inbox
	live        bool         // the dispatcher has taken over the inbox; under sysMu
	lastContact atomic.Int64 // unix nanoseconds
	lastAlive   atomic.Int64 // unix nanoseconds of intake's last sign of life, for the watchdog
	startedAt   time.Time
	running     atomic.Bool

	disp      *dispatcher
	send      *sender
	approvals *approvals

	bg    sync.WaitGroup // short background calls (answering button presses)
	bgCtx context.Context

	flushTimeout time.Duration
	ready        chan struct{} // closed once intake runs
	webhookAddr  atomic.Pointer[string]

	fullMu   sync.Mutex
	fullTold map[string]bool // chats told the disk is full, in this outage
}

// New checks cfg and builds the channel; nothing is contacted until Run.
func New(cfg Config, store Store, r Responder, s Sessions, tr Transcriber, logger *slog.Logger, hooks Hooks) (*Channel, error) {
	if strings.TrimSpace(cfg.Token) == "" {
		return nil, errors.New("channels.telegram.token is empty: set TELEGRAM_BOT_TOKEN to the token from @BotFather")
	}
	if store == nil || r == nil {
		return nil, errors.New("telegram channel needs a store and a responder")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cfg = withDefaults(cfg)
	if err := validate(cfg); err != nil {
		return nil, err
	}
	c := &Channel{
		cfg:          cfg,
		store:        store,
		responder:    r,
		sessions:     s,
		transcriber:  tr,
		log:          logger.With("channel", channelName),
		hooks:        hooks,
		approvals:    newApprovals(),
		flushTimeout: defaultFlushTimeout,
		ready:        make(chan struct{}),
		bgCtx:        context.Background(),
		fullTold:     map[string]bool{},
	}
	c.allow.Store(newAllowList(cfg.AllowFrom))
	model := cfg.Model
	c.model.Store(&model)
	c.tr = newTransport(c)
	c.client = &http.Client{
		Transport: c.tr,
		// A safety net under the per-call deadlines: no call outlives a long poll.
		Timeout: cfg.PollTimeout + time.Minute,
	}
	b, err := bot.New(cfg.Token,
		bot.WithSkipGetMe(),
		bot.WithServerURL(cfg.APIURL),
		bot.WithHTTPClient(cfg.PollTimeout, c.client),
		bot.WithErrorsHandler(func(err error) {
			c.log.Warn("telegram library error", "err", c.scrub(err))
		}),
		bot.WithDebugHandler(func(string, ...any) {}),
	)
	if err != nil {
		return nil, fmt.Errorf("telegram client: %w", c.scrub(err))
	}
	c.bot = b
	c.disp = newDispatcher(c, cfg.MaxConcurrent)
	c.send = newSender(c)
	return c, nil
}

func withDefaults(cfg Config) Config {
	cfg.APIURL = strings.TrimRight(cfg.APIURL, "/")
	if cfg.APIURL == "" {
		cfg.APIURL = defaultAPIURL
	}
	if cfg.GroupPolicy == "" {
		cfg.GroupPolicy = "mention"
	}
	if cfg.Mode == "" {
		cfg.Mode = "polling"
	}
	if cfg.MaxFileSize <= 0 {
		cfg.MaxFileSize = defaultMaxFileSize
	}
	if cfg.MaxConcurrent <= 0 {
		cfg.MaxConcurrent = defaultMaxConcurrent
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = defaultShutdownTimeout
	}
	if cfg.ApprovalTimeout <= 0 {
		cfg.ApprovalTimeout = defaultApprovalTimeout
	}
	if cfg.PollTimeout <= 0 {
		cfg.PollTimeout = defaultPollTimeout
	}
	if cfg.TypingInterval <= 0 {
		cfg.TypingInterval = defaultTypingInterval
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = defaultHeartbeat
	}
	if cfg.Watchdog <= 0 {
		cfg.Watchdog = defaultWatchdog
	}
	return cfg
}

func validate(cfg Config) error {
	switch cfg.GroupPolicy {
	case "mention", "all", "ignore":
	default:
		return fmt.Errorf("channels.telegram.group_policy: %q is not one of mention, all, ignore", cfg.GroupPolicy)
	}
	switch cfg.Mode {
	case "polling":
	case "webhook":
		if cfg.WebhookURL == "" || cfg.WebhookListen == "" {
			return errors.New("channels.telegram.webhook: webhook mode needs url and listen")
		}
		if cfg.WebhookSecret == "" {
			return errors.New("channels.telegram.webhook.secret_token: webhook mode needs a secret token")
		}
	default:
		return fmt.Errorf("channels.telegram.mode: %q is not one of polling, webhook", cfg.Mode)
	}
	// A healthy long poll (or heartbeat) must never look like a silence.
	floor := 2 * cfg.PollTimeout
	if cfg.Mode == "webhook" {
		floor = 2 * cfg.Heartbeat
	}
	if cfg.Watchdog < floor {
		return fmt.Errorf("telegram watchdog %s is shorter than %s, twice the poll timeout or heartbeat", cfg.Watchdog, floor)
	}
	return nil
}

// SetAllowFrom replaces the allow list while the channel runs.
func (c *Channel) SetAllowFrom(list []string) {
	a := newAllowList(list)
	c.allow.Store(a)
	c.log.Info("telegram allow list updated", "entries", len(list))
	a.warn(c.log)
}

// SetModel changes the model name /status reports.
func (c *Channel) SetModel(name string) { c.model.Store(&name) }

// LastContact is when Telegram last answered a call, zero before the first.
func (c *Channel) LastContact() time.Time {
	n := c.lastContact.Load()
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// now is the time a message arrives.
func (c *Channel) now() time.Time {
	if c.cfg.Now != nil {
		return c.cfg.Now()
	}
	return time.Now()
}

func (c *Channel) touch() { c.lastContact.Store(time.Now().UnixNano()) }

// Run connects to Telegram and serves until ctx is done, then shuts down
// gracefully: intake stops, running turns get ShutdownTimeout to finish (the
// rest stay in the inbox and resume on the next start), the outbox is flushed
// briefly. It returns nil after a clean shutdown and an error when it cannot
// start.
func (c *Channel) Run(ctx context.Context) error {
	if !c.running.CompareAndSwap(false, true) {
		return errors.New("telegram channel is already running")
	}
	c.startedAt = time.Now()
	c.allow.Load().warn(c.log)
	if err := c.connect(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}

	// Work that must outlive the intake context gets its own cancellation.
	detached := context.WithoutCancel(ctx)
	c.bgCtx = detached
	sendCtx, cancelSend := context.WithCancel(detached)
	defer cancelSend()
	senderDone := make(chan struct{})
	go func() {
		defer close(senderDone)
		c.send.run(sendCtx)
	}()

	turnCtx, cancelTurns := context.WithCancelCause(detached)
	defer cancelTurns(nil)
	c.disp.base = turnCtx

	c.sysMu.Lock()
	pending, err := c.pendingItems(ctx)
	if err != nil {
		c.sysMu.Unlock()
		cancelSend()
		<-senderDone
		return fmt.Errorf("load pending messages: %w", err)
	}
	c.disp.hold()
	for _, it := range pending {
		c.disp.add(ctx, it)
	}
	c.disp.release()
	c.live = true // Announce hands items to the dispatcher from now on
	c.sysMu.Unlock()
	if len(pending) > 0 {
		c.log.Info("resuming recorded messages", "count", len(pending))
	}

	intakeCtx, stopIntake := context.WithCancel(ctx)
	defer stopIntake()
	intakeDone := make(chan error, 1)
	go func() { intakeDone <- c.intake(intakeCtx) }()
	close(c.ready)
	c.log.Info("telegram channel running", "bot", c.me.Username, "mode", c.cfg.Mode)

	var intakeErr error
	select {
	case <-ctx.Done():
		intakeErr = <-intakeDone
	case intakeErr = <-intakeDone:
		// Intake only ends early when it cannot go on (a revoked token).
	}
	stopIntake()
	if errors.Is(intakeErr, ErrBadToken) {
		c.log.Error("telegram channel stopping: telegram rejected the bot token (401); it was revoked or replaced",
			"what_to_do", "get the current token from @BotFather, set TELEGRAM_BOT_TOKEN and start the gateway again")
	} else {
		c.log.Info("telegram channel stopping")
	}
	c.disp.shutdown(c.cfg.ShutdownTimeout, cancelTurns)
	c.send.drain()
	select {
	case <-senderDone:
	case <-time.After(c.flushTimeout):
		cancelSend()
		<-senderDone
	}
	c.bg.Wait()
	if errors.Is(intakeErr, ErrBadToken) {
		return intakeErr
	}
	if intakeErr != nil {
		c.log.Warn("telegram intake ended with an error", "err", intakeErr)
	}
	return nil
}

// tokenRejected records that Telegram refused the token, for `nanobot
// status`.
func (c *Channel) tokenRejected(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := c.store.SetState(ctx, TokenRejectedKey, time.Now().UTC().Format(time.RFC3339)); err != nil {
		c.log.Warn("record the rejected token", "err", err)
	}
}

// tokenAccepted clears an earlier rejection.
func (c *Channel) tokenAccepted(ctx context.Context) {
	if v, err := c.store.State(ctx, TokenRejectedKey); err != nil || v == "" {
		return
	}
	if err := c.store.SetState(ctx, TokenRejectedKey, ""); err != nil {
		c.log.Warn("clear the rejected-token note", "err", err)
	}
}

// connect checks the token, registers the commands and prepares the intake
// mode. Only a rejected token is fatal; an unreachable Telegram is retried.
func (c *Channel) connect(ctx context.Context) error {
	var wait time.Duration
	for {
		callCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		me, err := c.bot.GetMe(callCtx)
		cancel()
		if err == nil {
			c.me = *me
			c.tokenAccepted(ctx)
			break
		}
		if errors.Is(err, bot.ErrorUnauthorized) || errors.Is(err, bot.ErrorNotFound) {
			c.tokenRejected(ctx)
			return ErrBadToken
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		wait = nextBackoff(wait)
		c.log.Warn("telegram unreachable at start", "err", c.scrub(err), "retry_in", wait)
		if !sleepCtx(ctx, wait) {
			return ctx.Err()
		}
	}
	callCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := c.bot.SetMyCommands(callCtx, &bot.SetMyCommandsParams{Commands: botCommands}); err != nil {
		c.log.Warn("register bot commands", "err", c.scrub(err))
	}
	if c.cfg.Mode == "polling" {
		// A webhook left over from another setup would make getUpdates fail.
		if _, err := c.bot.DeleteWebhook(callCtx, &bot.DeleteWebhookParams{}); err != nil {
			c.log.Warn("remove webhook before polling", "err", c.scrub(err))
		}
	}
	return nil
}

// chatID parses a stored chat id.
func chatID(s string) (int64, error) { return strconv.ParseInt(s, 10, 64) }
