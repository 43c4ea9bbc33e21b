package telegram

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/nanobot-go/nanobot/internal/backoff"
	"github.com/nanobot-go/nanobot/turns"
)

// allowedUpdates are the update kinds the channel asks Telegram for.
const allowedUpdates = `["message","callback_query"]`

const maxUpdateBytes = 4 << 20

// intake receives updates until ctx is done, with the watchdog beside it.
// It returns early only with an error wrapping ErrBadToken: Telegram
// rejected the token, and nothing but a new one helps.
func (c *Channel) intake(ctx context.Context) error {
	restarted := make(chan struct{}, 1)
	c.alive()
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	watching := make(chan struct{})
	go func() {
		defer close(watching)
		c.watch(watchCtx, restarted)
	}()
	defer func() { stopWatch(); <-watching }()
	if c.cfg.Mode == "webhook" {
		return c.serveWebhook(ctx, restarted)
	}
	return c.poll(ctx)
}

// poll long-polls getUpdates. The offset only moves past an update once it
// is recorded, so a crash at any point loses nothing: Telegram resends what
// was not acknowledged and the inbox drops what it already holds.
func (c *Channel) poll(ctx context.Context) error {
	var offset int64
	var wait time.Duration
	conflict := false // the 409 was explained; said again only after polling worked
	for ctx.Err() == nil {
		gen := c.tr.generation()
		raws, err := c.getUpdates(ctx, offset)
		if err == nil {
			var next int64
			next, err = c.acceptBatch(ctx, raws)
			// The offset is not saved: Telegram keeps what the last
			// getUpdates confirmed, and after a restart the inbox drops the
			// unconfirmed updates it already holds. Saving it would cost a
			// synced write per batch on the path of every message.
			offset = max(offset, next)
		}
		if err == nil {
			wait, conflict = 0, false
			continue
		}
		if ctx.Err() != nil {
			return nil
		}
		if c.tr.generation() != gen {
			// The watchdog cut this call off and said why; go again at once.
			wait = 0
			continue
		}
		if errors.Is(err, bot.ErrorUnauthorized) {
			c.tokenRejected(ctx)
			return fmt.Errorf("%w (getUpdates: %v)", ErrBadToken, err)
		}
		wait = backoff.Next(wait)
		if kind, after := classify(err); kind == failRetryAfter {
			wait = after
		}
		switch {
		case errors.Is(err, bot.ErrorConflict) && !conflict:
			conflict = true
			c.log.Error("telegram refused getUpdates with 409 Conflict: another program is polling with this bot token, or a webhook is set for it",
				"what_to_do", "stop the other nanobot (or any other program) using this token, since only one may poll; "+
					"a webhook set by another setup goes away when this gateway restarts in polling mode",
				"err", err, "retry_in", wait)
		case errors.Is(err, bot.ErrorConflict):
			c.log.Debug("getUpdates still in conflict", "retry_in", wait)
		default:
			c.log.Warn("fetch updates", "err", err, "retry_in", wait)
		}
		backoff.Sleep(ctx, wait)
	}
	return nil
}

// apiError is a Bot API refusal of a call the channel makes itself. It wraps
// the library's sentinels so classify treats it like the library's errors.
type apiError struct {
	method string
	code   int
	desc   string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("%s: telegram answered %d %s", e.method, e.code, e.desc)
}

func (e *apiError) Unwrap() error {
	switch e.code {
	case http.StatusUnauthorized:
		return bot.ErrorUnauthorized
	case http.StatusNotFound:
		return bot.ErrorNotFound
	case http.StatusConflict:
		return bot.ErrorConflict
	case http.StatusBadRequest:
		return bot.ErrorBadRequest
	case http.StatusForbidden:
		return bot.ErrorForbidden
	}
	return nil
}

