package telegram

import (
	"context"
	"fmt"
	"time"
)

// The watchdog: a long poll that never returns, or a webhook Telegram no
// longer calls, leaves the bot deaf without any error to see. Intake marks
// every sign of life (alive); when none came for Watchdog, the connections
// are dropped and made anew (transport.restart), which also ends the calls
// hanging on them, and the log says why.

// alive records a sign of life of intake for the watchdog.
func (c *Channel) alive() { c.lastAlive.Store(time.Now().UnixNano()) }

func (c *Channel) silence() time.Duration {
	return time.Since(time.Unix(0, c.lastAlive.Load()))
}

// watch restarts the connections when intake has shown no sign of life for
// Watchdog, and says why. After a restart the new connections get a full
// period before the next one.
func (c *Channel) watch(ctx context.Context, restarted chan<- struct{}) {
	tick := time.NewTicker(max(c.cfg.Watchdog/8, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		silent := c.silence()
		if silent < c.cfg.Watchdog {
			continue
		}
		reason := fmt.Sprintf("no getUpdates call completed for %s", silent.Round(time.Second))
		if c.cfg.Mode == "webhook" {
			reason = fmt.Sprintf("no update and no heartbeat for %s", silent.Round(time.Second))
		}
		c.log.Warn("telegram silent; restarting the connection", "reason", reason, "mode", c.cfg.Mode)
		c.tr.restart()
		c.alive()
		if c.hooks.Restart != nil {
			c.hooks.Restart()
		}
		select {
		case restarted <- struct{}{}:
		default:
		}
	}
}
