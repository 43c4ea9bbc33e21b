package daemon

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/nanobot-go/nanobot/admin"
	"github.com/nanobot-go/nanobot/channels/telegram"
	"github.com/nanobot-go/nanobot/channels/web"
	"github.com/nanobot-go/nanobot/config"
	"github.com/nanobot-go/nanobot/internal/idle"
	"github.com/nanobot-go/nanobot/memory/backup"
	"github.com/nanobot-go/nanobot/schedule"
)

// Gateway is the running gateway: the daemon and what serves it.
type Gateway struct {
	d       *Daemon
	ch      *telegram.Channel
	backups *backup.Schedule // nil when storage.backup is off
	srv     *admin.Server    // nil when gateway.listen is empty
	api     *listener        // nil when api.listen is empty
	web     *web.Web         // nil when web.listen is empty
	webL    *listener
	opt     GatewayOptions
}

// GatewayOptions are the gateway's settings from its command line.
type GatewayOptions struct {
	ReloadEvery  time.Duration // how often config.yaml and the wake file are looked at
	PollTimeout  time.Duration // Telegram's long poll
	Watchdog     time.Duration // a Telegram connection silent this long is restarted
	UnreadyAfter time.Duration // /readyz fails after this long without Telegram
	// ProgressInterval is the least time between two updates of a chat's
	// status message; the channel's default when zero.
	ProgressInterval time.Duration
	Metrics          *admin.Metrics
	Clock            schedule.Clock
	Version          string
}

// NewGateway builds the gateway on d top down: a database check, the
// Telegram channel, the backups and the admin endpoint. Nothing runs yet.
// On an error d is closed.
func NewGateway(ctx context.Context, d *Daemon, opt GatewayOptions) (*Gateway, error) {
	cfg, metrics := d.Config(), opt.Metrics
	// A damaged page shows in no query until one reads it: find out now,
	// not at the next backup.
	if err := d.checkDatabase(ctx, false); err != nil {
		d.Close(time.Second)
		return nil, StorageProblem(cfg, err)
	}
	os.Remove(damageMarker(cfg)) // sound again: a new damage is told anew

	g := &Gateway{d: d, opt: opt}
	var err error
	var tr telegram.Transcriber
	if cfg.Provider.TranscriptionModel != "" {
		tr = transcriber{d}
	}
	tc := telegramConfig(cfg, opt.Clock.Now)
	tc.PollTimeout, tc.Watchdog, tc.Wake, tc.Background = opt.PollTimeout, opt.Watchdog, d.bell.For("telegram"), d.pro
	tc.ProgressInterval = opt.ProgressInterval
	if g.web, g.webL, err = newWeb(d, cfg, opt.Version, g.channelLines); err != nil {
		d.Close(time.Second)
		return nil, err
	}
	if g.web != nil {
		tc.WebLogin = g.web.LoginLink
	}
	if g.ch, err = telegram.New(tc, d.store, d.turns, d, tr, d.logger, telegram.Hooks{
		Inbound:       func() { metrics.InboundMessage("telegram") },
		TelegramError: metrics.TelegramError,
		Restart:       metrics.TelegramRestart,
	}); err != nil {
		d.Close(time.Second)
		return nil, err
	}
	if g.backups, err = newBackups(d, metrics, opt.Clock); err != nil {
		d.Close(time.Second)
		return nil, err
	}
	g.api = newAPI(d, cfg)
	if cfg.Gateway.Listen != "" {
		g.srv = admin.NewServer(cfg.Gateway.Listen, metrics, func(ctx context.Context) error {
			if err := g.api.problem(); err != nil {
				return fmt.Errorf("api: %w", err)
			}
			if err := g.webL.problem(); err != nil {
				return fmt.Errorf("web: %w", err)
			}
			return ready(ctx, d, g.ch, opt.UnreadyAfter)
		}, d.logger)
		g.srv.SetDetails(g.details)
	}
	return g, nil
}

// details are /readyz's lines: the sandbox, the channels, MCP servers.
func (g *Gateway) details(ctx context.Context) []string {
	return append(g.d.readyDetails(), g.channelLines(ctx)...)
}

// channelLines say how each channel does, and each MCP server.
func (g *Gateway) channelLines(ctx context.Context) []string {
	tg := "telegram: not reached yet"
	if last := g.ch.LastContact(); !last.IsZero() {
		tg = fmt.Sprintf("telegram: %s, last contact %s ago", g.d.Config().Channels.Telegram.Mode,
			time.Since(last).Round(time.Second))
	}
	lines := append([]string{tg}, g.api.details()...)
	return append(append(lines, g.webL.details()...), g.d.mcpDetails(ctx)...)
}

