package telegram

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/channels/telegram/telegramtest"
)

// A call on a dead connection is cut off by a restart, not by its deadline.
func TestRestartAbortsCallsInFlight(t *testing.T) {
	srv := telegramtest.NewServer(t, testToken)
	c, err := New(testConfig(srv), newMemStore(), testEngine(nil), nil, nil, nil, Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	srv.Stall()
	done := make(chan error, 1)
	go func() {
		_, err := c.bot.GetMe(context.Background()) // no deadline of its own
		done <- err
	}()
	if err := srv.WaitHeld(waitCtx(t), 1); err != nil {
		t.Fatal(err)
	}
	gen := c.tr.generation()
	c.tr.restart()
	select {
	case err := <-done:
		if err == nil {
			t.Error("the stalled call succeeded")
		}
	case <-waitCtx(t).Done():
		t.Fatal("the restart did not end the stalled call")
	}
	if c.tr.generation() == gen {
		t.Error("the generation did not change")
	}
	srv.Resume()
	if _, err := c.bot.GetMe(waitCtx(t)); err != nil {
		t.Errorf("a call on the new connections: %v", err)
	}
}

func TestWatchdogRestartsStalledPolling(t *testing.T) {
	var restarts atomic.Int32
	h := run(t, setup{
		cfg:   func(c *Config) { c.Watchdog = 2 * time.Second },
		hooks: Hooks{Restart: func() { restarts.Add(1) }},
	})
	h.srv.SendText(owner, owner, "alice", "before")
	waitSent(t, h.srv, 1)

	h.srv.Stall()
	// The next long poll hangs on the dead path; the watchdog cuts it off.
	if err := h.srv.WaitHeld(waitCtx(t), 1); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the watchdog restarts the connection", func() bool { return restarts.Load() >= 1 })
	logs := h.logs.String()
	if !strings.Contains(logs, "telegram silent; restarting the connection") || !strings.Contains(logs, "no getUpdates call completed for") {
		t.Errorf("the restart is not explained in the log:\n%s", logs)
	}

	resumed := time.Now()
	h.srv.Resume()
	h.srv.SendText(owner, owner, "alice", "after")
	sent := waitSent(t, h.srv, 2)
	if !strings.Contains(sent[1].Text, "echo: after") {
		t.Errorf("reply after the stall = %q", sent[1].Text)
	}
	t.Logf("answered %s after the Bot API came back (watchdog 2s, poll timeout 1s)", time.Since(resumed).Round(10*time.Millisecond))
}

func TestWatchdogRestartsStalledWebhook(t *testing.T) {
	var restarts atomic.Int32
	h := run(t, setup{cfg: func(c *Config) {
		c.Mode = "webhook"
		c.WebhookURL = "https://bot.example.org/hook"
		c.WebhookListen = "127.0.0.1:0"
		c.WebhookSecret = "the-secret"
		c.Heartbeat = 50 * time.Millisecond
		c.Watchdog = 500 * time.Millisecond
	}, hooks: Hooks{Restart: func() { restarts.Add(1) }}})
	waitCalls(t, h.srv, "setWebhook", 1)
	h.srv.Stall()
	waitUntil(t, "the watchdog restarts the connection", func() bool { return restarts.Load() >= 1 })
	if !strings.Contains(h.logs.String(), "no update and no heartbeat for") {
		t.Errorf("the restart is not explained in the log:\n%s", h.logs.String())
	}
	h.srv.Resume()
	// After a restart the webhook is registered again.
	waitUntil(t, "the webhook is registered again", func() bool {
		return strings.Count(h.logs.String(), "webhook registered") >= 2
	})
	addr := *h.ch.webhookAddr.Load()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+addr+"/hook", strings.NewReader(string(privateUpdate(9, owner, "after the stall"))))
	req.Header.Set("X-Telegram-Bot-Api-Secret-Token", "the-secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if sent := waitSent(t, h.srv, 1); !strings.Contains(sent[0].Text, "echo: after the stall") {
		t.Errorf("reply = %q", sent[0].Text)
	}
}

