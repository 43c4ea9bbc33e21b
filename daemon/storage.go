package daemon

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-telegram/bot"

	"github.com/nanobot-go/nanobot/config"
	"github.com/nanobot-go/nanobot/memory"
	"github.com/nanobot-go/nanobot/memory/backup"
	"github.com/nanobot-go/nanobot/session"
)

// StorageError is a database the daemon cannot run on as it is (damaged,
// not writable, or missing where a replica holds it): restarting cannot
// help, so it exits 78 with what to do.
type StorageError struct {
	msg string
	err error
}

func (e *StorageError) Error() string { return e.msg }
func (e *StorageError) Unwrap() error { return e.err }

// StorageProblem explains an error opening the configured database: a
// damaged file names itself and the backup to restore, a read-only one
// says what still works. Other errors keep their text.
func StorageProblem(cfg *config.Config, err error) error {
	var damaged *memory.DamagedError
	var readOnly *memory.ReadOnlyError
	switch {
	case errors.As(err, &damaged):
		return &StorageError{msg: fmt.Sprintf("%s. Restarting will not help. %s", damaged, restoreAdvice(cfg)), err: err}
	case errors.As(err, &readOnly):
		return &StorageError{msg: fmt.Sprintf("%s. The gateway and the commands that write (memory edit and import, cron add and remove, restore) need the data directory writable: "+
			"fix its owner or mount it read-write. Reading commands (status, memory show, memory history, audit, usage, cron list) work as they are.", readOnly), err: err}
	}
	return fmt.Errorf("open storage: %w", err)
}

// restoreAdvice says how to get the database back: the newest backup of
// storage.backup when there is one.
func restoreAdvice(cfg *config.Config) string {
	const how = "With the gateway stopped, restore the newest backup: nanobot restore "
	kept := " (the damaged file is kept beside it as " + filepath.Base(cfg.Storage.Path) + ".before-restore-TIME). A Litestream replica: see deploy/README.md."
	if bc, ok := BackupConfig(cfg); ok {
		if s, err := backup.New(bc, nil, nil); err == nil {
			if st := s.Status(); st.LastPath != "" {
				return how + st.LastPath + fmt.Sprintf(" (taken %s)", st.LastSuccess.UTC().Format("2006-01-02 15:04 UTC")) + kept
			}
		}
		return "There is no backup in storage.backup.dir (" + bc.Dir + ") yet. With the gateway stopped, restore one you have: nanobot restore FILE" + kept
	}
	return how + "FILE (storage.backup is off, so nanobot has taken none)" + kept
}

// EmptyStart refuses to start on a database that does not exist yet when
// Litestream has replicated it: the replica holds the real one, and an
// empty database started now would both hide it and make `litestream
// restore` refuse ("output path already exists").
func EmptyStart(cfg *config.Config, allowed bool) error {
	path := cfg.Storage.Path
	ls := memory.LitestreamDir(path)
	if allowed || cfg.Storage.AllowEmptyStart || ls == "" || !memory.Fresh(path) {
		return nil
	}
	return &StorageError{msg: fmt.Sprintf("%s does not exist, but Litestream has replicated it (its state is in %s): restore the replica first "+
		"(compose: docker compose --profile litestream run --rm --no-deps litestream restore -if-replica-exists %s; see deploy/README.md), "+
		"or start with an empty database on purpose with --allow-empty-start or storage.allow_empty_start: true", path, ls, path)}
}

// dbHealth is what the gateway knows of its database's soundness: the
// result of the last PRAGMA quick_check, run at start and after a failed
// backup. Damage is reported in /readyz, /status and the metrics, and told
// to the owner once.
type dbHealth struct {
	mu      sync.Mutex
	damaged error // the last check's finding; nil when sound
	told    bool
}

func (h *dbHealth) set(err error) (first bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.damaged = err
	first = err != nil && !h.told
	if first {
		h.told = true
	}
	return first
}

func (h *dbHealth) problem() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.damaged
}

// checkDatabase runs PRAGMA quick_check on the gateway's database and
// records its finding. A damaged database is reported where the owner
// looks, and, with tell (the gateway runs), once on Telegram.
func (r *Daemon) checkDatabase(ctx context.Context, tell bool) error {
	start := time.Now()
	err := r.store.QuickCheck(ctx)
	dur := time.Since(start)
	var damaged *memory.DamagedError
	if err != nil && !errors.As(err, &damaged) {
		r.logger.Warn("database check did not run", "err", err, "dur", dur)
		return nil
	}
	r.metrics.DatabaseDamaged(err != nil)
	first := r.health.set(err)
	if err == nil {
		r.logger.Info("database checked", "result", "ok", "dur", dur)
		return nil
	}
	msg := StorageProblem(r.Config(), err).Error()
	r.logger.Error("database damaged", "err", msg, "dur", dur)
	if owner := r.Config().Owner(); first && owner != "" && tell {
		r.notifyChat(ctx, session.Chat("telegram", owner).String(), "The database is damaged: "+msg)
	}
	return err
}

// tellDamageOnce tells the owner on Telegram, straight through the Bot
// API, that the gateway cannot start on a damaged database: a supervisor
// restarts it again and again, and the owner of an unattended daemon reads
// Telegram, not its log. A file beside the database remembers what was
// told, so the restarts do not repeat it; where that file cannot be
// written, nothing is sent.
func tellDamageOnce(ctx context.Context, cfg *config.Config, msg string, logger *slog.Logger) {
	t := cfg.Channels.Telegram
	owner, err := strconv.ParseInt(cfg.Owner(), 10, 64)
	if !t.Enabled || t.Token == "" || err != nil {
		return
	}
	marker := damageMarker(cfg)
	sum := sha256.Sum256([]byte(msg))
	digest := hex.EncodeToString(sum[:])
	if told, err := os.ReadFile(marker); err == nil && strings.TrimSpace(string(told)) == digest {
		return
	}
	if err := os.WriteFile(marker, []byte(digest+"\n"), 0o600); err != nil {
		logger.Warn("cannot record that the owner was told of the damage; not telling", "err", err)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	b, err := bot.New(string(t.Token), bot.WithSkipGetMe(), bot.WithServerURL(t.APIURL))
	if err == nil {
		_, err = b.SendMessage(ctx, &bot.SendMessageParams{ChatID: owner, Text: "nanobot cannot start: " + msg})
	}
	if err != nil {
		os.Remove(marker) // the next start tries again
		logger.Warn("cannot tell the owner of the damage on Telegram", "err", NewRedactor(cfg).Redact(err.Error()))
	}
}

// damageMarker is the file that remembers what the owner was told of a
// damaged database.
func damageMarker(cfg *config.Config) string { return cfg.Storage.Path + ".damage-told" }

// DamageNotice is tellDamageOnce for a gateway that could not start: err
// is why, told only when it is a damaged database. Its own log lines go
// to stderr.
func DamageNotice(ctx context.Context, cfg *config.Config, err error, stderr io.Writer) {
	var damaged *memory.DamagedError
	if !errors.As(err, &damaged) {
		return
	}
	secrets := NewRedactor(cfg)
	tellDamageOnce(ctx, cfg, secrets.Redact(err.Error()), NewLogger(stderr, cfg.Log, new(slog.LevelVar), secrets.Redact))
}