// Run serves until ctx ends, then stops in reverse order: intake, the
// watchers and the background work, the turns (drained), delivery, the
// admin endpoint, the daemon. loaded is the config file's text at start.
func (g *Gateway) Run(ctx context.Context, loaded []byte) error {
	d, ch, log := g.d, g.ch, g.d.logger
	cfg := d.Config()
	defer d.approvals.Serve(approvalRoute{telegram: ch, console: g.web})()
	stopProactive, err := runProactive(ctx, d.pro)
	if err != nil {
		d.Close(time.Second)
		return err
	}
	if g.srv != nil {
		if err := g.srv.Start(); err != nil {
			stopProactive()
			d.Close(time.Second)
			return &config.Error{File: cfg.Path, Key: "gateway.listen", Problem: err.Error()}
		}
	}
	err = g.api.start(ctx, cfg)
	if err == nil {
		err = g.webL.start(ctx, cfg)
	}
	if err != nil {
		stopProactive()
		if g.srv != nil {
			g.srv.Shutdown(context.Background())
		}
		d.Close(time.Second)
		return err
	}
	watchCtx, stopWatch := context.WithCancel(ctx)
	wg := g.watch(watchCtx, loaded)

	log.Info("gateway started", "version", g.opt.Version, "model", cfg.Provider.Model, "mode", cfg.Channels.Telegram.Mode)
	runErr := ch.Run(ctx)
	stopWatch()
	wg.Wait()
	stopProactive()
	g.api.wait()
	g.webL.wait()
	d.turns.Shutdown()
	ch.Flush()
	if g.srv != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		g.srv.Shutdown(sctx)
		cancel()
	}
	if err := d.Close(5 * time.Second); err != nil {
		log.Error("close storage", "err", err)
	}
	if errors.Is(runErr, telegram.ErrBadToken) {
		return &config.Error{File: cfg.Path, Key: "channels.telegram.token",
			Problem: "telegram rejected the bot token (revoked or replaced?): set TELEGRAM_BOT_TOKEN to the current token from @BotFather"}
	}
	if runErr != nil {
		return runErr
	}
	log.Info("gateway stopped")
	return nil
}

// watch starts what runs beside the channel until ctx ends: backups,
// config reloads, wakes from the command line, the idle memory release.
func (g *Gateway) watch(ctx context.Context, loaded []byte) *sync.WaitGroup {
	d, cfg := g.d, g.d.Config()
	var wg sync.WaitGroup
	if g.backups != nil {
		wg.Go(func() { g.backups.Run(ctx) })
	}
	wg.Go(func() { watchConfig(ctx, cfg.Path, loaded, g.opt.ReloadEvery, d, g.ch, g.api, g.webL) })
	wg.Go(func() {
		watchWake(ctx, cfg.Storage.Path, g.opt.ReloadEvery, func() {
			d.bell.Ring("telegram")
			d.pro.wake()
		})
	})
	wg.Go(func() { idle.Watch(ctx, idle.Options{Release: d.store.ShrinkMemory, Logger: d.logger}) })
	return &wg
}

func telegramConfig(cfg *config.Config, now func() time.Time) telegram.Config {
	t := cfg.Channels.Telegram
	return telegram.Config{
		Token:           string(t.Token),
		APIURL:          t.APIURL,
		AllowFrom:       t.AllowFrom,
		GroupPolicy:     t.GroupPolicy,
		ReplyToMessage:  t.ReplyToMessage,
		Mode:            t.Mode,
		WebhookURL:      t.Webhook.URL,
		WebhookListen:   t.Webhook.Listen,
		WebhookSecret:   string(t.Webhook.SecretToken),
		MaxFileSize:     t.MaxFileSize,
		Progress:        t.Progress,
		Workspace:       cfg.Agent.Workspace,
		Vision:          cfg.Provider.Vision,
		Approver:        cfg.Owner(),
		ApprovalTimeout: cfg.Tools.Exec.ApprovalTimeout,
		Model:           cfg.Provider.Model,
		Now:             now,
	}
}

