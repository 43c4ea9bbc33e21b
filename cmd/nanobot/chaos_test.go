package main

import (
	"database/sql"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/openai/openaitest"
	"github.com/nanobot-go/nanobot/channels/telegram/telegramtest"
)

var (
	chaosLong = flag.Bool("chaos.long", false, "run the long form of the chaos suite (20 chats, 500 messages, 10 kills)")
	chaosSeed = flag.Uint64("chaos.seed", 0, "seed of the chaos suite (0: from the clock; the seed is printed)")
)

// chaosRNG is the seeded source of a chaos run, printed so a failure can be
// replayed with -chaos.seed.
func chaosRNG(t *testing.T) *lockedRand {
	seed := *chaosSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("chaos seed %d (replay with -chaos.seed=%d)", seed, seed)
	return &lockedRand{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

type lockedRand struct {
	mu sync.Mutex
	r  *rand.Rand
}

// between returns a duration in [lo, hi).
func (l *lockedRand) between(lo, hi time.Duration) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return lo + time.Duration(l.r.Int64N(int64(hi-lo)))
}

var chaosToken = regexp.MustCompile(`c\d+m\d+`)

// echoModel answers each turn with "re:" and the turn's messages (the one
// that started it and those written during it), so an answer says which
// messages it answers. Every fourth message first asks for a tool, so
// kills also land between a call and its result, and messages sent
// meanwhile reach the turn.
func echoModel(rng *lockedRand) func(req goopenai.ChatCompletionRequest) openaitest.Reply {
	return func(req goopenai.ChatCompletionRequest) openaitest.Reply {
		msgs := req.Messages
		user := -1
		for i := len(msgs) - 1; i >= 0; i-- {
			if msgs[i].Role == "user" && chaosToken.MatchString(msgs[i].Content) && !strings.Contains(msgs[i].Content, agent.SteeredMark) {
				user = i
				break
			}
		}
		delay := rng.between(0, 15*time.Millisecond)
		if user < 0 {
			return openaitest.Reply{Text: "nothing to answer", Delay: delay}
		}
		var content string
		for _, m := range msgs[user:] {
			if m.Role == "user" {
				content += m.Content + "\n"
			}
		}
		ranTool := slices.ContainsFunc(msgs[user:], func(m goopenai.ChatCompletionMessage) bool { return m.Role == "tool" })
		first := chaosToken.FindString(content)
		n, _ := strconv.Atoi(first[strings.Index(first, "m")+1:])
		if n%4 == 0 && !ranTool && len(req.Tools) > 0 {
			return openaitest.Reply{Delay: delay, ToolCalls: []agent.ToolCall{{ID: "call_" + first, Name: "list_dir", Arguments: `{"path":"."}`}}}
		}
		return openaitest.Reply{Text: "re: " + strings.Join(chaosToken.FindAllString(content, -1), " "), Delay: delay}
	}
}

// chaosReport is what a kill -9 run measured.
type chaosReport struct {
	sent, answered, lost, duplicated, resent, outOfOrder, crashes int
	// steered counts messages handed to a running turn.
	steered int
	// recorded counts messages whose user message the session does not
	// hold exactly once.
	recorded  int
	integrity string
}

func (r chaosReport) String() string {
	return fmt.Sprintf("sent %d, answered %d, lost %d, duplicated %d, re-sent by the delivery window %d, out of order %d, not in the session exactly once %d, handed to a running turn %d, crashes %d, integrity %s",
		r.sent, r.answered, r.lost, r.duplicated, r.resent, r.outOfOrder, r.recorded, r.steered, r.crashes, r.integrity)
}

// TestChaosKill kills the built daemon with SIGKILL at random moments while
// chats send messages, restarting it each time. Every message must be
// answered once, in order per chat, with the database intact. The short
// form runs in CI; -chaos.long runs 20 chats, 500 messages and 10 kills.
func TestChaosKill(t *testing.T) {
	t.Parallel() // a daemon of its own, with its own fakes
	chats, perChat, kills := 5, 12, 3
	if *chaosLong {
		chats, perChat, kills = 20, 25, 10
	}
	rng := chaosRNG(t)
	tg := telegramtest.NewServer(t, botToken)
	model := openaitest.NewServer(t)
	model.SetFunc(echoModel(rng))
	ids := make([]string, chats)
	for i := range ids {
		ids[i] = strconv.Itoa(1000 + i)
	}
	dir := t.TempDir()
	cfg := gatewayConfig(t, dir, tg, model, map[string]string{
		"channels.telegram.allow_from": "[" + strings.Join(ids, ", ") + "]",
		"log.level":                    "info",
	})

	d := startDaemon(t, cfg)
	sendDone := make(chan struct{})
	go func() {
		defer close(sendDone)
		for m := range perChat {
			for c := range chats {
				chat := int64(1000 + c)
				tg.SendText(chat, chat, "user"+strconv.Itoa(c), fmt.Sprintf("c%dm%d", c, m))
			}
			time.Sleep(rng.between(time.Millisecond, 25*time.Millisecond)) // the pace of the stream, not a wait
		}
	}()
	var logs strings.Builder
	for range kills {
		time.Sleep(rng.between(50*time.Millisecond, 400*time.Millisecond)) // a random moment to crash at
		d.kill()
		logs.WriteString(d.logs.String())
		d = startDaemon(t, cfg)
	}
	<-sendDone

	want := chats * perChat
	waitAnswered := func() bool {
		ctx := waitCtx(t)
		for n := 1; ; n++ {
			if _, err := tg.WaitSent(ctx, n); err != nil {
				return false
			}
			if answeredTokens(tg) >= want {
				return true
			}
		}
	}
	complete := waitAnswered()
	waitLogged(t, d.logs, "telegram channel running") // SIGTERM before the handler is set would kill it
	d.terminate(t)
	logs.WriteString(d.logs.String())

	r := analyseChaos(t, tg, filepath.Join(dir, "data", "nanobot.db"), chats, perChat)
	r.crashes = kills
	t.Logf("chaos kill -9: %s", r)
	if !complete || r.lost > 0 || r.duplicated > 0 || r.outOfOrder > 0 || r.recorded > 0 || r.integrity != "ok" {
		t.Errorf("the daemon broke its promise: %s", r)
	}
	if strings.Contains(logs.String(), "panic:") {
		t.Errorf("the daemon panicked:\n%s", logs.String())
	}
}

// answeredTokens counts the distinct messages the sent texts answer.
func answeredTokens(tg *telegramtest.Server) int {
	seen := map[string]bool{}
	for _, s := range tg.Sent() {
		for _, tok := range chaosToken.FindAllString(s.Text, -1) {
			seen[strconv.FormatInt(s.ChatID, 10)+"/"+tok] = true
		}
	}
	return len(seen)
}

// analyseChaos compares what crossed the wire with the outbox: a message
// answered by two outbox rows is a duplicate; one row sent twice was
// re-sent because a kill fell between Telegram accepting it and the outbox
// recording that.
func analyseChaos(t *testing.T, tg *telegramtest.Server, dbPath string, chats, perChat int) chaosReport {
	t.Helper()
	db, err := sql.Open("sqlite3", dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var r chaosReport
	r.sent = chats * perChat
	if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&r.integrity); err != nil {
		t.Fatal(err)
	}
	rows := map[string]int{} // token -> outbox rows answering it
	q, err := db.Query(`SELECT chat_id, text FROM outbox`)
	if err != nil {
		t.Fatal(err)
	}
	for q.Next() {
		var chat, text string
		if err := q.Scan(&chat, &text); err != nil {
			t.Fatal(err)
		}
		for _, tok := range chaosToken.FindAllString(text, -1) {
			rows[chat+"/"+tok]++
		}
	}
	q.Close()
	inSession := map[string]int{} // token -> user messages holding it
	q, err = db.Query(`SELECT session, content FROM messages WHERE role = 'user'`)
	if err != nil {
		t.Fatal(err)
	}
	for q.Next() {
		var session, content string
		if err := q.Scan(&session, &content); err != nil {
			t.Fatal(err)
		}
		for _, tok := range chaosToken.FindAllString(content, -1) {
			inSession[strings.TrimPrefix(session, "telegram:")+"/"+tok]++
		}
		if strings.HasPrefix(content, agent.SteeredMark) {
			r.steered++
		}
	}
	q.Close()

	sends := map[string]int{}
	last := map[int64]int{} // chat -> highest message number answered so far
	for _, s := range tg.Sent() {
		for _, tok := range chaosToken.FindAllString(s.Text, -1) {
			key := strconv.FormatInt(s.ChatID, 10) + "/" + tok
			sends[key]++
			if sends[key] > 1 {
				continue
			}
			n, _ := strconv.Atoi(tok[strings.Index(tok, "m")+1:])
			if prev, ok := last[s.ChatID]; ok && n < prev {
				r.outOfOrder++
			}
			last[s.ChatID] = max(last[s.ChatID], n)
		}
	}
	for c := range chats {
		for m := range perChat {
			key := fmt.Sprintf("%d/c%dm%d", 1000+c, c, m)
			if n := inSession[key]; n != 1 {
				r.recorded++
				t.Logf("in the session %d times: %s", n, key)
			}
			switch n := sends[key]; {
			case n == 0:
				r.lost++
				t.Logf("lost: %s", key)
			case rows[key] > 1:
				r.answered++
				r.duplicated++
				t.Logf("answered by %d outbox rows: %s", rows[key], key)
				logOutbox(t, db, strconv.Itoa(1000+c), fmt.Sprintf("c%dm%d", c, m))
			case n > 1:
				r.answered++
				r.resent++
			default:
				r.answered++
			}
		}
	}
	return r
}

// logOutbox logs the outbox rows answering tok, and the inbox items they
// link to, to show how a duplicate came about.
func logOutbox(t *testing.T, db *sql.DB, chat, tok string) {
	t.Helper()
	q, err := db.Query(`SELECT o.id, o.inbox_id, o.text, o.created_at, i.state, coalesce(i.message_id, 0)
		FROM outbox o LEFT JOIN inbox i ON i.id = o.inbox_id WHERE o.chat_id = ? AND o.text LIKE '%' || ? || '%'`, chat, tok)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	for q.Next() {
		var id, inbox, created, msg int64
		var text, state string
		if err := q.Scan(&id, &inbox, &text, &created, &state, &msg); err != nil {
			t.Fatal(err)
		}
		t.Logf("  outbox %d for inbox %d (%s, message %d) at %d: %q", id, inbox, state, msg, created, text)
	}
}

// TestChaosModel sends each kind of model failure at the built daemon, one
// chat each. The daemon never exits; every message gets an answer or an
// honest sentence; the next message of the same chat is answered normally.
func TestChaosModel(t *testing.T) {
	t.Parallel() // a daemon of its own, with its own fakes
	tg := telegramtest.NewServer(t, botToken)
	model := openaitest.NewServer(t)
	refuse := `{"error":{"message":"This model's maximum context length is 16384 tokens. However, your messages resulted in 40000 tokens.","code":"context_length_exceeded"}}`
	scenarios := []struct {
		name    string
		replies []openaitest.Reply
		want    string // in the first reply: the answer, or the honest sentence
	}{
		{"hangs past the timeout", []openaitest.Reply{{Delay: time.Hour}, {Text: "answer 0"}}, "answer 0"},
		{"hangs every time", []openaitest.Reply{{Delay: time.Hour}, {Delay: time.Hour}}, "did not answer within"},
		{"connection closed mid-response", []openaitest.Reply{{Cut: true, Text: "lost"}, {Text: "answer 2"}}, "answer 2"},
		{"malformed body", []openaitest.Reply{{Body: `{"choices": [{"message": `}, {Text: "answer 3"}}, "answer 3"},
		{"no choices", []openaitest.Reply{{Body: `{"id": "x", "object": "chat.completion", "choices": []}`}}, "Sorry"},
		{"429 with Retry-After", []openaitest.Reply{{Status: 429, RetryAfter: "1"}, {Text: "answer 5"}}, "answer 5"},
		{"500s", []openaitest.Reply{{Status: 500}, {Status: 500}}, "the model service failed (HTTP 500)"},
		{"broken tool arguments", []openaitest.Reply{{ToolCalls: []agent.ToolCall{{ID: "c1", Name: "read_file", Arguments: `{"path": `}}}, {Text: "answer 7"}}, "answer 7"},
		{"context length", []openaitest.Reply{{Status: 400, Body: refuse}, {Text: "answer 8"}}, "answer 8"},
	}
	ids := make([]string, len(scenarios))
	for i := range ids {
		ids[i] = strconv.Itoa(2000 + i)
	}
	cfg := gatewayConfig(t, t.TempDir(), tg, model, map[string]string{
		"channels.telegram.allow_from": "[" + strings.Join(ids, ", ") + "]",
		"provider.timeout":             "1s",
		"provider.max_retries":         "1",
	})
	d := startDaemon(t, cfg)
	for i, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			chat := int64(2000 + i)
			model.Script(sc.replies...)
			tg.SendText(chat, chat, "user", fmt.Sprintf("question %d", i))
			got := waitSentTo(t, tg, chat, 1)
			if !strings.Contains(got.Text, sc.want) {
				t.Errorf("first reply = %q, want it to contain %q", got.Text, sc.want)
			}
			model.Script(openaitest.Reply{Text: fmt.Sprintf("normal %d", i)})
			tg.SendText(chat, chat, "user", fmt.Sprintf("next %d", i))
			if got := waitSentTo(t, tg, chat, 2); got.Text != fmt.Sprintf("normal %d", i) {
				t.Errorf("next reply = %q, want the normal answer", got.Text)
			}
		})
	}
	select {
	case <-d.done:
		t.Fatalf("the daemon exited; logs:\n%s", d.logs.String())
	default:
	}
	waitLogged(t, d.logs, "telegram channel running")
	d.terminate(t)
	if strings.Contains(d.logs.String(), testKey) {
		t.Error("the API key appears in the daemon's logs")
	}
}

