package main

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/openai/openaitest"
	"github.com/nanobot-go/nanobot/channels/telegram/telegramtest"
)

// startProgressGateway runs a gateway whose status messages are updated as
// often as the turn changes.
func startProgressGateway(t *testing.T, mode string) *gatewayHarness {
	t.Helper()
	tg := telegramtest.NewServer(t, botToken)
	model := openaitest.NewServer(t)
	dir := t.TempDir()
	h := &gatewayHarness{t: t, tg: tg, model: model, dir: dir, logs: &syncBuffer{}, progressEvery: time.Millisecond}
	h.cfg = gatewayConfig(t, dir, tg, model, map[string]string{"channels.telegram.progress": mode})
	h.start()
	t.Cleanup(func() { h.stop() })
	return h
}

// scriptTwoRounds has the model list the workspace, then read a file whose
// name is markup, then answer once hold is closed.
func scriptTwoRounds(model *openaitest.Server, hold <-chan struct{}) {
	model.Script(
		openaitest.Reply{ToolCalls: []agent.ToolCall{{ID: "c1", Name: "list_dir", Arguments: `{"path":"."}`}}},
		openaitest.Reply{ToolCalls: []agent.ToolCall{{ID: "c2", Name: "read_file", Arguments: `{"path":"<script>x</script>.md"}`}}},
		openaitest.Reply{Hold: hold, Text: "All done"},
	)
}

// statusMessages are the status messages sent to the owner.
func statusMessages(tg *telegramtest.Server) []telegramtest.Sent {
	var out []telegramtest.Sent
	for _, s := range tg.Sent() {
		if s.ChatID == owner && strings.HasPrefix(s.Text, "⏳ Working…") {
			out = append(out, s)
		}
	}
	return out
}

// waitVisible waits until the status message id shows text containing s.
func waitVisible(t *testing.T, tg *telegramtest.Server, id int64, s string) string {
	t.Helper()
	var text string
	err := tg.WaitUntil(waitCtx(t), func() bool {
		text, _ = tg.Visible(owner, id)
		return strings.Contains(text, s)
	})
	if err != nil {
		t.Fatalf("status message %d shows %q, want it to contain %q", id, text, s)
	}
	return text
}

func TestGatewayProgressStatus(t *testing.T) {
	h := startProgressGateway(t, "status")
	hold := make(chan struct{})
	scriptTwoRounds(h.model, hold)
	h.tg.SendText(owner, owner, "ada", "look around")

	status := waitSentContaining(t, h.tg, owner, "Working…")
	waitVisible(t, h.tg, status.MessageID, "read_file <script>x</script>.md")
	var escaped bool
	for _, e := range h.tg.Edits() {
		escaped = escaped || (e.MessageID == status.MessageID && strings.Contains(e.Text, "<code>&lt;script&gt;x&lt;/script&gt;.md</code>"))
	}
	if !escaped {
		t.Errorf("no edit shows the argument escaped: %+v", h.tg.Edits())
	}
	close(hold)

	waitSentContaining(t, h.tg, owner, "All done")
	if err := h.tg.WaitUntil(waitCtx(t), func() bool { return len(h.tg.Deleted()) > 0 }); err != nil {
		t.Fatalf("the status message was not deleted: %v", err)
	}
	if d := h.tg.Deleted(); !slices.Equal(d, [][2]int64{{owner, status.MessageID}}) {
		t.Errorf("deleted %v, want the status message %d", d, status.MessageID)
	}
	if err := h.stop(); err != nil {
		t.Fatalf("gateway stopped with %v", err)
	}
	if n := len(statusMessages(h.tg)); n != 1 {
		t.Errorf("%d status messages, want 1", n)
	}
}