// A 409 is explained once, with what to do, and retried with a growing
// backoff: never a hot loop.
func TestConflictExplainedOnceAndBackedOff(t *testing.T) {
	srv := telegramtest.NewServer(t, testToken)
	srv.FailNext("getUpdates", 4, http.StatusConflict, 0, "")
	h := run(t, setup{srv: srv})
	calls := waitCalls(t, srv, "getUpdates", 5)
	h.srv.SendText(owner, owner, "alice", "still there?")
	if sent := waitSent(t, h.srv, 1); !strings.Contains(sent[0].Text, "echo: still there?") {
		t.Errorf("reply after the conflict = %q", sent[0].Text)
	}
	logs := h.logs.String()
	if n := strings.Count(logs, "refused getUpdates with 409 Conflict"); n != 1 {
		t.Errorf("the conflict is explained %d times, want once:\n%s", n, logs)
	}
	if !strings.Contains(logs, "only one may poll") {
		t.Errorf("the explanation does not say what to do:\n%s", logs)
	}
	var waits []time.Duration
	for _, m := range regexp.MustCompile(`(?:409 Conflict|still in conflict).*retry_in=(\S+)`).FindAllStringSubmatch(logs, -1) {
		d, err := time.ParseDuration(m[1])
		if err != nil {
			t.Fatal(err)
		}
		waits = append(waits, d)
	}
	want := []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second}
	if len(waits) != len(want) {
		t.Fatalf("retry waits %v, want %v", waits, want)
	}
	for i := range want {
		if waits[i] != want[i] {
			t.Errorf("retry waits %v, want %v", waits, want)
			break
		}
		// The calls themselves are at least that far apart.
		if gap := calls[i+1].At.Sub(calls[i].At); gap < want[i] {
			t.Errorf("getUpdates %d followed %d after %s, before its backoff of %s", i+1, i, gap, want[i])
		}
	}
}

func TestRevokedTokenStopsTheChannel(t *testing.T) {
	for _, mode := range []string{"polling", "webhook"} {
		t.Run(mode, func(t *testing.T) {
			srv := telegramtest.NewServer(t, testToken)
			store := newMemStore()
			store.state[TokenRejectedKey] = "2020-01-01T00:00:00Z" // from an earlier run
			cfg := testConfig(srv)
			cfg.Workspace = t.TempDir()
			if mode == "webhook" {
				cfg.Mode, cfg.WebhookURL, cfg.WebhookListen, cfg.WebhookSecret = "webhook", "https://bot.example.org/hook", "127.0.0.1:0", "s"
				cfg.Heartbeat, cfg.Watchdog = 20*time.Millisecond, time.Minute
			}
			logs := &syncBuffer{}
			c, err := New(cfg, store, testEngine(store), nil, nil, slogTo(logs), Hooks{})
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- c.Run(waitCtx(t)) }()
			select {
			case <-c.ready:
			case err := <-done:
				t.Fatalf("Run returned before it was ready: %v", err)
			}
			if v, _ := store.State(t.Context(), TokenRejectedKey); v != "" {
				t.Errorf("a successful start left the rejection note %q", v)
			}
			srv.RevokeToken()
			select {
			case err = <-done:
			case <-waitCtx(t).Done():
				t.Fatal("the channel kept running with a revoked token")
			}
			if !errors.Is(err, ErrBadToken) || !strings.Contains(err.Error(), "TELEGRAM_BOT_TOKEN") {
				t.Errorf("Run = %v, want ErrBadToken", err)
			}
			if v, _ := store.State(t.Context(), TokenRejectedKey); v == "" {
				t.Error("the rejection is not recorded for nanobot status")
			} else if _, err := time.Parse(time.RFC3339, v); err != nil {
				t.Errorf("the rejection note %q is not a time: %v", v, err)
			}
			if !strings.Contains(logs.String(), "telegram rejected the bot token (401)") || strings.Contains(logs.String(), testToken) {
				t.Errorf("log:\n%s", logs.String())
			}
		})
	}
}

func TestWatchdogShorterThanAPollRefused(t *testing.T) {
	_, err := New(Config{Token: "1:x", PollTimeout: 25 * time.Second, Watchdog: 30 * time.Second}, newMemStore(), testEngine(nil), nil, nil, nil, Hooks{})
	if err == nil || !strings.Contains(err.Error(), "watchdog") {
		t.Errorf("New = %v, want a watchdog shorter than two polls refused", err)
	}
}

func slogTo(w *syncBuffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