// waitSentTo waits for the n-th message sent to chat and returns it.
func waitSentTo(t *testing.T, tg *telegramtest.Server, chat int64, n int) telegramtest.Sent {
	t.Helper()
	ctx := waitCtx(t)
	for total := 1; ; total++ {
		sent, err := tg.WaitSent(ctx, total)
		if err != nil {
			t.Fatalf("no message %d to chat %d; sent: %+v", n, chat, tg.Sent())
		}
		var to []telegramtest.Sent
		for _, s := range sent {
			if s.ChatID == chat {
				to = append(to, s)
			}
		}
		if len(to) >= n {
			return to[n-1]
		}
	}
}

// TestChaosTelegram sends the Bot API's failures at the built daemon: 429
// with retry_after and 5xx on sendMessage, long polls dropped without an
// answer, a 409 conflict, and a path that goes silent. Every reply arrives
// exactly once; the conflict is explained in the log and retried; the
// daemon never exits.
func TestChaosTelegram(t *testing.T) {
	t.Parallel() // a daemon of its own, with its own fakes
	tg := telegramtest.NewServer(t, botToken)
	model := openaitest.NewServer(t)
	model.SetFunc(func(req goopenai.ChatCompletionRequest) openaitest.Reply {
		return openaitest.Reply{Text: "re: " + said(req.Messages[len(req.Messages)-1])}
	})
	cfg := gatewayConfig(t, t.TempDir(), tg, model, nil)
	d := startDaemon(t, cfg, "--poll-timeout", "1s", "--watchdog", "3s")
	waitLogged(t, d.logs, "telegram channel running")

	faults := []struct {
		name   string
		inject func()
	}{
		{"429 on sendMessage", func() { tg.FailNext("sendMessage", 2, 429, 1, "") }},
		{"5xx on sendMessage", func() { tg.FailNext("sendMessage", 2, 502, 0, "") }},
		{"long polls dropped", func() { tg.DropNext("getUpdates", 2) }},
		{"409 conflict", func() { tg.FailNext("getUpdates", 2, 409, 0, "") }},
		{"silent path", func() {
			tg.Stall()
			if err := tg.WaitHeld(waitCtx(t), 1); err != nil {
				t.Fatal(err)
			}
			tg.Resume()
		}},
	}
	for i, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			f.inject()
			text := fmt.Sprintf("message %d", i)
			tg.SendText(owner, owner, "ada", text)
			waitSentContaining(t, tg, owner, "re: "+text)
		})
	}
	waitLogged(t, d.logs, "409 Conflict", "another program is polling")
	select {
	case <-d.done:
		t.Fatalf("the daemon exited; logs:\n%s", d.logs.String())
	default:
	}
	d.terminate(t)
	for i := range faults {
		n := 0
		for _, s := range tg.Sent() {
			if s.Text == fmt.Sprintf("re: message %d", i) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s: the reply arrived %d times, want once", faults[i].name, n)
		}
	}
	if n := strings.Count(d.logs.String(), "refused getUpdates with 409 Conflict"); n != 1 {
		t.Errorf("the conflict is explained %d times in the log, want once", n)
	}
}

