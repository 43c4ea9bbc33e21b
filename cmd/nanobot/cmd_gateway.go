package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/nanobot-go/nanobot/admin"
	"github.com/nanobot-go/nanobot/config"
	"github.com/nanobot-go/nanobot/daemon"
	"github.com/nanobot-go/nanobot/memory"
)

// errNoTelegram is the gateway's answer to a config with Telegram off.
var errNoTelegram = errors.New("the gateway has nothing to serve; enable Telegram in config.yaml (and set TELEGRAM_BOT_TOKEN), or chat in the terminal with `nanobot agent`")

// gatewayFlags are the gateway's command-line options.
type gatewayFlags struct {
	reloadEvery, pollTimeout, watchdog, unreadyAfter time.Duration
	allowEmpty                                       bool
}

func parseGatewayFlags(args []string, stderr io.Writer) (gatewayFlags, error) {
	var f gatewayFlags
	fs := newFlags("gateway", stderr)
	fs.DurationVar(&f.reloadEvery, "reload-interval", time.Second, "how often config.yaml is checked for edits")
	fs.DurationVar(&f.pollTimeout, "poll-timeout", 25*time.Second, "Telegram getUpdates long-poll timeout")
	fs.DurationVar(&f.watchdog, "watchdog", 2*time.Minute, "restart the Telegram connection after this long without a sign of life (at least twice --poll-timeout)")
	fs.DurationVar(&f.unreadyAfter, "unready-after", 3*time.Minute, "/readyz fails after this long without contact with Telegram")
	fs.BoolVar(&f.allowEmpty, "allow-empty-start", false, "start on a new, empty database although Litestream replicated one at storage.path (as storage.allow_empty_start)")
	return f, parseFlags(fs, args)
}

// gateway runs the daemon: Telegram, the admin endpoint and live config
// reloads, until SIGINT or SIGTERM.
func (a *app) gateway(ctx context.Context, cfgPath string, args []string) error {
	flags, err := parseGatewayFlags(args, a.stderr)
	if err != nil {
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
	if err := daemon.EmptyStart(cfg, flags.allowEmpty); err != nil {
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
		return daemon.StorageProblem(cfg, err)
	}
	defer lock.Release()
	metrics := admin.NewMetrics()
	d, err := a.start(ctx, cfgPath, false, metrics)
	if err == nil {
		var g *daemon.Gateway
		g, err = daemon.NewGateway(ctx, d, daemon.GatewayOptions{Metrics: metrics, Clock: a.now(), Version: version,
			ReloadEvery: flags.reloadEvery, PollTimeout: flags.pollTimeout, Watchdog: flags.watchdog, UnreadyAfter: flags.unreadyAfter,
			ProgressInterval: a.progressEvery})
		if err == nil {
			return g.Run(ctx, loaded)
		}
	}
	daemon.DamageNotice(ctx, cfg, err, a.stderr)
	return err
}
