package main

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/openai/openaitest"
	"github.com/nanobot-go/nanobot/channels/telegram/telegramtest"
	"github.com/nanobot-go/nanobot/schedule"
	"github.com/nanobot-go/nanobot/schedule/scheduletest"
)

// cronStart is when the clock of scheduled work stands when a test begins.
var cronStart = time.Date(2026, 3, 28, 8, 0, 0, 0, time.UTC)

// startGatewayAt runs the gateway with a manual clock for scheduled work.
func startGatewayAt(t *testing.T, clock *scheduletest.Clock, extra map[string]string) *gatewayHarness {
	t.Helper()
	return startGatewayIn(t, t.TempDir(), clock, extra)
}

// startGatewayIn is startGatewayAt with the config, workspace and data in dir.
func startGatewayIn(t *testing.T, dir string, clock *scheduletest.Clock, extra map[string]string) *gatewayHarness {
	t.Helper()
	values := map[string]string{"agent.timezone": "UTC", "heartbeat.interval": "0"}
	for k, v := range extra {
		values[k] = v
	}
	tg := telegramtest.NewServer(t, botToken)
	model := openaitest.NewServer(t)
	h := &gatewayHarness{t: t, tg: tg, model: model, dir: dir, logs: &syncBuffer{}, clock: clock}
	h.cfg = gatewayConfig(t, dir, tg, model, values)
	h.start()
	t.Cleanup(func() { h.stop() })
	return h
}

func cronCall(id, args string) openaitest.Reply {
	return openaitest.Reply{ToolCalls: []agent.ToolCall{{ID: id, Name: "cron", Arguments: args}}}
}

// resultIn returns the result of the tool call id in the request, as the
// tool returned it.
func resultIn(req goopenai.ChatCompletionRequest, id string) string {
	for _, m := range req.Messages {
		if m.Role == "tool" && m.ToolCallID == id {
			return said(m)
		}
	}
	return ""
}

// askFor sends text from chat and waits for the answer containing want.
func (h *gatewayHarness) askFor(chat int64, text, want string) {
	h.t.Helper()
	h.tg.SendText(chat, chat, "user", text)
	waitSentContaining(h.t, h.tg, chat, want)
}

func (h *gatewayHarness) db() *sql.DB {
	h.t.Helper()
	db, err := sql.Open("sqlite3", filepath.Join(h.dir, "data", "nanobot.db"))
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { db.Close() })
	return db
}

