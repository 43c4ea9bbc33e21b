package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nanobot-go/nanobot/channels/telegram"
	"github.com/nanobot-go/nanobot/config"
	"github.com/nanobot-go/nanobot/daemon"
	"github.com/nanobot-go/nanobot/internal/human"
	"github.com/nanobot-go/nanobot/memory"
	"github.com/nanobot-go/nanobot/memory/backup"
)

// backupCmd is `nanobot backup [--force] FILE`: a checked copy of the
// database, safe while the gateway runs.
func (a *app) backupCmd(ctx context.Context, cfgPath string, args []string) error {
	fs := newFlags("backup", a.stderr)
	force := fs.Bool("force", false, "replace FILE if it exists")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{"usage: nanobot backup [--force] FILE"}
	}
	cfg, err := a.loadConfig(cfgPath)
	if err != nil {
		return err
	}
	if _, err := os.Stat(cfg.Storage.Path); err != nil {
		return fmt.Errorf("no database to back up at %s (it is created when nanobot first starts): %w", cfg.Storage.Path, err)
	}
	dest := pos[0]
	if _, err := os.Lstat(dest); err == nil && !*force {
		return fmt.Errorf("%s already exists; pass --force to replace it (the new copy is written beside it first)", dest)
	}
	target := dest
	if *force {
		// Written beside it first, so a failed copy leaves the old one.
		target = dest + ".new"
		os.Remove(target)
	}
	info, err := memory.Backup(ctx, cfg.Storage.Path, target)
	if err != nil {
		return err
	}
	if target != dest {
		if err := os.Rename(target, dest); err != nil {
			os.Remove(target)
			return fmt.Errorf("replace %s: %w", dest, err)
		}
		info.Path = dest
	}
	fmt.Fprintf(a.stdout, "backup written to %s: %s in %s, integrity check ok, schema version %d\n",
		info.Path, human.Bytes(info.Bytes), info.Duration.Round(time.Millisecond), info.SchemaVersion)
	printCounts(a.stdout, info.Counts)
	return nil
}

func printCounts(out io.Writer, c memory.Counts) {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "  sessions\t%d\n", c.Sessions)
	fmt.Fprintf(w, "  messages\t%d\n", c.Messages)
	fmt.Fprintf(w, "  memory entries\t%d MEMORY documents, %d HISTORY entries\n", c.Memory, c.History)
	if c.HasJobs {
		fmt.Fprintf(w, "  jobs\t%d scheduled", c.Jobs)
		if c.EndedJobs > 0 {
			fmt.Fprintf(w, " (and %d finished or removed, kept for their usage)", c.EndedJobs)
		}
		fmt.Fprintln(w)
	} else {
		fmt.Fprintf(w, "  jobs\tnone (no scheduled jobs in this schema)\n")
	}
	w.Flush()
}

// restoreCmd is `nanobot restore FILE`: replace the database with a backup,
// keeping the current one. It refuses while a gateway holds the database.
func (a *app) restoreCmd(ctx context.Context, cfgPath string, args []string) error {
	fs := newFlags("restore", a.stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageError{"usage: nanobot restore FILE"}
	}
	cfg, err := a.loadConfig(cfgPath)
	if err != nil {
		return err
	}
	db := cfg.Storage.Path
	lock, err := memory.TryLock(db)
	if err != nil {
		var held *memory.LockedError
		if errors.As(err, &held) {
			return gatewayRunning(db, held)
		}
		return err
	}
	defer lock.Release()

	info, err := memory.Restore(ctx, fs.Arg(0), db, time.Now())
	if err != nil {
		if info.KeptAs != "" {
			return fmt.Errorf("%w (the previous database is kept as %s)", err, info.KeptAs)
		}
		return err
	}
	fmt.Fprintf(a.stdout, "restored %s into %s (%s, integrity check ok)\n", fs.Arg(0), db, human.Bytes(info.Backup.Bytes))
	printCounts(a.stdout, info.Backup.Counts)
	if info.FromVersion != info.ToVersion {
		fmt.Fprintf(a.stdout, "schema migrated from version %d to %d\n", info.FromVersion, info.ToVersion)
	} else {
		fmt.Fprintf(a.stdout, "schema version %d, up to date\n", info.ToVersion)
	}
	if info.KeptAs != "" {
		fmt.Fprintf(a.stdout, "the replaced database is kept as %s\n", info.KeptAs)
	}
	if info.LitestreamDir != "" {
		fmt.Fprintf(a.stdout, "Litestream's state of the replaced database is in %s: remove it before Litestream starts again (see deploy/README.md)\n", info.LitestreamDir)
	}
	fmt.Fprintln(a.stdout, "start the gateway again to use it")
	return nil
}

// errGatewayRunning is a refusal to change a database a gateway holds.
var errGatewayRunning = errors.New("a gateway is running on this database")

func gatewayRunning(db string, held *memory.LockedError) error {
	return fmt.Errorf("%w: %s holds %s; stop the gateway first (systemctl stop nanobot, docker compose stop nanobot, "+
		"kubectl scale deploy/nanobot --replicas=0, or Ctrl-C in its terminal), restore, then start it again", errGatewayRunning, holder(held), db)
}

// holder names the process holding a database's lock: a gateway, or a
// restore under way.
func holder(held *memory.LockedError) string {
	if held.PID > 0 {
		return fmt.Sprintf("nanobot process %d", held.PID)
	}
	return "another nanobot process"
}

// gatewayState says whether a gateway holds the database, for `nanobot
// status`.
func gatewayState(db string) string {
	lock, err := memory.TryLock(db)
	var held *memory.LockedError
	switch {
	case errors.As(err, &held):
		return "running (" + holder(held) + " holds the database)"
	case err != nil:
		return "unknown: " + err.Error()
	}
	lock.Release()
	return "not running"
}

// tokenRejection reports, for `nanobot status`, a bot token Telegram
// rejected on the gateway's last run.
func tokenRejection(ctx context.Context, w io.Writer, st *memory.Store) []string {
	v, err := st.State(ctx, telegram.TokenRejectedKey)
	if err != nil || v == "" {
		return nil
	}
	at, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return nil
	}
	when := at.Local().Format("2006-01-02 15:04")
	fmt.Fprintf(w, "telegram token\tREJECTED by Telegram at %s (revoked or replaced?)\n", when)
	return []string{fmt.Sprintf("channels.telegram.token: Telegram rejected the token at %s: set TELEGRAM_BOT_TOKEN to the current token from @BotFather and start the gateway", when)}
}

// backupStatus is `nanobot status`'s line about storage.backup.
func backupStatus(w io.Writer, cfg *config.Config) {
	bc, ok := daemon.BackupConfig(cfg)
	if !ok {
		fmt.Fprintf(w, "backups\toff (storage.backup.dir is empty)\n")
		return
	}
	s, err := backup.New(bc, nil, nil)
	if err != nil {
		fmt.Fprintf(w, "backups\t%s: %v\n", bc.Dir, err)
		return
	}
	line := strings.TrimPrefix(daemon.DescribeBackups(s.Status(), bc.Every, time.Now()), "Backups: ")
	fmt.Fprintf(w, "backups\t%s, keep %d, in %s\n", line, bc.Keep, bc.Dir)
}