// TestChaosDiskFull fills the disk under the built daemon's database (a
// small tmpfs, so it needs root): the turn that cannot be saved is told to
// the chat, the log says why, nothing is corrupted or lost, and when space
// returns the waiting message is answered without a restart.
func TestChaosDiskFull(t *testing.T) {
	t.Parallel() // a daemon of its own, with its own fakes
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", data, "tmpfs", 0, "size=4m"); err != nil {
		t.Skipf("cannot mount a small tmpfs to fill (needs root): %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(data, syscall.MNT_DETACH) })

	tg := telegramtest.NewServer(t, botToken)
	model := openaitest.NewServer(t)
	// The answer to "while full" is too long for the space left.
	big := strings.Repeat("a long answer that needs room. ", 8000)
	model.SetFunc(func(req goopenai.ChatCompletionRequest) openaitest.Reply {
		if q := said(req.Messages[len(req.Messages)-1]); q != "while full" {
			return openaitest.Reply{Text: "re: " + q}
		}
		return openaitest.Reply{Text: big}
	})
	cfg := gatewayConfig(t, dir, tg, model, nil)
	d := startDaemon(t, cfg)
	tg.SendText(owner, owner, "ada", "before")
	waitSentContaining(t, tg, owner, "re: before")

	// Leave room for an inbound record, not for a turn with a long answer.
	filler := filepath.Join(data, "filler")
	fillDisk(t, data, filler, 48<<10)
	tg.SendText(owner, owner, "ada", "while full")
	waitLogged(t, d.logs, "storage is full: messages wait until disk space is freed")
	waitSentContaining(t, tg, owner, "the disk of the server I run on is full")

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitSentContaining(t, tg, owner, "a long answer that needs room")
	tg.SendText(owner, owner, "ada", "after")
	waitSentContaining(t, tg, owner, "re: after")
	waitLogged(t, d.logs, "telegram channel running")
	d.terminate(t)

	counts := map[string]int{}
	for _, s := range tg.Sent() {
		switch {
		case s.Text == "re: before", s.Text == "re: after":
			counts[s.Text]++
		case strings.HasPrefix(s.Text, "a long answer"): // its first part
			counts["long"]++
		case strings.Contains(s.Text, "disk of the server I run on is full"):
			counts["notice"]++
		}
	}
	if counts["re: before"] != 1 || counts["long"] != 1 || counts["re: after"] != 1 || counts["notice"] != 1 {
		t.Errorf("sent %v, want each answer and the notice once", counts)
	}
	db, err := sql.Open("sqlite3", filepath.Join(data, "nanobot.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var integrity string
	var open int
	if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&integrity); err != nil || integrity != "ok" {
		t.Errorf("integrity_check = %q, %v", integrity, err)
	}
	if err := db.QueryRow(`SELECT count(*) FROM inbox WHERE state <> 'done'`).Scan(&open); err != nil || open != 0 {
		t.Errorf("%d inbox items left unanswered (%v)", open, err)
	}
}

// fillDisk writes path until the file system holding dir has about leave
// bytes free.
func fillDisk(t *testing.T, dir, path string, leave int64) {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	free := int64(st.Bavail) * st.Bsize
	if err := os.WriteFile(path, make([]byte, max(0, free-leave)), 0o600); err != nil {
		t.Fatal(err)
	}
}