// firings counts the recorded runs of jobs.
func firings(t *testing.T, db *sql.DB) int {
	t.Helper()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM inbox WHERE channel = 'cron'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func sentTo(tg *telegramtest.Server, chat int64, part string) int {
	n := 0
	for _, s := range tg.Sent() {
		if s.ChatID == chat && strings.Contains(s.Text, part) {
			n++
		}
	}
	return n
}

func TestReminderThroughTheTool(t *testing.T) {
	clock := scheduletest.New(cronStart)
	h := startGatewayAt(t, clock, nil)
	h.model.Script(
		cronCall("c1", `{"action":"add","message":"Water the plants","at":"20m"}`),
		openaitest.Reply{Text: "I will remind you at 08:20."},
		openaitest.Reply{Text: "Time to water the plants!"},
		openaitest.Reply{Text: "Great, well done."},
	)
	h.askFor(owner, "remind me in 20 minutes to water the plants", "I will remind you")
	if got := resultIn(h.model.Requests()[1], "c1"); !strings.Contains(got, "Job set up. 1: once at Sat 2026-03-28 08:20 UTC") {
		t.Errorf("cron add result = %q", got)
	}

	clock.Set(cronStart.Add(19 * time.Minute))
	if n := h.model.RequestCount(); n != 2 {
		t.Fatalf("%d model calls before the reminder was due, want 2", n)
	}
	clock.Set(cronStart.Add(20 * time.Minute))
	waitSentContaining(t, h.tg, owner, "Time to water the plants!")
	req := h.model.Requests()[2]
	last := said(req.Messages[len(req.Messages)-1])
	if !strings.HasPrefix(last, "[Scheduled job 1 (once at Sat 2026-03-28 08:20 UTC, zone UTC), set up Sat 2026-03-28 08:00 UTC") ||
		!strings.HasSuffix(last, "Water the plants") {
		t.Errorf("the job's turn got %q", last)
	}
	for _, m := range req.Messages {
		if strings.Contains(m.Content, "remind me in 20 minutes") {
			t.Error("the job's turn sees the chat's history; it runs in a session of its own")
		}
	}

	// The user answers the reminder: the model sees what they answer.
	h.askFor(owner, "done!", "well done")
	reply := h.model.Requests()[3].Messages
	n := len(reply)
	if reply[n-2].Role != "assistant" || reply[n-2].Content != "Time to water the plants!" || said(reply[n-1]) != "done!" {
		t.Errorf("the chat's next turn ends with %+v, %+v; want the reminder, then the answer", reply[n-2], reply[n-1])
	}
	if got := sentTo(h.tg, owner, "water the plants"); got != 1 {
		t.Errorf("the reminder was sent %d times", got)
	}
}

func TestRecurringJobUntilRemoved(t *testing.T) {
	clock := scheduletest.New(cronStart)
	h := startGatewayAt(t, clock, nil)
	h.model.Script(cronCall("c1", `{"action":"add","message":"Stretch","every_seconds":3600}`), openaitest.Reply{Text: "Hourly, then."})
	h.askFor(owner, "every hour, remind me to stretch", "Hourly")
	h.model.SetDefault(openaitest.Reply{Text: "Stretch now!"})
	for i := 1; i <= 3; i++ {
		clock.Set(cronStart.Add(time.Duration(i) * time.Hour))
		for sentTo(h.tg, owner, "Stretch now!") < i {
			if _, err := h.tg.WaitSent(waitCtx(t), len(h.tg.Sent())+1); err != nil {
				t.Fatalf("slot %d: %v", i, err)
			}
		}
	}
	h.model.Script(cronCall("c2", `{"action":"remove","job_id":"1"}`), openaitest.Reply{Text: "Removed."})
	h.askFor(owner, "stop the stretching reminder", "Removed.")
	if got := resultIn(h.model.Requests()[6], "c2"); got != "Job 1 removed." {
		t.Errorf("cron remove result = %q", got)
	}
	db := h.db()
	before := firings(t, db)
	clock.Set(cronStart.Add(10 * time.Hour))
	if after := firings(t, db); before != 3 || after != 3 {
		t.Errorf("firings %d before and %d after removal, want 3 and 3", before, after)
	}
}

func TestMissedJobs(t *testing.T) {
	for _, tt := range []struct {
		policy string
		want   int
	}{{"once", 1}, {"skip", 0}} {
		t.Run(tt.policy, func(t *testing.T) {
			clock := scheduletest.New(cronStart)
			h := startGatewayAt(t, clock, map[string]string{"cron.missed": tt.policy})
			h.model.Script(cronCall("c1", `{"action":"add","message":"Check the mail","every_seconds":3600}`), openaitest.Reply{Text: "Will do."})
			h.askFor(owner, "check the mail every hour", "Will do.")
			if err := h.stop(); err != nil {
				t.Fatal(err)
			}
			clock.Set(cronStart.Add(3*time.Hour + 30*time.Minute)) // three slots pass while it is down
			h.model.SetDefault(openaitest.Reply{Text: "Mail checked."})
			h.start()
			if tt.want > 0 {
				waitSentContaining(t, h.tg, owner, "Mail checked.")
			}
			// A user's answer means start-up, missed runs included, is done.
			h.model.Script(openaitest.Reply{Text: "Hello again."})
			h.askFor(owner, "hi", "Hello again.")
			db := h.db()
			if got := firings(t, db); got != tt.want {
				t.Errorf("%d firings at start, want %d", got, tt.want)
			}
			if got := sentTo(h.tg, owner, "Mail checked."); got != tt.want {
				t.Errorf("%d deliveries at start, want %d", got, tt.want)
			}
			var next int64
			db.QueryRow(`SELECT next_run FROM jobs WHERE id = 1`).Scan(&next)
			if want := cronStart.Add(4 * time.Hour).UnixMilli(); next != want {
				t.Errorf("next run %s, want %s", time.UnixMilli(next).UTC(), cronStart.Add(4*time.Hour))
			}
		})
	}
}

func TestJobWhenTheModelIsDown(t *testing.T) {
	clock := scheduletest.New(cronStart)
	h := startGatewayAt(t, clock, map[string]string{"provider.max_retries": "0"})
	h.model.Script(
		cronCall("c1", `{"action":"add","message":"Take the medicine","at":"1h"}`),
		openaitest.Reply{Text: "Set."},
		openaitest.Reply{Status: 503},
	)
	h.askFor(owner, "remind me in an hour to take the medicine", "Set.")
	clock.Set(cronStart.Add(time.Hour))
	got := waitSentContaining(t, h.tg, owner, "Take the medicine")
	if !strings.Contains(got.Text, "could not be reached") {
		t.Errorf("sent %q, want the job's text with a note that the assistant could not be reached", got.Text)
	}
}

func TestChatSeesOnlyItsJobs(t *testing.T) {
	clock := scheduletest.New(cronStart)
	h := startGatewayAt(t, clock, map[string]string{"channels.telegram.allow_from": "[111, 333]"})
	h.model.Script(cronCall("c1", `{"action":"add","message":"Owner's secret job","cron_expr":"0 9 * * *"}`), openaitest.Reply{Text: "Set up."})
	h.askFor(owner, "every day at nine", "Set up.")

	h.model.Script(
		cronCall("l", `{"action":"list"}`), openaitest.Reply{Text: "You have none."},
		cronCall("r", `{"action":"remove","job_id":1}`), openaitest.Reply{Text: "Could not."},
	)
	h.askFor(333, "what are my jobs?", "You have none.")
	h.askFor(333, "remove job 1", "Could not.")
	reqs := h.model.Requests()
	if got := resultIn(reqs[3], "l"); got != "No scheduled jobs." {
		t.Errorf("the other chat's list = %q", got)
	}
	if got := resultIn(reqs[5], "r"); !strings.Contains(got, "this chat has no job 1") {
		t.Errorf("the other chat's remove = %q", got)
	}
	h.askFor(333, "/jobs", "No scheduled jobs.")
	h.askFor(owner, "/jobs", "1 scheduled job:")
	if got := sentTo(h.tg, owner, `next run Sat 2026-03-28 09:00 UTC: "Owner's secret job"`); got != 1 {
		t.Errorf("/jobs for the owner does not show the job's next run: %+v", h.tg.Sent())
	}
}

func TestCronCommandLine(t *testing.T) {
	stub := openaitest.NewServer(t)
	cfg := writeConfig(t, t.TempDir(), stub.URL(), map[string]string{"agent.timezone": "Europe/Berlin"})
	ctx := t.Context()
	r := runCLI(ctx, "", "-c", cfg, "cron", "add", "--message", "Pay the rent", "--cron", "0 9 1 * *", "--chat", "111")
	if r.code != 0 || !strings.Contains(r.stdout, `added 1: cron "0 9 1 * *", zone Europe/Berlin, next run`) {
		t.Fatalf("cron add = %d %q %q", r.code, r.stdout, r.stderr)
	}
	r = runCLI(ctx, "", "-c", cfg, "cron", "add", "--message", "x", "--cron", "0 9 * *", "--chat", "111")
	if r.code != exitUsage || !strings.Contains(r.stderr, `--cron "0 9 * *" is not a valid 5-field cron expression`) {
		t.Errorf("cron add with a bad expression = %d %q", r.code, r.stderr)
	}
	r = runCLI(ctx, "", "-c", cfg, "cron", "list", "--chat", "111")
	if r.code != 0 || !strings.Contains(r.stdout, "Pay the rent") || !strings.Contains(r.stdout, "Europe/Berlin") {
		t.Errorf("cron list = %d %q %q", r.code, r.stdout, r.stderr)
	}
	stub.Script(openaitest.Reply{Text: "Rent is due today."})
	r = runCLI(ctx, "", "-c", cfg, "cron", "run", "1")
	if r.code != 0 || !strings.Contains(r.stdout, "Rent is due today.") {
		t.Errorf("cron run = %d %q %q", r.code, r.stdout, r.stderr)
	}
	r = runCLI(ctx, "", "-c", cfg, "cron", "remove", "1")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "removed job 1" {
		t.Errorf("cron remove = %d %q %q", r.code, r.stdout, r.stderr)
	}
	r = runCLI(ctx, "", "-c", cfg, "cron", "remove", "1")
	if r.code == 0 || !strings.Contains(r.stderr, "there is no job 1") {
		t.Errorf("cron remove again = %d %q", r.code, r.stderr)
	}
}

// TestKillBetweenFiringAndDelivery: the built binary is killed with SIGKILL
// after a job's firing is recorded and before its answer is delivered; the
// next start delivers it exactly once.
func TestKillBetweenFiringAndDelivery(t *testing.T) {
	tg := telegramtest.NewServer(t, botToken)
	model := openaitest.NewServer(t)
	hold := make(chan struct{})
	defer close(hold)
	model.Script(openaitest.Reply{Hold: hold}, openaitest.Reply{Text: "Call mom now!"})
	dir := t.TempDir()
	cfg := gatewayConfig(t, dir, tg, model, nil)
	if r := runCLI(t.Context(), "", "-c", cfg, "cron", "add", "--message", "Call mom", "--at", "2s", "--chat", fmt.Sprint(owner)); r.code != 0 {
		t.Fatalf("cron add: %q %q", r.stdout, r.stderr)
	}

	first := startDaemon(t, cfg)
	if _, err := model.WaitRequests(waitCtx(t), 1); err != nil {
		t.Fatalf("the job did not fire: %v\n%s", err, first.logs.String())
	}
	first.kill()

	second := startDaemon(t, cfg)
	waitSentContaining(t, tg, owner, "Call mom now!")
	second.terminate(t)
	if got := sentTo(tg, owner, ""); got != 1 {
		t.Errorf("%d messages sent to the owner, want exactly 1: %+v", got, tg.Sent())
	}
	db, err := sql.Open("sqlite3", filepath.Join(dir, "data", "nanobot.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n, open int
	db.QueryRow(`SELECT count(*), count(*) FILTER (WHERE state <> 'done') FROM inbox WHERE channel = 'cron'`).Scan(&n, &open)
	if n != 1 || open != 0 {
		t.Errorf("%d firings, %d of them open; want 1 and 0", n, open)
	}
	if reqs := model.RequestCount(); reqs != 2 {
		t.Errorf("%d model requests, want 2 (the one cut off and the one after the restart)", reqs)
	}
}

// TestJobTurnsCountAndRemember: a job's turn reads its chat's memory under
// memory.scope: chat, and counts toward the chat's daily budget: once the
// chat has used it up, the job's own text is delivered without a model call.
func TestJobTurnsCountAndRemember(t *testing.T) {
	clock := scheduletest.New(cronStart)
	dir := t.TempDir()
	h := startGatewayIn(t, dir, clock, map[string]string{"memory.scope": "chat", "agent.daily_token_budget": "1000"})
	h.model.Script(
		cronCall("c1", `{"action":"add","message":"Drink some tea","at":"1h"}`),
		openaitest.Reply{Text: "Noted."},
		openaitest.Reply{Text: "Tea time!"},
		cronCall("c2", `{"action":"add","message":"Stretch your legs","at":"1h"}`),
		openaitest.Reply{Text: "Noted again.", Usage: agent.Usage{PromptTokens: 5000}},
	)
	h.askFor(owner, "remind me to drink tea in an hour", "Noted.")
	if _, err := h.db().Exec(`INSERT INTO memory (scope, doc, updated_at) VALUES ('chat:telegram:111', '- Prefers green tea', 0)`); err != nil {
		t.Fatal(err)
	}
	clock.Set(cronStart.Add(time.Hour))
	waitSentContaining(t, h.tg, owner, "Tea time!")
	if sys := h.model.Requests()[2].Messages[0].Content; !strings.Contains(sys, "Prefers green tea") {
		t.Errorf("the job's turn does not see the chat's memory:\n%s", sys)
	}

	h.askFor(owner, "and to stretch in an hour", "Noted again.") // uses up the day's budget
	before := h.model.RequestCount()
	clock.Set(cronStart.Add(2 * time.Hour))
	got := waitSentContaining(t, h.tg, owner, "Stretch your legs")
	if !strings.Contains(got.Text, "token budget for this chat is used up") {
		t.Errorf("sent %q, want the job's text with the budget note", got.Text)
	}
	if after := h.model.RequestCount(); after != before {
		t.Errorf("%d model calls for a job over the budget, want none", after-before)
	}
}

// TestDaylightSavingThroughTheGateway: a daily 09:00 job in Europe/Berlin
// reaches the chat at 09:00 Berlin time on both sides of each change, and
// /jobs shows its next run in that zone.
func TestDaylightSavingThroughTheGateway(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name     string
		day      time.Time // the day before the change
		nextShow string    // /jobs after the run on the day after it
	}{
		{"spring forward", time.Date(2026, 3, 28, 0, 0, 0, 0, berlin), "next run Tue 2026-03-31 09:00 CEST"},
		{"fall back", time.Date(2026, 10, 24, 0, 0, 0, 0, berlin), "next run Tue 2026-10-27 09:00 CET"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			start := tt.day.Add(7 * time.Hour) // 07:00 Berlin
			clock := scheduletest.New(start)
			h := startGatewayAt(t, clock, nil)
			h.model.Script(cronCall("c1", `{"action":"add","message":"Good morning","cron_expr":"0 9 * * *","tz":"Europe/Berlin"}`),
				openaitest.Reply{Text: "Every day at nine."})
			h.askFor(owner, "greet me at nine every day", "Every day at nine.")
			h.model.SetDefault(openaitest.Reply{Text: "Good morning!"})
			for i := range 3 {
				nine := time.Date(tt.day.Year(), tt.day.Month(), tt.day.Day()+i, 9, 0, 0, 0, berlin)
				clock.Set(nine.Add(-time.Minute))
				if got := firings(t, h.db()); got != i {
					t.Fatalf("%s: %d runs by 08:59 Berlin, want %d", nine.Format("Jan 2"), got, i)
				}
				clock.Set(nine)
				for sentTo(h.tg, owner, "Good morning!") < i+1 {
					if _, err := h.tg.WaitSent(waitCtx(t), len(h.tg.Sent())+1); err != nil {
						t.Fatalf("%s: no message at 09:00 Berlin: %v", nine.Format("Jan 2"), err)
					}
				}
			}
			h.askFor(owner, "/jobs", tt.nextShow)
		})
	}
}

// `nanobot cron add` and `cron run` beside a running gateway: the gateway
// is woken, sees the job and sends the answer at once, not on its next
// resync (every minute) or look at the outbox (every 30 s), and the
// commands say so.
func TestCronRunIsDeliveredAtOnce(t *testing.T) {
	h := startGateway(t, nil)
	waitLogged(t, h.logs, "telegram channel running")
	h.ask("hello") // the sender has looked at the outbox and waits
	ctx := t.Context()
	r := runCLI(ctx, "", "-c", h.cfg, "cron", "add", "--message", "Stretch", "--every", "24h", "--chat", fmt.Sprint(owner))
	if r.code != 0 || !strings.Contains(r.stdout, "the running gateway picks it up now") {
		t.Fatalf("cron add = %d %q %q", r.code, r.stdout, r.stderr)
	}
	added := time.Now()
	waitLogged(t, h.logs, "jobs reloaded", "jobs=1")
	if d := time.Since(added); d > 10*time.Second {
		t.Errorf("the gateway took %s to see the new job, want well under its one-minute resync", d)
	}
	h.model.Script(openaitest.Reply{Text: "Time to stretch."})
	r = runCLI(ctx, "", "-c", h.cfg, "cron", "run", "1")
	if r.code != 0 || !strings.Contains(r.stdout, "the running gateway delivers it now") {
		t.Fatalf("cron run = %d %q %q", r.code, r.stdout, r.stderr)
	}
	queued := time.Now()
	waitSentContaining(t, h.tg, owner, "Time to stretch.")
	if d := time.Since(queued); d > 10*time.Second {
		t.Errorf("the answer took %s to be sent, want well under the outbox rescan", d)
	}
}

// Without a gateway, cron run says when the answer goes out.
func TestCronRunWithoutGateway(t *testing.T) {
	stub := openaitest.NewServer(t)
	cfg := writeConfig(t, t.TempDir(), stub.URL(), nil)
	ctx := t.Context()
	if r := runCLI(ctx, "", "-c", cfg, "cron", "add", "--message", "x", "--every", "1h", "--chat", "111"); r.code != 0 || !strings.Contains(r.stdout, "no gateway is running") {
		t.Fatalf("cron add = %d %q %q", r.code, r.stdout, r.stderr)
	}
	stub.Script(openaitest.Reply{Text: "done"})
	if r := runCLI(ctx, "", "-c", cfg, "cron", "run", "1"); r.code != 0 || !strings.Contains(r.stdout, "no gateway is running: it is delivered when one starts") {
		t.Errorf("cron run = %d %q %q", r.code, r.stdout, r.stderr)
	}
}

// Without --chat a job goes to the one chat of allow_from; with several,
// the error lists them. A job in the host's zone is listed by the zone's
// real name, its next run in that zone.
func TestCronAddDefaultChatAndHostZone(t *testing.T) {
	stub := openaitest.NewServer(t)
	cfg := writeConfig(t, t.TempDir(), stub.URL(), map[string]string{"channels.telegram.allow_from": "[111]", "agent.timezone": ""})
	ctx := t.Context()
	r := runCLI(ctx, "", "-c", cfg, "cron", "add", "--message", "Water the plants", "--cron", "0 9 * * *")
	if r.code != 0 || !strings.Contains(r.stdout, "added 1: ") || !strings.Contains(r.stdout, "zone "+schedule.LocalName()+",") {
		t.Fatalf("cron add without --chat = %d %q %q", r.code, r.stdout, r.stderr)
	}
	r = runCLI(ctx, "", "-c", cfg, "cron", "list", "--chat", "111")
	if r.code != 0 || !strings.Contains(r.stdout, "Water the plants") {
		t.Fatalf("cron list --chat 111 = %d %q %q: the job is not the owner's", r.code, r.stdout, r.stderr)
	}
	row := strings.Split(strings.TrimSpace(r.stdout), "\n")[1]
	abbr, _ := time.Now().Zone()
	if strings.Contains(row, "Local") || !strings.Contains(row, schedule.LocalName()) || !strings.Contains(row, "09:00 "+abbr) {
		t.Errorf("cron list row = %q, want the zone %q and the next run at 09:00 %s", row, schedule.LocalName(), abbr)
	}

	cfg = writeConfig(t, t.TempDir(), stub.URL(), map[string]string{"channels.telegram.allow_from": "[111, \"@bob\"]"})
	r = runCLI(ctx, "", "-c", cfg, "cron", "add", "--message", "x", "--every", "1h")
	if r.code != exitUsage || !strings.Contains(r.stderr, "--chat ID is required") || !strings.Contains(r.stderr, "has several: 111, @bob") {
		t.Errorf("cron add without --chat, two owners = %d %q", r.code, r.stderr)
	}
}
