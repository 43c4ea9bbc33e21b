package daemon

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/admin"
	"github.com/nanobot-go/nanobot/config"
	"github.com/nanobot-go/nanobot/internal/human"
	"github.com/nanobot-go/nanobot/memory"
	"github.com/nanobot-go/nanobot/memory/backup"
	"github.com/nanobot-go/nanobot/schedule"
)

// BackupConfig is the schedule storage.backup describes; ok is false when
// backups are off.
func BackupConfig(cfg *config.Config) (backup.Config, bool) {
	b := cfg.Storage.Backup
	if b.Dir == "" {
		return backup.Config{}, false
	}
	name := strings.TrimSuffix(filepath.Base(cfg.Storage.Path), filepath.Ext(cfg.Storage.Path))
	return backup.Config{Dir: b.Dir, Every: b.Every, Keep: b.Keep, Name: name}, true
}

// newBackups builds the storage.backup schedule, nil when backups are off.
// Its attempts reach the metrics, its status /status; clock is the
// daemon's.
func newBackups(rt *Daemon, metrics *admin.Metrics, clock schedule.Clock) (*backup.Schedule, error) {
	bc, ok := BackupConfig(rt.Config())
	if !ok {
		return nil, nil
	}
	bc.Clock = backupClock{clock}
	bc.Observe = func(info memory.BackupInfo, err error) {
		if err != nil {
			metrics.Backup(admin.OutcomeError)
			// A backup reads every page: its failure may be the first
			// sign of damage the daemon's own queries have not met.
			rt.checkDatabase(context.Background(), true)
			return
		}
		metrics.Backup(admin.OutcomeOK)
		metrics.LastBackup(time.Now(), info.Bytes)
	}
	s, err := backup.New(bc, rt.store, rt.logger)
	if err != nil {
		return nil, &config.Error{File: rt.Config().Path, Key: "storage.backup.dir", Problem: err.Error()}
	}
	st := s.Status()
	metrics.LastBackup(st.LastSuccess, st.LastBytes)
	rt.setBackups(s)
	return s, nil
}

// backupClock is the daemon's clock as the backup schedule reads it.
type backupClock struct{ schedule.Clock }

func (c backupClock) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	c.AfterFunc(d, func() { ch <- c.Now() })
	return ch
}

func (r *Daemon) setBackups(s *backup.Schedule) {
	r.mu.Lock()
	r.backups = s
	r.mu.Unlock()
}

// backupLine is /status's line about backups; "" when they are off.
func (r *Daemon) backupLine() string {
	r.mu.RLock()
	s, every := r.backups, r.cfg.Storage.Backup.Every
	r.mu.RUnlock()
	if s == nil {
		return ""
	}
	return DescribeBackups(s.Status(), every, time.Now())
}

func DescribeBackups(st backup.Status, every time.Duration, now time.Time) string {
	line := fmt.Sprintf("Backups: every %s, none yet", config.FormatDuration(every))
	if !st.LastSuccess.IsZero() {
		ago := "less than a minute ago"
		if d := now.Sub(st.LastSuccess); d >= time.Minute {
			ago = config.FormatDuration(d.Round(time.Minute)) + " ago"
		}
		line = fmt.Sprintf("Backups: every %s, last %s (%s, %s)", config.FormatDuration(every),
			st.LastSuccess.UTC().Format("2006-01-02 15:04 UTC"), ago, human.Bytes(st.LastBytes))
	}
	if st.LastError != "" && st.LastErrorAt.After(st.LastSuccess) {
		line += fmt.Sprintf("; the attempt at %s failed: %s", st.LastErrorAt.UTC().Format("2006-01-02 15:04 UTC"), st.LastError)
	}
	return line
}
