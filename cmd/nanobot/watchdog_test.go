package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/agent/openai/openaitest"
)

// The Bot API stalls (connections accepted, never answered): the watchdog
// restarts the connection and says why, /readyz goes not-ready, and once
// Telegram answers again the daemon answers a new message without a restart.
func TestGatewayRecoversFromAStalledBotAPI(t *testing.T) {
	addr := freeAddr(t)
	h := startGatewayWith(t, map[string]string{"gateway.listen": addr},
		"--poll-timeout", "1s", "--watchdog", "2s", "--unready-after", "3s")
	readyz := "http://" + addr + "/readyz"
	h.model.Script(openaitest.Reply{Text: "before the stall"})
	h.ask("hello")
	waitHTTPStatus(t, readyz, http.StatusOK)

	h.tg.Stall()
	if err := h.tg.WaitHeld(waitCtx(t), 1); err != nil {
		t.Fatal(err)
	}
	line := waitLogged(t, h.logs, "telegram silent; restarting the connection")
	if !strings.Contains(line, "no getUpdates call completed for") {
		t.Errorf("the restart does not say why: %s", line)
	}
	body := waitHTTPStatus(t, readyz, http.StatusServiceUnavailable)
	if !strings.Contains(body, "telegram not reached for") {
		t.Errorf("/readyz = %q, want the silence named", body)
	}

	resumed := time.Now()
	h.tg.Resume()
	h.model.Script(openaitest.Reply{Text: "after the stall"})
	if got := h.ask("are you back?"); !strings.Contains(got.Text, "after the stall") {
		t.Errorf("answer after the stall = %q", got.Text)
	}
	t.Logf("answered %s after the Bot API came back (watchdog 2s, poll timeout 1s)", time.Since(resumed).Round(10*time.Millisecond))
	waitHTTPStatus(t, readyz, http.StatusOK)
	_, metrics, err := httpGet(t.Context(), "http://"+addr+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := metricValue(metrics, "nanobot_telegram_transport_restarts_total"); !ok || v < 1 {
		t.Errorf("telegram_transport_restarts_total = %v (%v), want at least 1", v, ok)
	}
	if err := h.stop(); err != nil {
		t.Errorf("gateway stopped with %v", err)
	}
}

func TestGatewayExplainsAConflictOnce(t *testing.T) {
	h := startGatewayWith(t, nil, "--poll-timeout", "1s")
	h.ask("first")
	h.tg.FailNext("getUpdates", 3, http.StatusConflict, 0, "")
	line := waitLogged(t, h.logs, "409 Conflict")
	if !strings.Contains(line, "another program is polling with this bot token") || !strings.Contains(line, "only one may poll") {
		t.Errorf("the conflict is not explained: %s", line)
	}
	if got := h.ask("second"); got.Text == "" {
		t.Error("no answer after the conflict")
	}
	if n := strings.Count(h.logs.String(), "refused getUpdates with 409 Conflict"); n != 1 {
		t.Errorf("the conflict is explained %d times, want once", n)
	}
}

// A token revoked while the gateway runs stops it with exit 78, and
// `nanobot status` says the token was rejected.
func TestGatewayStopsOnARevokedToken(t *testing.T) {
	h := startGatewayWith(t, nil, "--poll-timeout", "1s")
	h.ask("hello")
	h.tg.RevokeToken()
	var err error
	select {
	case err = <-h.done:
		h.cancel()
		h.cancel = nil
	case <-waitCtx(t).Done():
		t.Fatal("the gateway kept running with a revoked token")
	}
	var stderr syncBuffer
	if code := exitCode(err, &stderr); code != exitConfig {
		t.Errorf("exit %d, want %d (%v)", code, exitConfig, err)
	}
	if msg := stderr.String(); !strings.Contains(msg, "channels.telegram.token") || !strings.Contains(msg, "revoked") ||
		!strings.Contains(msg, "TELEGRAM_BOT_TOKEN") || strings.Contains(msg, botToken) {
		t.Errorf("stderr = %q", msg)
	}
	st := runCLI(t.Context(), "", "-c", h.cfg, "status")
	if !strings.Contains(st.stdout, "REJECTED by Telegram") || !strings.Contains(st.stdout, "set TELEGRAM_BOT_TOKEN to the current token") {
		t.Errorf("status does not say the token was rejected:\n%s", st.stdout)
	}
	if strings.Contains(st.stdout, "running (") {
		t.Errorf("status says a gateway runs:\n%s", st.stdout)
	}
}
