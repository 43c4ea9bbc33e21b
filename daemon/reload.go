package daemon

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/session"
)

// rejectedEdit is the last edit of config.yaml the running gateway
// refused: it keeps running on the config it had, which /status says
// until a valid edit is read, and the owner is told once per problem.
type rejectedEdit struct {
	mu   sync.Mutex
	err  string // "" when the file in use is the file on disk
	at   time.Time
	told string // the problem the owner was last told of
}

// set records a refused edit and reports whether the owner is yet to hear
// of this problem.
func (r *rejectedEdit) set(err string, at time.Time) (tell bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.err, r.at = err, at
	tell = r.told != err
	r.told = err
	return tell
}

func (r *rejectedEdit) clear() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.err, r.told = "", ""
}

// line is /status's line about it; "" when there is nothing to say.
func (r *rejectedEdit) line() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == "" {
		return ""
	}
	return fmt.Sprintf("Config: the edit read at %s was rejected, so the previous config is still in use: %s",
		r.at.UTC().Format("2006-01-02 15:04 UTC"), r.err)
}

// configRejected records that an edit of config.yaml was refused, and
// tells the owner once.
func (r *Daemon) configRejected(ctx context.Context, err error) {
	text := r.secrets.Redact(err.Error())
	r.logger.Error("config reload rejected; keeping the running config", "err", text)
	if !r.rejected.set(text, r.now()) {
		return
	}
	if owner := r.Config().Owner(); owner != "" {
		r.notifyChat(ctx, session.Chat("telegram", owner).String(), "Your edit of the config was rejected; I am still running on the previous one. "+text)
	}
}
