package telegram

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-telegram/bot"
	"github.com/google/go-cmp/cmp"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/channels/telegram/telegramtest"
	"github.com/nanobot-go/nanobot/turns"
)

// progressChannel runs a channel whose chats see progress in mode, with
// status updates as often as they come.
func progressChannel(t *testing.T, mode string, s setup) *harness {
	t.Helper()
	s.cfg = func(c *Config) {
		c.Progress = mode
		c.ProgressInterval = time.Millisecond
	}
	return run(t, s)
}

// startProgress starts the progress of a turn in the owner's chat, as the
// turn engine does.
func startProgress(h *harness) (func(agent.ProgressEvent), func()) {
	batch := []*turns.Job{{Item: turns.InboxItem{Channel: channelName, ChatID: fmt.Sprint(owner)}}}
	return source{h.ch}.Progress(context.Background(), batch)
}

func toolEvent(round int, tool, args string) agent.ProgressEvent {
	return agent.ProgressEvent{Kind: agent.ProgressTool, Round: round, Calls: 1, ID: fmt.Sprintf("c%d", round), Tool: tool, Args: args}
}

func doneEvent(ev agent.ProgressEvent, failed bool) agent.ProgressEvent {
	ev.Kind, ev.Duration, ev.Failed = agent.ProgressToolDone, 300*time.Millisecond, failed
	return ev
}

// waitServer waits until cond holds on the Bot API fake.
func waitServer(t *testing.T, srv *telegramtest.Server, what string, cond func() bool) {
	t.Helper()
	if err := srv.WaitUntil(waitCtx(t), cond); err != nil {
		t.Fatalf("waiting until %s: %v\ncalls: %+v", what, err, srv.Calls(""))
	}
}

// statusSent waits for the status message and returns its id.
func statusSent(t *testing.T, h *harness) int64 {
	t.Helper()
	sent := waitSent(t, h.srv, 1)
	if len(sent) != 1 || !strings.HasPrefix(sent[0].Text, "⏳ Working…") || sent[0].ChatID != owner || sent[0].ParseMode != "HTML" {
		t.Fatalf("sent %+v, want one status message to the owner", sent)
	}
	if c := h.srv.Calls("sendMessage"); c[0].Params["disable_notification"] != "true" {
		t.Errorf("the status message notifies: %v", c[0].Params)
	}
	return sent[0].MessageID
}

func stateIs(h *harness, want string) func() bool {
	return func() bool {
		v, _ := h.store.State(context.Background(), statusKey)
		return v == want
	}
}

func TestProgressStatusMessage(t *testing.T) {
	h := progressChannel(t, ProgressStatus, setup{})
	report, end := startProgress(h)
	report(agent.ProgressEvent{Kind: agent.ProgressModel})
	fetch := toolEvent(1, "web_fetch", `{"url":"https://example.com/page"}`)
	report(fetch)
	id := statusSent(t, h)
	waitUntil(t, "the status message is recorded", stateIs(h, fmt.Sprintf("%d:%d", owner, id)))

	report(doneEvent(fetch, false))
	exec := toolEvent(2, "exec", `{"command":"echo <script>alert(1)</script>"}`)
	report(exec)
	waitServer(t, h.srv, "the status shows the second call", func() bool {
		text, _ := h.srv.Visible(owner, id)
		return strings.Contains(text, "exec echo <script>alert(1)</script> …")
	})
	edits := h.srv.Edits()
	last := edits[len(edits)-1]
	if !strings.Contains(last.Text, "• web_fetch <code>example.com/page</code> ✓") ||
		!strings.Contains(last.Text, "<code>echo &lt;script&gt;alert(1)&lt;/script&gt;</code>") || last.ParseMode != "HTML" {
		t.Errorf("status edited to %q, want both calls with the argument escaped", last.Text)
	}
	if c := h.srv.Calls("editMessageText"); c[len(c)-1].Params["link_preview_options"] == "" {
		t.Error("the status edit may show a link preview")
	}

	end()
	end() // a second call changes nothing
	waitServer(t, h.srv, "the status message is deleted", func() bool { return len(h.srv.Deleted()) > 0 })
	if d := h.srv.Deleted(); !slices.Equal(d, [][2]int64{{owner, id}}) {
		t.Errorf("deleted %v, want the status message %d", d, id)
	}
	waitUntil(t, "the record is cleared", stateIs(h, ""))
	h.stop(t)
	if n := len(h.srv.Calls("sendMessage")); n != 1 {
		t.Errorf("%d messages sent, want the one status message", n)
	}
}

