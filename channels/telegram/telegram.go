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

	"github.com/nanobot-go/nanobot/internal/backoff"
	"github.com/nanobot-go/nanobot/turns"
)

const (
	channelName = "telegram"

	defaultAPIURL          = "https://api.telegram.org"
	defaultMaxFileSize     = 20 << 20 // the Bot API's own download limit
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

	Approver        string        // user id asked to approve commands; "" = first numeric AllowFrom
	ApprovalTimeout time.Duration // silence after this long is a denial; default 5 min
	Model           string        // shown by /status

	PollTimeout    time.Duration // getUpdates long-poll timeout; default 25 s
	TypingInterval time.Duration // how often "typing" is repeated during a turn; default 4 s
	// Progress is what a chat sees while a turn runs tools: ProgressStatus
	// (default), ProgressVerbose or ProgressOff.
	Progress string
	// ProgressInterval is the least time between two updates of a status
	// message; default 3 s (Telegram allows about one edit a second per chat).
	ProgressInterval time.Duration
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
	// Wake rings when replies were queued outside the channel (a turn's
	// answer, the message tool, a notice), so they are delivered now
	// rather than at the next look at the outbox (turns.Bell.For).
	Wake <-chan struct{}
	// Background serves /jobs, /subagents and /stop's background part;
	// nil: not available.
	Background Background
	// WebLogin makes a one-time sign-in link to the web console for /web;
	// nil: the console is off.
	WebLogin func(ctx context.Context) (string, error)
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

// Inbox records inbound updates before Telegram may forget them.
type Inbox interface {
	RecordInbound(ctx context.Context, it turns.InboxItem) (id int64, inserted bool, err error)
}

// Outbox holds replies until they are delivered.
type Outbox interface {
	Enqueue(ctx context.Context, it turns.OutboxItem) (int64, error)
	PendingOutbound(ctx context.Context, channel string) ([]turns.OutboxItem, error)
	MarkSent(ctx context.Context, id, messageID int64) error
	MarkOutboundFailed(ctx context.Context, id int64, reason string) error
}

// StateStore is a small key-value store ("" when a key is absent).
type StateStore interface {
	State(ctx context.Context, key string) (string, error)
	SetState(ctx context.Context, key, value string) error
}

// Turns is the turn engine the channel hands its recorded updates to: it
// answers each chat's messages in order, and serves /stop and /status.
type Turns interface {
	Attach(ctx context.Context, src turns.Source, channels ...string) error
	Add(ctx context.Context, it turns.InboxItem)
	Stop(chat string) string
	ChatLoad(chat string) turns.Load
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
	Inbound       func()              // an update was recorded
	TelegramError func(method string) // a Bot API call failed
	Restart       func()              // the watchdog restarted the connections
}

// Channel is the Telegram channel. Create it with New and start it with Run.
type Channel struct {
	cfg         Config
	store       Store
	turns       Turns
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
	progress    atomic.Pointer[string] // the progress mode
	lastContact atomic.Int64           // unix nanoseconds
	lastAlive   atomic.Int64           // unix nanoseconds of intake's last sign of life, for the watchdog
	startedAt   time.Time
	running     atomic.Bool

	send       *sender
	approvals  *approvals
	stopSend   context.CancelFunc // set by Run; Flush ends the sender with it
	senderDone chan struct{}

	bg       sync.WaitGroup // short background calls (answering button presses, status messages)
	statuses statusBook

	flushTimeout time.Duration
	ready        chan struct{} // closed once intake runs
	webhookAddr  atomic.Pointer[string]
}

// New checks cfg and builds the channel; nothing is contacted until Run.
func New(cfg Config, store Store, t Turns, s Sessions, tr Transcriber, logger *slog.Logger, hooks Hooks) (*Channel, error) {
	if strings.TrimSpace(cfg.Token) == "" {
		return nil, errors.New("channels.telegram.token is empty: set TELEGRAM_BOT_TOKEN to the token from @BotFather")
	}
	if store == nil || t == nil {
		return nil, errors.New("telegram channel needs a store and a turn engine")
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
		turns:        t,
		sessions:     s,
		transcriber:  tr,
		log:          logger.With("channel", channelName),
		hooks:        hooks,
		approvals:    newApprovals(),
		flushTimeout: defaultFlushTimeout,
		ready:        make(chan struct{}),
	}
	c.allow.Store(newAllowList(cfg.AllowFrom))
	model := cfg.Model
	c.model.Store(&model)
	c.SetProgress(cfg.Progress)
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
	if cfg.Progress == "" {
		cfg.Progress = ProgressStatus
	}
	if cfg.ProgressInterval <= 0 {
		cfg.ProgressInterval = defaultProgressInterval
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
	switch cfg.Progress {
	case ProgressOff, ProgressStatus, ProgressVerbose:
	default:
		return fmt.Errorf("channels.telegram.progress: %q is not one of off, status, verbose", cfg.Progress)
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

// Run connects to Telegram, hands the recorded updates to the turn engine
// and receives new ones until ctx is done; replies are delivered from the
// outbox meanwhile. It returns once intake has stopped, leaving delivery
// running: after the engine drained its turns, Flush delivers what they
// queued and stops. It returns nil after a clean stop and an error when
// it cannot start or Telegram rejected the token.
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
	c.tidyStatuses(ctx)

	// Delivery outlives intake: Flush ends it.
	sendCtx, cancelSend := context.WithCancel(context.WithoutCancel(ctx))
	c.stopSend, c.senderDone = cancelSend, make(chan struct{})
	go func() {
		defer close(c.senderDone)
		c.send.run(sendCtx)
	}()
	if err := c.turns.Attach(ctx, source{c}, channelName, systemChannel); err != nil {
		return err
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
		return intakeErr
	}
	c.log.Info("telegram channel stopping")
	if intakeErr != nil {
		c.log.Warn("telegram intake ended with an error", "err", intakeErr)
	}
	return nil
}

// Flush delivers what the outbox holds for a short while, then stops
// delivery. Call it after Run returned and the turns were drained.
func (c *Channel) Flush() {
	if c.stopSend != nil {
		c.send.drain()
		select {
		case <-c.senderDone:
		case <-time.After(c.flushTimeout):
			c.stopSend()
			<-c.senderDone
		}
	}
	c.bg.Wait()
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
		wait = backoff.Next(wait)
		c.log.Warn("telegram unreachable at start", "err", c.scrub(err), "retry_in", wait)
		if !backoff.Sleep(ctx, wait) {
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
