package main

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
	"github.com/nanobot-go/nanobot/config"
	"github.com/nanobot-go/nanobot/internal/idle"
	"github.com/nanobot-go/nanobot/memory"
)

// errNoTelegram is the gateway's answer to a config with Telegram off.
var errNoTelegram = errors.New("the gateway has nothing to serve; enable Telegram in config.yaml (and set TELEGRAM_BOT_TOKEN), or chat in the terminal with `nanobot agent`")

// gateway runs the daemon: Telegram, the admin endpoint and live config
// reloads, until SIGINT or SIGTERM.
func (a *app) gateway(ctx context.Context, cfgPath string, args []string) error {
	fs := newFlags("gateway", a.stderr)
	reloadEvery := fs.Duration("reload-interval", time.Second, "how often config.yaml is checked for edits")
	pollTimeout := fs.Duration("poll-timeout", 25*time.Second, "Telegram getUpdates long-poll timeout")
	watchdog := fs.Duration("watchdog", 2*time.Minute, "restart the Telegram connection after this long without a sign of life (at least twice --poll-timeout)")
	unreadyAfter := fs.Duration("unready-after", 3*time.Minute, "/readyz fails after this long without contact with Telegram")
	allowEmpty := fs.Bool("allow-empty-start", false, "start on a new, empty database although Litestream replicated one at storage.path (as storage.allow_empty_start)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	loaded, _ := os.ReadFile(cfgPath)
	cfg, err := a.loadConfig(cfgPath)
	if err != nil {
		return err
	}
	if !cfg.Channels.Telegram.Enabled {
		return &config.Error{File: cfg.Path, Key: "channels.telegram.enabled", Problem: errNoTelegram.Error()}
	}
	if err := cfg.CheckTelegram(); err != nil {
		return err
	}
	if err := emptyStart(cfg, *allowEmpty); err != nil {
		return err
	}
	// One gateway per database: a restore (or a second gateway) waits for
	// this lock, which the kernel drops whenever the process ends.
	lock, err := memory.TryLock(cfg.Storage.Path)
	if err != nil {
		var held *memory.LockedError
		if errors.As(err, &held) {
			return fmt.Errorf("%w: %s already holds %s (another gateway, or a restore under way); "+
				"stop it before starting this one, or give this one its own storage.path", errGatewayRunning, holder(held), cfg.Storage.Path)
		}
		return storageProblem(cfg, err)
	}
	defer lock.Release()
	metrics := admin.NewMetrics()
	rt, err := a.start(ctx, cfgPath, false, metrics)
	if err != nil {
		a.damageNotice(ctx, cfg, err)
		return err
	}
	cfg = rt.config()
	log := rt.logger
	// A damaged page shows in no query until one reads it: find out now,
	// not at the next backup.
	if err := rt.checkDatabase(ctx, false); err != nil {
		rt.close(time.Second)
		err = storageProblem(cfg, err)
		a.damageNotice(ctx, cfg, err)
		return err
	}
	os.Remove(damageMarker(cfg)) // sound again: a new damage is told anew

	var tr telegram.Transcriber
	if cfg.Provider.TranscriptionModel != "" {
		tr = transcriber{rt}
	}
	tc := telegramConfig(cfg, a.now().Now)
	tc.PollTimeout, tc.Watchdog, tc.Wake, tc.Background = *pollTimeout, *watchdog, rt.bell.For("telegram"), rt.pro
	ch, err := telegram.New(tc, rt.store, rt.turns, rt, tr, log, telegram.Hooks{
		Inbound:       func() { metrics.InboundMessage("telegram") },
		TelegramError: metrics.TelegramError,
		Restart:       metrics.TelegramRestart,
	})
	if err != nil {
		rt.close(time.Second)
		return err
	}
	backups, err := newBackups(rt, metrics, a.now())
	if err != nil {
		rt.close(time.Second)
		return err
	}
	defer rt.approvals.Serve(ch)()

	stopProactive, err := runProactive(ctx, rt.pro)
	if err != nil {
		rt.close(time.Second)
		return err
	}

	var srv *admin.Server
	if cfg.Gateway.Listen != "" {
		srv = admin.NewServer(cfg.Gateway.Listen, metrics, func(ctx context.Context) error { return ready(ctx, rt, ch, *unreadyAfter) }, log)
		srv.SetDetails(func(ctx context.Context) []string { return append(rt.readyDetails(), rt.mcpDetails(ctx)...) })
		if err := srv.Start(); err != nil {
			stopProactive()
			rt.close(time.Second)
			return &config.Error{File: cfg.Path, Key: "gateway.listen", Problem: err.Error()}
		}
	}

	var wg sync.WaitGroup
	watchCtx, stopWatch := context.WithCancel(ctx)
	if backups != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			backups.Run(watchCtx)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		watchConfig(watchCtx, cfg.Path, loaded, *reloadEvery, rt, ch)
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		watchWake(watchCtx, cfg.Storage.Path, *reloadEvery, func() {
			rt.bell.Ring("telegram")
			rt.pro.wake()
		})
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		idle.Watch(watchCtx, idle.Options{Release: rt.store.ShrinkMemory, Logger: log})
	}()

	log.Info("gateway started", "version", version, "model", cfg.Provider.Model, "mode", cfg.Channels.Telegram.Mode)
	runErr := ch.Run(ctx)
	stopWatch()
	wg.Wait()
	stopProactive()
	rt.turns.Shutdown()
	ch.Flush()
	if srv != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		srv.Shutdown(sctx)
		cancel()
	}
	if err := rt.close(5 * time.Second); err != nil {
		log.Error("close storage", "err", err)
	}
	if runErr != nil {
		if errors.Is(runErr, telegram.ErrBadToken) {
			return &config.Error{File: cfg.Path, Key: "channels.telegram.token",
				Problem: "telegram rejected the bot token (revoked or replaced?): set TELEGRAM_BOT_TOKEN to the current token from @BotFather"}
		}
		return runErr
	}
	log.Info("gateway stopped")
	return nil
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
func ready(ctx context.Context, rt *daemon, ch *telegram.Channel, silence time.Duration) error {
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
	if cfg := rt.config(); cfg.Provider.BaseURL == "" || cfg.Provider.Model == "" {
		return errors.New("no model endpoint configured")
	}
	return nil
}