func TestProgressVerboseKeepsTheList(t *testing.T) {
	h := progressChannel(t, ProgressVerbose, setup{})
	report, end := startProgress(h)
	read := toolEvent(1, "read_file", `{"path":"notes.md"}`)
	report(read)
	id := statusSent(t, h)
	report(doneEvent(read, false))
	write := toolEvent(2, "write_file", `{"path":"<b>x</b>.md","content":"y"}`)
	report(write)
	report(doneEvent(write, true))
	end()
	waitServer(t, h.srv, "the status lists the calls", func() bool {
		text, _ := h.srv.Visible(owner, id)
		return strings.HasPrefix(text, "🔧 2 tool calls")
	})
	text, _ := h.srv.Visible(owner, id)
	for _, want := range []string{"• read_file notes.md ✓ 0.3s", "• write_file <b>x</b>.md ✗ 0.3s"} {
		if !strings.Contains(text, want) {
			t.Errorf("kept status %q lacks %q", text, want)
		}
	}
	waitUntil(t, "the record is cleared", stateIs(h, ""))
	h.stop(t)
	if d := h.srv.Deleted(); len(d) != 0 {
		t.Errorf("deleted %v in verbose mode", d)
	}
}

func TestProgressQuietTurns(t *testing.T) {
	tests := []struct {
		name, mode string
		events     []agent.ProgressEvent
	}{
		{"no tools", ProgressStatus, []agent.ProgressEvent{{Kind: agent.ProgressModel}, {Kind: agent.ProgressSteered, Text: "and?"}}},
		{"off", ProgressOff, []agent.ProgressEvent{toolEvent(1, "exec", `{"command":"ls"}`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := progressChannel(t, tt.mode, setup{})
			report, end := startProgress(h)
			for _, ev := range tt.events {
				report(ev)
			}
			end()
			h.stop(t) // waits for the status goroutine
			if n := len(h.srv.Calls("sendMessage")) + len(h.srv.Calls("editMessageText")); n != 0 {
				t.Errorf("%d status calls, want none", n)
			}
		})
	}
}

// A 429 pauses the status rather than the turn: updates are skipped, and
// the last call waits the pause out.
func TestProgressRateLimited(t *testing.T) {
	h := progressChannel(t, ProgressStatus, setup{})
	h.srv.FailNext("editMessageText", 1, http.StatusTooManyRequests, 1, "")
	report, end := startProgress(h)
	first := toolEvent(1, "list_dir", `{"path":"."}`)
	report(first)
	id := statusSent(t, h)
	report(doneEvent(first, false))
	limited := waitCalls(t, h.srv, "editMessageText", 1)[0]
	for i := range 20 {
		ev := toolEvent(i+2, "list_dir", `{"path":"."}`)
		report(ev) // returns at once
		report(doneEvent(ev, false))
	}
	end()
	waitServer(t, h.srv, "the status message is deleted", func() bool { return len(h.srv.Deleted()) > 0 })
	if n := len(h.srv.Calls("editMessageText")); n != 1 {
		t.Errorf("%d edits, want none after the 429", n)
	}
	del := h.srv.Calls("deleteMessage")[0]
	if wait := del.At.Sub(limited.At); wait < 900*time.Millisecond {
		t.Errorf("deleted %v after the 429, want the retry_after of 1 s waited out", wait)
	}
	if d := h.srv.Deleted(); !slices.Equal(d, [][2]int64{{owner, id}}) {
		t.Errorf("deleted %v, want %d", d, id)
	}
}

// A status message the user deleted is neither edited again nor deleted.
func TestProgressMessageDeletedByUser(t *testing.T) {
	h := progressChannel(t, ProgressStatus, setup{})
	report, end := startProgress(h)
	first := toolEvent(1, "list_dir", `{"path":"."}`)
	report(first)
	id := statusSent(t, h)
	if _, err := h.ch.bot.DeleteMessage(t.Context(), &bot.DeleteMessageParams{ChatID: owner, MessageID: int(id)}); err != nil {
		t.Fatal(err)
	}
	report(doneEvent(first, false))
	waitCalls(t, h.srv, "editMessageText", 1)
	waitUntil(t, "the record is cleared", stateIs(h, ""))
	report(toolEvent(2, "list_dir", `{"path":"."}`))
	end()
	h.stop(t)
	if n, d := len(h.srv.Calls("editMessageText")), len(h.srv.Calls("deleteMessage")); n != 1 || d != 1 {
		t.Errorf("%d edits and %d deletes, want the one edit that found the message gone and the user's delete", n, d)
	}
}

// A start after a crash removes the status messages the crashed run left
// claiming work in progress, or in verbose mode says they were cut short.
func TestProgressTidiesAfterCrash(t *testing.T) {
	for _, mode := range []string{ProgressStatus, ProgressVerbose} {
		t.Run(mode, func(t *testing.T) {
			srv := telegramtest.NewServer(t, testToken)
			store := newMemStore()
			first := progressChannel(t, mode, setup{srv: srv, store: store})
			m, err := first.ch.bot.SendMessage(t.Context(), &bot.SendMessageParams{ChatID: owner, Text: "⏳ Working… 0:03"})
			if err != nil {
				t.Fatal(err)
			}
			first.stop(t)
			store.SetState(t.Context(), statusKey, fmt.Sprintf("%d:%d %d:999999", owner, m.ID, owner))

			h := progressChannel(t, mode, setup{srv: srv, store: store})
			text, visible := srv.Visible(owner, int64(m.ID))
			switch {
			case mode == ProgressStatus && visible:
				t.Errorf("the status message left by the crash still shows %q", text)
			case mode == ProgressVerbose && text != interrupted:
				t.Errorf("the status message left by the crash shows %q, want %q", text, interrupted)
			}
			if !stateIs(h, "")() {
				t.Error("the record of the status messages was not cleared")
			}
		})
	}
}

func TestStatusRender(t *testing.T) {
	st := &status{start: time.Now().Add(-42 * time.Second)}
	for i := range 6 {
		ev := toolEvent(i+1, fmt.Sprintf("tool%d", i+1), fmt.Sprintf(`{"path":"f%d"}`, i+1))
		st.report(ev)
		if i < 5 {
			st.report(doneEvent(ev, i == 4))
		}
	}
	running := "⏳ Working… 0:42\n• … 2 earlier\n" +
		"• tool3 <code>f3</code> ✓\n• tool4 <code>f4</code> ✓\n• tool5 <code>f5</code> ✗\n• tool6 <code>f6</code> …"
	if diff := cmp.Diff(running, st.render(false)); diff != "" {
		t.Errorf("running status (-want +got):\n%s", diff)
	}
	final := st.render(true)
	if !strings.HasPrefix(final, "🔧 6 tool calls · 0:42\n• tool1 <code>f1</code> ✓ 0.3s\n") ||
		!strings.HasSuffix(final, "• tool6 <code>f6</code> ⏹") {
		t.Errorf("final status = %q", final)
	}
}

func TestStatusRecords(t *testing.T) {
	live := map[statusRef]bool{{chat: -100123, msg: 7}: true, {chat: 42, msg: 9}: true, {chat: 42, msg: 3}: true}
	v := encodeStatuses(live)
	if want := "-100123:7 42:3 42:9"; v != want {
		t.Errorf("encodeStatuses = %q, want %q", v, want)
	}
	got := decodeStatuses(v + " junk 5:x 6:0")
	if len(got) != 3 || !live[got[0]] || !live[got[1]] || !live[got[2]] {
		t.Errorf("decodeStatuses(%q) = %v, want the three records", v, got)
	}
}

// A delete refused with a short retry_after is tried again once it passed.
func TestProgressDeleteRetriedAfterRateLimit(t *testing.T) {
	h := progressChannel(t, ProgressStatus, setup{})
	h.srv.FailNext("deleteMessage", 1, http.StatusTooManyRequests, 1, "")
	report, end := startProgress(h)
	report(toolEvent(1, "list_dir", `{"path":"."}`))
	id := statusSent(t, h)
	end()
	waitServer(t, h.srv, "the status message is deleted", func() bool { return len(h.srv.Deleted()) > 0 })
	if d := h.srv.Deleted(); !slices.Equal(d, [][2]int64{{owner, id}}) {
		t.Errorf("deleted %v, want %d", d, id)
	}
	if n := len(h.srv.Calls("deleteMessage")); n != 2 {
		t.Errorf("%d deleteMessage calls, want the refused one and the retry", n)
	}
	waitUntil(t, "the record is cleared", stateIs(h, ""))
}

// A chat the status message cannot be sent to is not tried again within
// the turn.
func TestProgressSendRefused(t *testing.T) {
	h := progressChannel(t, ProgressStatus, setup{})
	h.srv.FailNext("sendMessage", 1, http.StatusForbidden, 0, "")
	report, end := startProgress(h)
	for i := range 3 {
		ev := toolEvent(i+1, "list_dir", `{"path":"."}`)
		report(ev)
		waitCalls(t, h.srv, "sendMessage", 1)
		report(doneEvent(ev, false))
	}
	end()
	h.stop(t)
	if n := len(h.srv.Calls("sendMessage")); n != 1 {
		t.Errorf("%d sendMessage calls, want the one refused", n)
	}
	if v, _ := h.store.State(t.Context(), statusKey); v != "" {
		t.Errorf("status record %q, want none", v)
	}
}
