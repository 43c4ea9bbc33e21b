package openai

import (
	"context"
	"errors"
	"log/slog"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/agent"
)

// Chain is a Provider over endpoints tried in order: the primary, then its
// fallbacks. An endpoint that still fails after its own retries in a way
// another endpoint might not (unreachable, timed out, overloaded, 5xx, an
// unreadable reply) is skipped for the cooldown, and the next one is asked.
// A refusal of the request itself (400, 401, a context overflow) is
// returned at once: another endpoint would refuse it too, or should not
// silently get it. It is safe for concurrent use.
type Chain struct {
	eps      []*endpoint
	cooldown time.Duration
	log      *slog.Logger
	now      func() time.Time
	onAnswer func(endpoint string)

	mu       sync.Mutex
	answered string // the endpoint that answered last
}

type endpoint struct {
	name string // model@host, never the key or the path
	p    *Provider
	// downUntil is when a failed endpoint is tried first again.
	downUntil time.Time
}

var _ agent.Provider = (*Chain)(nil)

// NewChain returns a Chain over primary and fallbacks, in that order.
// onAnswer, when not nil, is told the name of each endpoint that answers.
func NewChain(primary *Provider, fallbacks []*Provider, cooldown time.Duration, logger *slog.Logger, onAnswer func(endpoint string)) *Chain {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if onAnswer == nil {
		onAnswer = func(string) {}
	}
	c := &Chain{cooldown: cooldown, log: logger, now: time.Now, onAnswer: onAnswer}
	for _, p := range append([]*Provider{primary}, fallbacks...) {
		c.eps = append(c.eps, &endpoint{name: EndpointName(p.cfg.BaseURL, p.cfg.Model), p: p})
	}
	return c
}

// EndpointName names an endpoint for logs, metrics and /status: the model
// and the host, without credentials or path.
func EndpointName(baseURL, model string) string {
	host := baseURL
	if u, err := url.Parse(baseURL); err == nil && u.Host != "" {
		host = u.Host
	}
	return model + "@" + host
}

// Complete asks the endpoints in order, those cooling down after a failure
// last, until one answers. The error is the last endpoint's.
func (c *Chain) Complete(ctx context.Context, req agent.Request) (agent.Response, error) {
	var err error
	for _, ep := range c.order() {
		var resp agent.Response
		resp, err = ep.p.Complete(ctx, req)
		if err == nil {
			c.up(ep)
			return resp, nil
		}
		var perr *Error
		if ctx.Err() != nil || !errors.As(err, &perr) || !perr.Transient {
			return agent.Response{}, err
		}
		c.down(ctx, ep, perr)
	}
	return agent.Response{}, err
}

// Primary is the first endpoint, the one the config names.
func (c *Chain) Primary() *Provider { return c.eps[0].p }

// Answered names the endpoint that answered the latest call ("" before any).
func (c *Chain) Answered() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.answered
}

// EndpointState is one endpoint of the chain as the dashboard shows it.
type EndpointState struct {
	Name      string
	DownUntil time.Time // zero: available
}

// Endpoints are the chain's endpoints in configured order.
func (c *Chain) Endpoints() []EndpointState {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]EndpointState, 0, len(c.eps))
	for _, ep := range c.eps {
		st := EndpointState{Name: ep.name}
		if c.now().Before(ep.downUntil) {
			st.DownUntil = ep.downUntil
		}
		out = append(out, st)
	}
	return out
}

// order is the endpoints to try: the available ones in configured order,
// then those cooling down, soonest back first.
func (c *Chain) order() []*endpoint {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	var ready, cooling []*endpoint
	for _, ep := range c.eps {
		if now.Before(ep.downUntil) {
			cooling = append(cooling, ep)
		} else {
			ready = append(ready, ep)
		}
	}
	slices.SortStableFunc(cooling, func(a, b *endpoint) int { return a.downUntil.Compare(b.downUntil) })
	return append(ready, cooling...)
}

func (c *Chain) down(ctx context.Context, ep *endpoint, err *Error) {
	c.mu.Lock()
	ep.downUntil = c.now().Add(c.cooldown)
	c.mu.Unlock()
	if len(c.eps) > 1 {
		c.logger(ctx).Warn("model endpoint failed; trying the next", "endpoint", ep.name, "error", err.Message, "cooldown", c.cooldown)
	}
}

func (c *Chain) up(ep *endpoint) {
	c.mu.Lock()
	ep.downUntil = time.Time{}
	c.answered = ep.name
	c.mu.Unlock()
	c.onAnswer(ep.name)
	if ep != c.eps[0] {
		c.log.Info("a fallback model endpoint answered", "endpoint", ep.name)
	}
}

func (c *Chain) logger(ctx context.Context) *slog.Logger {
	if t, ok := agent.TurnFrom(ctx); ok {
		return c.log.With("turn_id", t.ID, "session", t.Session)
	}
	return c.log
}