// getUpdates is one long-poll call. Updates come back as raw JSON so the
// inbox stores exactly what Telegram sent.
func (c *Channel) getUpdates(ctx context.Context, offset int64) ([]json.RawMessage, error) {
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	fields := [][2]string{
		{"timeout", strconv.Itoa(max(int(c.cfg.PollTimeout/time.Second), 1))},
		{"allowed_updates", allowedUpdates},
	}
	if offset > 0 {
		fields = append(fields, [2]string{"offset", strconv.FormatInt(offset, 10)})
	}
	for _, f := range fields {
		if err := w.WriteField(f[0], f[1]); err != nil {
			return nil, fmt.Errorf("build getUpdates: %w", err)
		}
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("build getUpdates: %w", err)
	}
	callCtx, cancel := context.WithTimeout(ctx, c.cfg.PollTimeout+15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(callCtx, http.MethodPost, c.cfg.APIURL+"/bot"+c.cfg.Token+"/getUpdates", &body)
	if err != nil {
		return nil, c.scrub(fmt.Errorf("build getUpdates: %w", err))
	}
	req.Header.Set("Content-Type", w.FormDataContentType())
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, c.scrub(fmt.Errorf("getUpdates: %w", err))
	}
	defer resp.Body.Close()
	var env struct {
		OK          bool              `json:"ok"`
		Result      []json.RawMessage `json:"result"`
		ErrorCode   int               `json:"error_code"`
		Description string            `json:"description"`
		Parameters  struct {
			RetryAfter int `json:"retry_after"`
		} `json:"parameters"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&env); err != nil {
		return nil, c.scrub(fmt.Errorf("getUpdates: decode answer (HTTP %d): %w", resp.StatusCode, err))
	}
	c.alive() // Telegram answered: the connection works, whatever it said
	if !env.OK {
		if env.ErrorCode == http.StatusTooManyRequests {
			return nil, &bot.TooManyRequestsError{Message: env.Description, RetryAfter: env.Parameters.RetryAfter}
		}
		return nil, &apiError{method: "getUpdates", code: env.ErrorCode, desc: c.scrubText(env.Description)}
	}
	return env.Result, nil
}

// acceptBatch records updates in order and returns the offset that
// acknowledges the ones recorded; it stops at the first that cannot be.
func (c *Channel) acceptBatch(ctx context.Context, raws []json.RawMessage) (int64, error) {
	var next int64
	for _, raw := range raws {
		var head struct {
			ID int64 `json:"update_id"`
		}
		if err := json.Unmarshal(raw, &head); err != nil {
			c.log.Warn("skip update without an id", "err", err)
			continue
		}
		if err := c.accept(ctx, raw); err != nil {
			return next, err
		}
		next = head.ID + 1
	}
	return next, nil
}

// accept records one update (or, for a button press, handles it at once)
// and hands it to the dispatcher. An error means it was not recorded and
// must not be acknowledged.
func (c *Channel) accept(ctx context.Context, raw []byte) error {
	var u models.Update
	if err := json.Unmarshal(raw, &u); err != nil {
		// Keep it anyway: the dispatcher completes what it cannot read, and
		// the update is not fetched again and again.
		c.log.Warn("update does not decode", "err", err)
		var head struct {
			ID int64 `json:"update_id"`
		}
		if err := json.Unmarshal(raw, &head); err != nil {
			return nil
		}
		u = models.Update{ID: head.ID}
	}
	if u.CallbackQuery != nil {
		// Button presses only matter to an approval waiting right now, which
		// may be blocking its chat's queue: never queue them.
		c.handleCallback(u.CallbackQuery)
		return nil
	}
	if m := u.Message; m != nil && !c.allow.Load().permits(m.From, m.Chat.ID) {
		// Nothing of a stranger's is kept: at most a notice of their id.
		return c.turnAway(ctx, m)
	}
	item := turns.InboxItem{
		Channel:    channelName,
		UpdateID:   u.ID,
		Payload:    bytes.Clone(raw),
		State:      turns.InboxPending,
		ReceivedAt: c.now().UTC(),
	}
	if u.Message != nil {
		item.ChatID = strconv.FormatInt(u.Message.Chat.ID, 10)
	}
	id, inserted, err := c.store.RecordInbound(ctx, item)
	if err != nil {
		return fmt.Errorf("record update %d: %w", u.ID, err)
	}
	if !inserted {
		c.log.Debug("update already recorded", "update_id", u.ID)
		return nil
	}
	if c.hooks.Inbound != nil {
		c.hooks.Inbound()
	}
	item.ID = id
	c.turns.Add(ctx, item)
	return nil
}

// serveWebhook runs the HTTPS endpoint (TLS ends at the reverse proxy) and
// registers it with Telegram.
func (c *Channel) serveWebhook(ctx context.Context, restarted <-chan struct{}) error {
	ln, err := net.Listen("tcp", c.cfg.WebhookListen)
	if err != nil {
		return fmt.Errorf("channels.telegram.webhook.listen: %w", err)
	}
	addr := ln.Addr().String()
	c.webhookAddr.Store(&addr)
	route := "/"
	if u, err := url.Parse(c.cfg.WebhookURL); err == nil && u.Path != "" {
		route = u.Path
	}
	mux := http.NewServeMux()
	mux.Handle("POST "+route, c.webhookHandler())
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	fatal := c.registerWebhook(ctx)
	if fatal == nil {
		fatal = c.heartbeat(ctx, restarted)
	}
	shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutCtx) // waits for handlers recording updates
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return errors.Join(fatal, fmt.Errorf("webhook server: %w", err))
	}
	return fatal
}

// registerWebhook tells Telegram where to post, retrying until it agrees.
// It returns an error wrapping ErrBadToken when Telegram rejects the token.
func (c *Channel) registerWebhook(ctx context.Context) error {
	var wait time.Duration
	for {
		callCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, err := c.bot.SetWebhook(callCtx, &bot.SetWebhookParams{
			URL:            c.cfg.WebhookURL,
			SecretToken:    c.cfg.WebhookSecret,
			AllowedUpdates: []string{models.AllowedUpdateMessage, models.AllowedUpdateCallbackQuery},
		})
		cancel()
		if err == nil {
			c.log.Info("webhook registered")
			return nil
		}
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, bot.ErrorUnauthorized) {
			c.tokenRejected(ctx)
			return fmt.Errorf("%w (setWebhook: %v)", ErrBadToken, c.scrub(err))
		}
		wait = backoff.Next(wait)
		c.log.Warn("register webhook", "err", c.scrub(err), "retry_in", wait)
		if !backoff.Sleep(ctx, wait) {
			return nil
		}
	}
}

// webhookHandler answers 200 only after the update is recorded, so Telegram
// retries anything the store could not take.
func (c *Channel) webhookHandler() http.Handler {
	secret := []byte(c.cfg.WebhookSecret)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := []byte(r.Header.Get("X-Telegram-Bot-Api-Secret-Token"))
		if len(secret) == 0 || subtle.ConstantTimeCompare(got, secret) != 1 {
			c.log.Warn("webhook request with a wrong secret token", "remote", r.RemoteAddr)
			http.Error(w, "forbidden", http.StatusUnauthorized)
			return
		}
		raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxUpdateBytes))
		if err != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		if !json.Valid(raw) {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		// Telegram reached us: contact, and a sign of life for the watchdog.
		c.touch()
		c.alive()
		if err := c.accept(r.Context(), raw); err != nil {
			c.log.Error("record webhook update", "err", err)
			http.Error(w, "try again", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
}

// heartbeat calls getMe every Heartbeat until ctx ends. In webhook mode
// Telegram calls us, so without it LastContact (and /readyz) would go stale
// whenever nobody writes to the bot. After the watchdog restarted the
// connections it registers the webhook again, in case Telegram dropped it.
// It returns an error wrapping ErrBadToken when Telegram rejects the token.
func (c *Channel) heartbeat(ctx context.Context, restarted <-chan struct{}) error {
	tick := time.NewTicker(c.cfg.Heartbeat)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-restarted:
			if err := c.registerWebhook(ctx); err != nil {
				return err
			}
			continue
		case <-tick.C:
		}
		callCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := c.bot.GetMe(callCtx)
		cancel()
		switch {
		case err == nil:
			c.alive()
		case errors.Is(err, bot.ErrorUnauthorized):
			c.tokenRejected(ctx)
			return fmt.Errorf("%w (getMe: %v)", ErrBadToken, c.scrub(err))
		case ctx.Err() == nil:
			c.log.Warn("telegram heartbeat", "err", c.scrub(err))
		}
	}
}
