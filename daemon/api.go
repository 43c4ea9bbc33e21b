package daemon

import (
	"context"
	"errors"
	"sync"

	"github.com/nanobot-go/nanobot/channels/api"
	"github.com/nanobot-go/nanobot/config"
)

// served is a channel with an address of its own: the API, the console.
type served interface {
	Listen() error
	Run(ctx context.Context) error
	Status() string
}

// listener is a channel served beside Telegram on an address of its own.
type listener struct {
	srv    served
	key    string               // its config key, for a start that fails
	reload func(*config.Config) // applies an edited config; nil: nothing to apply
	mu     sync.Mutex
	err    error // why it stopped serving; nil while it serves
	done   chan struct{}
}

// newAPI is the OpenAI-compatible API channel when api.listen is set.
func newAPI(d *Daemon, cfg *config.Config) *listener {
	if cfg.API.Listen == "" {
		return nil
	}
	m := d.metrics
	a := api.New(api.Config{Listen: cfg.API.Listen, Keys: apiKeys(cfg)}, d.store, d.turns, d.bell.For(api.Channel), d.logger,
		api.Hooks{Inbound: func() { m.InboundMessage(api.Channel) }, Request: m.APIRequest})
	return &listener{srv: a, key: "api.listen", done: make(chan struct{}), reload: func(next *config.Config) {
		if err := a.SetKeys(apiKeys(next)); err != nil {
			d.logger.Error("config reload: api.keys kept as they were", "err", err)
		}
	}}
}

func apiKeys(cfg *config.Config) []api.Key {
	keys := make([]api.Key, 0, len(cfg.API.Keys))
	for _, k := range cfg.API.Keys {
		keys = append(keys, api.Key{Secret: string(k.Key), Name: k.Name, Chat: k.ChatName()})
	}
	return keys
}

// start binds the address and serves until ctx ends; a port in use is a
// config error naming the key.
func (l *listener) start(ctx context.Context, cfg *config.Config) error {
	if l == nil {
		return nil
	}
	if err := l.srv.Listen(); err != nil {
		return &config.Error{File: cfg.Path, Key: l.key, Problem: err.Error()}
	}
	go func() {
		defer close(l.done)
		err := l.srv.Run(ctx)
		if err == nil && ctx.Err() == nil {
			err = errors.New("stopped serving")
		}
		l.mu.Lock()
		l.err = err
		l.mu.Unlock()
	}()
	return nil
}

// wait waits until the listener stopped.
func (l *listener) wait() {
	if l != nil {
		<-l.done
	}
}

// problem is why the listener no longer serves, for /readyz.
func (l *listener) problem() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// details is /readyz's line about the listener.
func (l *listener) details() []string {
	if l == nil {
		return nil
	}
	return []string{l.srv.Status()}
}

// reconfigure applies an edited config.
func (l *listener) reconfigure(next *config.Config) {
	if l != nil && l.reload != nil {
		l.reload(next)
	}
}