// ready is /readyz: the database takes writes, Telegram answered within
// silence (--unready-after, 3 minutes), and a model endpoint is configured.
func ready(ctx context.Context, rt *Daemon, ch *telegram.Channel, silence time.Duration) error {
	if err := rt.health.problem(); err != nil {
		return fmt.Errorf("database damaged: %w", err)
	}
	if err := rt.store.Ping(ctx); err != nil {
		return fmt.Errorf("database not writable: %w", err)
	}
	if last := ch.LastContact(); time.Since(last) > silence {
		if last.IsZero() {
			return errors.New("telegram not reached yet")
		}
		return fmt.Errorf("telegram not reached for %s", time.Since(last).Round(time.Second))
	}
	if cfg := rt.Config(); cfg.Provider.BaseURL == "" || cfg.Provider.Model == "" {
		return errors.New("no model endpoint configured")
	}
	return nil
}

// transcriber sends voice notes to the current provider.
type transcriber struct{ rt *Daemon }

func (t transcriber) Transcribe(ctx context.Context, filename string, audio []byte) (string, error) {
	return t.rt.currentProvider().Transcribe(ctx, filename, audio)
}

// watchConfig applies edits of config.yaml while the gateway runs: it
// checks the file every interval and on SIGHUP; last is the text the
// running config was loaded from. A valid edit applies to
// new turns; an invalid one is logged and the running config stays.
func watchConfig(ctx context.Context, path string, last []byte, every time.Duration, rt *Daemon, ch *telegram.Channel, listeners ...*listener) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	tick := time.NewTicker(every)
	defer tick.Stop()

	w := fileWatch{path: path, last: last}
	for {
		force := false
		select {
		case <-ctx.Done():
			return
		case <-hup:
			force = true
		case <-tick.C:
		}
		_, edited, err := w.edited(force)
		if err != nil {
			rt.logger.Warn("config reload: cannot read the file", "path", path, "err", err)
			continue
		}
		if edited {
			reload(path, rt, ch, listeners...)
		}
	}
}

// fileWatch notices edits of one file checked from time to time: the file
// is read again only when its metadata changed, so that a daemon at rest
// does not read and throw away the file every second, and an edit is
// content other than the last seen.
type fileWatch struct {
	path string
	seen os.FileInfo
	last []byte
}

// edited returns the file's content and whether it is an edit; force reads
// it, and counts it as one, whatever its metadata and content.
func (w *fileWatch) edited(force bool) ([]byte, bool, error) {
	info, err := os.Stat(w.path)
	if err == nil && !force && w.seen != nil && sameFile(w.seen, info) {
		return nil, false, nil
	}
	w.seen = info
	data, err := os.ReadFile(w.path)
	if err != nil {
		return nil, false, err
	}
	if !force && bytes.Equal(data, w.last) {
		return nil, false, nil
	}
	w.last = data
	return data, true, nil
}

// sameFile reports whether a and b describe the same file, unchanged:
// the same inode (an editor's rename or a ConfigMap's symlink swap make a
// new one), size and modification time. A file modified in the last few
// seconds never counts as unchanged: a second edit in the same clock tick
// can leave both its size and its time as they were.
func sameFile(a, b os.FileInfo) bool {
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime()) &&
		time.Since(b.ModTime()) > 3*time.Second
}

func reload(path string, rt *Daemon, ch *telegram.Channel, listeners ...*listener) {
	log := rt.logger
	next, err := config.Load(path)
	if err != nil {
		rt.configRejected(context.Background(), err)
		return
	}
	old := rt.Config()
	if keys := config.Changed(old, next); len(keys) > 0 {
		log.Warn("config keys changed that need a restart to apply", "keys", fmt.Sprint(keys))
	}
	keepRestartOnly(old, next)
	if err := rt.reconfigure(next); err != nil {
		rt.configRejected(context.Background(), err)
		return
	}
	rt.rejected.clear()
	ch.SetAllowFrom(next.Channels.Telegram.AllowFrom)
	ch.SetModel(next.Provider.Model)
	ch.SetProgress(next.Channels.Telegram.Progress)
	for _, l := range listeners {
		l.reconfigure(next)
	}
	log.Info("config reloaded", "path", path, "model", next.Provider.Model, "allow_from", strconv.Itoa(len(next.Channels.Telegram.AllowFrom))+" entries")
}

// keepRestartOnly carries over the values that only a restart applies, so
// the running daemon keeps using what it started with.
func keepRestartOnly(old, next *config.Config) {
	next.Storage = old.Storage
	next.Gateway = old.Gateway
	next.API.Listen = old.API.Listen
	next.WebConsole = old.WebConsole
	next.Memory.Scope = old.Memory.Scope
	t, o := &next.Channels.Telegram, old.Channels.Telegram
	t.Enabled, t.Token, t.APIURL, t.Mode, t.Webhook = o.Enabled, o.Token, o.APIURL, o.Mode, o.Webhook
}
