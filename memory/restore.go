package memory

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// RestoreInfo describes a finished restore.
type RestoreInfo struct {
	Backup BackupInfo // the file restored from, as checked
	// KeptAs is where the replaced database was moved
	// (nanobot.db.before-restore-<time>); empty when there was none.
	KeptAs string
	// FromVersion and ToVersion are the schema versions before and after
	// the migrations the restore applied.
	FromVersion, ToVersion int
	// LitestreamDir is Litestream's state directory next to the database,
	// when there is one: it describes the replaced database and must be
	// removed before Litestream starts again.
	LitestreamDir string
}

// Restore replaces the database at dbPath with the backup at src. The
// backup is checked first (see Inspect) and copied next to the database; the
// current database, with its WAL, is then moved to
// dbPath+".before-restore-<time>", the copy takes its place, and opening it
// applies the migrations it lacks. The caller makes sure nothing else writes
// the database meanwhile (see TryLock).
func Restore(ctx context.Context, src, dbPath string, now time.Time) (RestoreInfo, error) {
	info, err := restore(ctx, src, dbPath, now)
	if err != nil {
		return info, fmt.Errorf("restore %s: %w", src, err)
	}
	return info, nil
}

func restore(ctx context.Context, src, dbPath string, now time.Time) (RestoreInfo, error) {
	dbPath, err := filepath.Abs(dbPath)
	if err != nil {
		return RestoreInfo{}, err
	}
	checked, err := Inspect(ctx, src)
	if err != nil {
		return RestoreInfo{}, err
	}
	info := RestoreInfo{Backup: checked, FromVersion: checked.SchemaVersion}
	if err := os.MkdirAll(filepath.Dir(dbPath), 0o700); err != nil {
		return info, err
	}

	incoming := dbPath + ".restoring"
	for _, p := range []string{incoming, incoming + "-wal", incoming + "-shm", incoming + "-journal"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return info, err
		}
	}
	if _, err := backup(ctx, src, incoming); err != nil {
		return info, fmt.Errorf("copy the backup: %w", err)
	}

	if _, err := os.Stat(dbPath); err == nil {
		kept, err := setAside(ctx, dbPath, now)
		if err != nil {
			os.Remove(incoming)
			return info, fmt.Errorf("keep the current database: %w", err)
		}
		info.KeptAs = kept
	} else if !errors.Is(err, os.ErrNotExist) {
		os.Remove(incoming)
		return info, err
	}
	if err := os.Rename(incoming, dbPath); err != nil {
		return info, err
	}
	if err := syncDir(filepath.Dir(dbPath)); err != nil {
		return info, err
	}

	s, err := Open(ctx, dbPath)
	if err != nil {
		return info, fmt.Errorf("migrate the restored database: %w", err)
	}
	info.ToVersion, err = userVersion(ctx, s.db)
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return info, err
	}
	info.LitestreamDir = LitestreamDir(dbPath)
	return info, nil
}

// setAside moves the database at path and its WAL to
// path.before-restore-<time>, where SQLite opens them together. A database
// that still opens is checkpointed first, so the kept file usually stands on
// its own; one too damaged to open is kept exactly as it was.
func setAside(ctx context.Context, path string, now time.Time) (string, error) {
	if db, err := openRaw(path, false); err == nil {
		_, _ = db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`)
		db.Close()
	}
	kept := path + ".before-restore-" + now.UTC().Format("20060102T150405Z")
	for n := 2; ; n++ {
		if _, err := os.Lstat(kept); errors.Is(err, os.ErrNotExist) {
			break
		}
		kept = path + ".before-restore-" + now.UTC().Format("20060102T150405Z") + "-" + strconv.Itoa(n)
	}
	if err := os.Rename(path, kept); err != nil {
		return "", err
	}
	for _, suffix := range []string{"-wal", "-journal"} {
		fi, err := os.Stat(path + suffix)
		switch {
		case errors.Is(err, os.ErrNotExist):
			continue
		case err != nil:
			return kept, err
		case fi.Size() == 0:
			err = os.Remove(path + suffix)
		default:
			err = os.Rename(path+suffix, kept+suffix)
		}
		if err != nil {
			return kept, err
		}
	}
	// The shared-memory index is rebuilt from the WAL; a stale one must not
	// meet the restored file.
	if err := os.Remove(path + "-shm"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return kept, err
	}
	return kept, nil
}
