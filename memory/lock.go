package memory

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ErrLocked is returned by Lock when another process holds the lock.
var ErrLocked = errors.New("the database is in use")

// LockedError names the process holding a database's lock.
type LockedError struct {
	Path string // the lock file
	PID  int    // 0 when the holder did not write it
}

func (e *LockedError) Error() string {
	if e.PID > 0 {
		return fmt.Sprintf("%s: held by process %d", e.Path, e.PID)
	}
	return e.Path + ": held by another process"
}

func (e *LockedError) Unwrap() error { return ErrLocked }

// Lock is an exclusive advisory lock (flock) on the file path+".lock" next to
// a database, held by the one long-running owner of the database (the
// gateway) and by a restore, so neither starts while the other runs. The
// kernel releases it when the process exits, however it exits, so a crash
// never leaves a stale lock behind. flock works between containers sharing a
// volume on one host, not over NFS.
type Lock struct {
	f *os.File
}

// LockPath is the lock file of the database at dbPath.
func LockPath(dbPath string) string { return dbPath + ".lock" }

// TryLock takes the lock of the database at dbPath without waiting. When
// another process holds it, the error is a *LockedError (matching ErrLocked).
func TryLock(dbPath string) (*Lock, error) {
	path := LockPath(dbPath)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("lock database: %w", classify(path, err))
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock database: %w", classify(path, err))
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, &LockedError{Path: path, PID: holder(f)}
		}
		return nil, fmt.Errorf("lock database: %w", err)
	}
	// The holder's pid, for the message another process shows.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &Lock{f: f}, nil
}

func holder(f *os.File) int {
	buf := make([]byte, 32)
	n, _ := f.ReadAt(buf, 0)
	pid, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if err != nil {
		return 0
	}
	return pid
}

// Release gives the lock up. The file stays: removing it would race with a
// process that just opened it.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	_ = l.f.Truncate(0)
	err := l.f.Close() // closing the last descriptor releases the flock
	l.f = nil
	if err != nil {
		return fmt.Errorf("release database lock: %w", err)
	}
	return nil
}