// transcriber sends voice notes to the current provider.
type transcriber struct{ rt *daemon }

func (t transcriber) Transcribe(ctx context.Context, filename string, audio []byte) (string, error) {
	return t.rt.currentProvider().Transcribe(ctx, filename, audio)
}

// watchConfig applies edits of config.yaml while the gateway runs: it
// checks the file every interval and on SIGHUP; last is the text the
// running config was loaded from. A valid edit applies to
// new turns; an invalid one is logged and the running config stays.
func watchConfig(ctx context.Context, path string, last []byte, every time.Duration, rt *daemon, ch *telegram.Channel) {
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
			reload(path, rt, ch)
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

func reload(path string, rt *daemon, ch *telegram.Channel) {
	log := rt.logger
	next, err := config.Load(path)
	if err != nil {
		rt.configRejected(context.Background(), err)
		return
	}
	old := rt.config()
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
	log.Info("config reloaded", "path", path, "model", next.Provider.Model, "allow_from", strconv.Itoa(len(next.Channels.Telegram.AllowFrom))+" entries")
}

// keepRestartOnly carries over the values that only a restart applies, so
// the running daemon keeps using what it started with.
func keepRestartOnly(old, next *config.Config) {
	next.Storage = old.Storage
	next.Gateway = old.Gateway
	next.Memory.Scope = old.Memory.Scope
	t, o := &next.Channels.Telegram, old.Channels.Telegram
	t.Enabled, t.Token, t.APIURL, t.Mode, t.Webhook = o.Enabled, o.Token, o.APIURL, o.Mode, o.Webhook
}
