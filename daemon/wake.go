package daemon

import (
	"context"
	"errors"
	"os"
	"strconv"
	"time"

	"github.com/nanobot-go/nanobot/memory"
)

// The command line tells a running gateway that it changed what the
// gateway serves (queued an answer, added or removed a job) by writing the
// wake file beside the database. The gateway looks at it as often as at
// its config file, so this needs no signal, no port and no shared PID
// namespace: a container's volume is enough.

// wakePath is the wake file of the database at db.
func wakePath(db string) string { return db + ".wake" }

// WakeGateway asks the gateway running on db, if any, to look at the
// outbox and the jobs now. It reports whether a gateway holds db and
// whether the wake file was written.
func WakeGateway(db string) (running, woken bool) {
	lock, err := memory.TryLock(db)
	var held *memory.LockedError
	switch {
	case errors.As(err, &held):
		running = true
	case err == nil:
		lock.Release()
		return false, false
	default:
		running = true // unknown: wake it in case
	}
	stamp := strconv.FormatInt(time.Now().UnixNano(), 10)
	return running, os.WriteFile(wakePath(db), []byte(stamp), 0o644) == nil
}

// watchWake calls wake whenever the wake file of db changes, checking it
// every interval until ctx ends. The file's state at the start is no
// change; a missing file is none either.
func watchWake(ctx context.Context, db string, every time.Duration, wake func()) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	w := fileWatch{path: wakePath(db)}
	w.edited(false) // the content (a time in nanoseconds) tells a new wake from an old one
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if _, edited, err := w.edited(false); err == nil && edited {
			wake()
		}
	}
}
