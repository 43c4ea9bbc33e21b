// Package backup takes the gateway's periodic database backups: a checked
// copy every interval into a directory, the newest few kept, the last
// success remembered for /status and the metrics. It knows time and files;
// the copy itself is the store's (memory.Backup).
package backup

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/memory"
)

// Source makes a checked copy of the database at dest; *memory.Store
// satisfies it.
type Source interface {
	Backup(ctx context.Context, dest string) (memory.BackupInfo, error)
}

// Clock is the time the schedule runs on; tests pass a fake one.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Config is storage.backup plus what the schedule is built with.
type Config struct {
	Dir   string        // where the copies go, created if missing
	Every time.Duration // the interval between backups
	Keep  int           // how many copies stay; older ones are removed
	// Name is the copies' file name prefix: Name-20060102T150405Z.db.
	Name  string
	Clock Clock // nil: the real clock
	// Observe, if set, is told of every attempt (err nil on success).
	Observe func(info memory.BackupInfo, err error)
}

// Status is what the schedule last did.
type Status struct {
	LastSuccess time.Time // zero before the first backup
	LastPath    string
	LastBytes   int64
	LastError   string // of the last attempt, if it failed
	LastErrorAt time.Time
}

// Schedule takes the backups. Create it with New and start it with Run.
type Schedule struct {
	cfg Config
	src Source
	log *slog.Logger

	mu     sync.Mutex
	status Status
}

const (
	timeLayout = "20060102T150405Z"
	// maxRetry bounds the wait after a failed backup.
	maxRetry = time.Hour
)

// New checks cfg and picks up the newest copy already in cfg.Dir, so a
// restarted gateway keeps the rhythm and reports the last success. src may
// be nil for a schedule that is only asked for its Status.
func New(cfg Config, src Source, logger *slog.Logger) (*Schedule, error) {
	if cfg.Dir == "" || cfg.Every <= 0 || cfg.Keep < 1 || cfg.Name == "" {
		return nil, errors.New("backup schedule needs a directory, an interval, a name and at least one copy to keep")
	}
	if cfg.Clock == nil {
		cfg.Clock = realClock{}
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Schedule{cfg: cfg, src: src, log: logger.With("component", "backup")}
	copies, err := s.copies()
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("read backup directory: %w", err)
	}
	if len(copies) > 0 {
		newest := copies[0]
		s.status.LastSuccess, s.status.LastPath = newest.at, newest.path
		if fi, err := os.Stat(newest.path); err == nil {
			s.status.LastBytes = fi.Size()
		}
	}
	return s, nil
}

// Status returns what the schedule last did.
func (s *Schedule) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status
}

// Run takes a backup whenever one is due until ctx ends: at once when the
// newest copy is older than the interval (or there is none), then every
// interval; a failed attempt is retried after the interval or an hour,
// whichever is shorter.
func (s *Schedule) Run(ctx context.Context) {
	for {
		if wait := s.next().Sub(s.cfg.Clock.Now()); wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-s.cfg.Clock.After(wait):
			}
		}
		if ctx.Err() != nil {
			return
		}
		s.Once(ctx)
	}
}

// next is when the next backup is due.
func (s *Schedule) next() time.Time {
	st := s.Status()
	next := st.LastSuccess.Add(s.cfg.Every)
	if st.LastSuccess.IsZero() {
		next = time.Time{}
	}
	if st.LastErrorAt.After(st.LastSuccess) {
		if retry := st.LastErrorAt.Add(min(s.cfg.Every, maxRetry)); retry.After(next) {
			next = retry
		}
	}
	return next
}

// Once takes one backup now and removes the copies beyond Keep.
func (s *Schedule) Once(ctx context.Context) (memory.BackupInfo, error) {
	now := s.cfg.Clock.Now().UTC()
	dest := filepath.Join(s.cfg.Dir, s.cfg.Name+"-"+now.Format(timeLayout)+".db")
	info, err := s.src.Backup(ctx, dest)
	if s.cfg.Observe != nil {
		s.cfg.Observe(info, err)
	}
	s.mu.Lock()
	if err != nil {
		s.status.LastError, s.status.LastErrorAt = err.Error(), now
	} else {
		s.status = Status{LastSuccess: now, LastPath: info.Path, LastBytes: info.Bytes}
	}
	s.mu.Unlock()
	if err != nil {
		if ctx.Err() == nil {
			s.log.Error("backup failed", "dest", dest, "err", err, "retry_in", min(s.cfg.Every, maxRetry))
		}
		return info, err
	}
	s.log.Info("backup written", "path", info.Path, "bytes", info.Bytes, "dur", info.Duration.Round(time.Millisecond),
		"sessions", info.Counts.Sessions, "messages", info.Counts.Messages)
	s.prune()
	return info, nil
}

type copyFile struct {
	path string
	at   time.Time
}

// copies lists the schedule's own copies in Dir, newest first. Other files
// are never touched.
func (s *Schedule) copies() ([]copyFile, error) {
	entries, err := os.ReadDir(s.cfg.Dir)
	if err != nil {
		return nil, err
	}
	var out []copyFile
	for _, e := range entries {
		stamp, ok := strings.CutPrefix(e.Name(), s.cfg.Name+"-")
		if !ok || !e.Type().IsRegular() {
			continue
		}
		stamp, ok = strings.CutSuffix(stamp, ".db")
		if !ok {
			continue
		}
		at, err := time.Parse(timeLayout, stamp)
		if err != nil {
			continue
		}
		out = append(out, copyFile{path: filepath.Join(s.cfg.Dir, e.Name()), at: at})
	}
	slices.SortFunc(out, func(a, b copyFile) int { return b.at.Compare(a.at) })
	return out, nil
}

func (s *Schedule) prune() {
	copies, err := s.copies()
	if err != nil {
		s.log.Warn("list backups", "dir", s.cfg.Dir, "err", err)
		return
	}
	for _, c := range copies[min(s.cfg.Keep, len(copies)):] {
		if err := os.Remove(c.path); err != nil {
			s.log.Warn("remove old backup", "path", c.path, "err", err)
			continue
		}
		s.log.Info("old backup removed", "path", c.path)
	}
}