func TestGatewayProgressVerbose(t *testing.T) {
	h := startProgressGateway(t, "verbose")
	hold := make(chan struct{})
	close(hold)
	scriptTwoRounds(h.model, hold)
	h.tg.SendText(owner, owner, "ada", "look around")

	waitSentContaining(t, h.tg, owner, "All done")
	status := statusMessages(h.tg)
	if len(status) != 1 {
		t.Fatalf("status messages %+v, want 1", status)
	}
	text := waitVisible(t, h.tg, status[0].MessageID, "🔧 2 tool calls")
	if !strings.Contains(text, "• list_dir . ✓") || !strings.Contains(text, "• read_file <script>x</script>.md ✗") {
		t.Errorf("kept status %q, want both calls with their outcome", text)
	}
	if err := h.stop(); err != nil {
		t.Fatalf("gateway stopped with %v", err)
	}
	if d := h.tg.Deleted(); len(d) != 0 {
		t.Errorf("deleted %v in verbose mode", d)
	}
}

func TestGatewayProgressOff(t *testing.T) {
	h := startProgressGateway(t, "off")
	hold := make(chan struct{})
	close(hold)
	scriptTwoRounds(h.model, hold)
	h.tg.SendText(owner, owner, "ada", "look around")
	waitSentContaining(t, h.tg, owner, "All done")
	if err := h.stop(); err != nil {
		t.Fatalf("gateway stopped with %v", err)
	}
	if n := len(h.tg.Sent()); n != 1 {
		t.Errorf("sent %+v, want the answer alone", h.tg.Sent())
	}
	if n := len(h.tg.Calls("editMessageText")) + len(h.tg.Calls("deleteMessage")); n != 0 {
		t.Errorf("%d status calls with progress off", n)
	}
	if len(h.tg.Calls("sendChatAction")) == 0 {
		t.Error("no typing shown")
	}
}

// kill -9 in the middle of a tool round leaves a status message claiming
// work in progress; the next start deletes it and finishes the turn.
func TestProgressStatusOutlivesKill(t *testing.T) {
	tg := telegramtest.NewServer(t, botToken)
	model := openaitest.NewServer(t)
	hold := make(chan struct{})
	defer close(hold)
	model.Script(
		openaitest.Reply{ToolCalls: []agent.ToolCall{{ID: "c1", Name: "list_dir", Arguments: `{"path":"."}`}}},
		openaitest.Reply{Hold: hold}, // the second model call, cut short by kill -9
		openaitest.Reply{Text: "answer after the crash"},
	)
	dir := t.TempDir()
	cfg := gatewayConfig(t, dir, tg, model, map[string]string{"channels.telegram.progress": "status"})

	first := startDaemon(t, cfg)
	tg.SendText(owner, owner, "ada", "look around")
	status := waitSentContaining(t, tg, owner, "Working…")
	db, err := sql.Open("sqlite3", filepath.Join(dir, "data", "nanobot.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	record := func() string {
		var v string
		db.QueryRow("SELECT value FROM state WHERE key = 'telegram.status'").Scan(&v)
		return v
	}
	want := fmt.Sprintf("%d:%d", owner, status.MessageID)
	waitFor(t, "the status message is recorded", func() bool { return record() == want })
	if _, err := model.WaitRequests(waitCtx(t), 2); err != nil {
		t.Fatalf("no second model call: %v\n%s", err, first.logs.String())
	}
	first.kill()

	second := startDaemon(t, cfg)
	waitSentContaining(t, tg, owner, "answer after the crash")
	if err := tg.WaitUntil(waitCtx(t), func() bool { _, ok := tg.Visible(owner, status.MessageID); return !ok }); err != nil {
		t.Fatalf("the status message left by the crash was not deleted: %v\n%s", err, second.logs.String())
	}
	second.terminate(t)
	if v := record(); v != "" {
		t.Errorf("status record after a clean stop = %q, want none", v)
	}
}

// waitFor re-checks cond until it holds, failing after 60 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx := waitCtx(t)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("timed out waiting until %s", what)
		}
	}
}
