package main

import (
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/openai/openaitest"
	"github.com/nanobot-go/nanobot/channels/telegram/telegramtest"
)

// waitRecorded waits until the daemon has confirmed the update: it is in
// the inbox.
func waitRecorded(t *testing.T, tg *telegramtest.Server, update int64) {
	t.Helper()
	ctx := waitCtx(t)
	for n := len(tg.Calls("getUpdates")) + 1; tg.Offset() <= update; n++ {
		if _, err := tg.WaitCalls(ctx, "getUpdates", n); err != nil {
			t.Fatalf("update %d not confirmed: %v", update, err)
		}
	}
}

// TestKillAfterSteering: a text written while its turn runs is read by
// that turn and recorded with its next step; a kill -9 after that resumes
// both messages as the one turn and answers them once.
func TestKillAfterSteering(t *testing.T) {
	tg := telegramtest.NewServer(t, botToken)
	model := openaitest.NewServer(t)
	first, cut := make(chan struct{}), make(chan struct{})
	defer close(cut)
	model.Script(
		openaitest.Reply{Hold: first, ToolCalls: []agent.ToolCall{{ID: "c1", Name: "list_dir", Arguments: `{"path":"."}`}}},
		openaitest.Reply{ToolCalls: []agent.ToolCall{{ID: "c2", Name: "list_dir", Arguments: `{"path":"./."}`}}},
		openaitest.Reply{Hold: cut}, // cut short by kill -9
		openaitest.Reply{Text: "answer after the crash"},
	)
	dir := t.TempDir()
	// The first reply is held until the second text is in; on a loaded
	// machine a short provider timeout would expire and retry it.
	cfg := gatewayConfig(t, dir, tg, model, map[string]string{"provider.timeout": "10m"})

	d := startDaemon(t, cfg)
	tg.SendText(owner, owner, "ada", "list my files")
	if _, err := model.WaitRequests(waitCtx(t), 1); err != nil {
		t.Fatalf("the model was not asked: %v\n%s", err, d.logs.String())
	}
	waitRecorded(t, tg, tg.SendText(owner, owner, "ada", "only the text files"))
	close(first)
	reqs, err := model.WaitRequests(waitCtx(t), 3)
	if err != nil {
		t.Fatalf("%v\n%s", err, d.logs.String())
	}
	if last := reqs[1].Messages[len(reqs[1].Messages)-1]; said(last) != agent.SteeredMark+"only the text files" {
		t.Fatalf("the second request ends with %q, want the words written meanwhile", last.Content)
	}
	d.kill()

	d = startDaemon(t, cfg)
	waitSentContaining(t, tg, owner, "answer after the crash")
	d.terminate(t)
	var sent []string
	for _, s := range tg.Sent() {
		if s.ChatID == owner {
			sent = append(sent, s.Text)
		}
	}
	if len(sent) != 1 {
		t.Errorf("sent to the owner %q, want one answer for both messages", sent)
	}
	reqs = model.Requests()
	count := map[string]int{}
	for _, m := range reqs[len(reqs)-1].Messages {
		if m.Role == "user" {
			count[strings.TrimPrefix(said(m), agent.SteeredMark)]++
		}
	}
	if count["list my files"] != 1 || count["only the text files"] != 1 {
		t.Errorf("the resumed request holds the messages %v times, want each once", count)
	}
	db, err := sql.Open("sqlite3", filepath.Join(dir, "data", "nanobot.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var open int
	if err := db.QueryRow(`SELECT count(*) FROM inbox WHERE state != 'done'`).Scan(&open); err != nil || open != 0 {
		t.Errorf("inbox items not done: %d, %v", open, err)
	}
}

// TestCallsOfOneReplyThroughTheGateway: reads of one reply run together,
// a write waits for the reads before it, and a read after the write sees
// what it wrote; the results go back in the order of the calls.
func TestCallsOfOneReplyThroughTheGateway(t *testing.T) {
	h := startGateway(t, nil)
	ws := filepath.Join(h.dir, "workspace")
	if err := os.MkdirAll(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"a.txt": "alpha", "b.txt": "beta"} {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	h.model.Script(
		openaitest.Reply{ToolCalls: []agent.ToolCall{
			{ID: "r1", Name: "read_file", Arguments: `{"path":"a.txt"}`},
			{ID: "r2", Name: "read_file", Arguments: `{"path":"b.txt"}`},
			{ID: "w", Name: "write_file", Arguments: `{"path":"c.txt","content":"gamma"}`},
			{ID: "r3", Name: "read_file", Arguments: `{"path":"c.txt"}`},
		}},
		openaitest.Reply{Text: "all read"},
	)
	h.tg.SendText(owner, owner, "ada", "read them")
	waitSentContaining(t, h.tg, owner, "all read")
	reqs := h.model.Requests()
	var got []string
	for _, m := range reqs[len(reqs)-1].Messages {
		if m.Role == "tool" {
			got = append(got, m.ToolCallID+" "+strings.Fields(said(m) + " -")[0])
		}
	}
	want := []string{"r1 alpha", "r2 beta", "w", "r3 gamma"}
	if len(got) != 4 || got[0] != want[0] || got[1] != want[1] || !strings.HasPrefix(got[2], "w ") || got[3] != want[3] {
		t.Errorf("tool results %q, want %q in that order (the write before the read of c.txt)", got, want)
	}
}
