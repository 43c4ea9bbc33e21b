package daemon

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/channels/approvals"
	"github.com/nanobot-go/nanobot/channels/web"
	"github.com/nanobot-go/nanobot/config"
	"github.com/nanobot-go/nanobot/memory"
)

// newWeb is the owner's web console when web.listen is set.
func newWeb(d *Daemon, cfg *config.Config, version string, details func(context.Context) []string) (*web.Web, *listener, error) {
	wc := cfg.WebConsole
	if wc.Listen == "" {
		return nil, nil, nil
	}
	m := d.metrics
	w, err := web.New(web.Config{Listen: wc.Listen, PublicURL: wc.PublicURL, Version: version, Owner: cfg.Owner(),
		ApprovalTimeout: cfg.Tools.Exec.ApprovalTimeout},
		web.Deps{Store: d.store, Engine: d.turns, Sessions: d, Auth: WebAuth{d.store}, Bell: d.bell.For(web.Channel),
			Dashboard: dashboard{d: d, details: details}},
		d.logger, web.Hooks{Inbound: func() { m.InboundMessage(web.Channel) }, SignIn: m.WebSignIn, Request: m.WebRequest})
	if err != nil {
		return nil, nil, &config.Error{File: cfg.Path, Key: "web.listen", Problem: err.Error()}
	}
	return w, &listener{srv: w, key: "web.listen", done: make(chan struct{})}, nil
}

// WebAuth keeps the console's sign-in links and sessions in the store.
type WebAuth struct{ S *memory.Store }

func (a WebAuth) AddLogin(ctx context.Context, hash string, expires time.Time) error {
	return a.S.AddWebLogin(ctx, hash, expires)
}

func (a WebAuth) TakeLogin(ctx context.Context, hash string, now time.Time) (bool, error) {
	return a.S.TakeWebLogin(ctx, hash, now)
}

func (a WebAuth) AddSession(ctx context.Context, s web.SignedIn, hash string) error {
	return a.S.AddWebSession(ctx, memory.WebSession{ID: s.ID, Agent: s.Agent, Created: s.Created, LastSeen: s.LastSeen, Expires: s.Expires}, hash)
}

func (a WebAuth) SessionByHash(ctx context.Context, hash string, now time.Time) (web.SignedIn, bool, error) {
	s, ok, err := a.S.WebSessionByHash(ctx, hash, now)
	return signedIn(s), ok, err
}

func (a WebAuth) Sessions(ctx context.Context, now time.Time) ([]web.SignedIn, error) {
	all, err := a.S.WebSessions(ctx, now)
	out := make([]web.SignedIn, 0, len(all))
	for _, s := range all {
		out = append(out, signedIn(s))
	}
	return out, err
}

func (a WebAuth) RevokeSession(ctx context.Context, id string) (bool, error) {
	return a.S.RevokeWebSession(ctx, id)
}

func signedIn(s memory.WebSession) web.SignedIn {
	return web.SignedIn{ID: s.ID, Agent: s.Agent, Created: s.Created, LastSeen: s.LastSeen, Expires: s.Expires}
}

// approvalRoute asks the owner where the turn's chat is: in the console
// for its own turns while a page of it is open, on Telegram otherwise.
type approvalRoute struct {
	telegram approvals.Asker
	console  *web.Web // nil when the console is off
}

func (r approvalRoute) Approve(ctx context.Context, command, reason string) (bool, string, error) {
	if t, _ := agent.TurnFrom(ctx); r.console != nil && t.Channel == web.Channel {
		ok, note, err := r.console.Approve(ctx, command, reason)
		if !errors.Is(err, web.ErrNoPage) {
			return ok, note, err
		}
	}
	return r.telegram.Approve(ctx, command, reason)
}

// statusLines are the lines of a status text.
func statusLines(text string) []string {
	var out []string
	for line := range strings.SplitSeq(text, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			out = append(out, line)
		}
	}
	return out
}
