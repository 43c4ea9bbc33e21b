//go:build bench

package bench

import (
	"context"
	"database/sql"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/nanobot-go/nanobot/agent/openai/openaitest"
	"github.com/nanobot-go/nanobot/memory"
	"github.com/nanobot-go/nanobot/schedule"
)

const (
	loadedJobs   = 10000
	jobChats     = 100
	latencyJobs  = 20
	idleCPUWait  = 60 * time.Second
	latencySpace = 250 * time.Millisecond
)

// measureJobs measures the daemon with 10,000 scheduled jobs across 100
// chats against one without any: start-up, idle memory and CPU over a
// minute, and the time from a job's due time to its sendMessage with an
// instant model.
func measureJobs(t *testing.T, br *benchRun) {
	empty, loaded := newJobsRig(t, br, 0), newJobsRig(t, br, loadedJobs)
	for _, r := range []*jobsRig{empty, loaded} {
		for i := range 6 {
			n := len(r.e.tg.Calls("getUpdates"))
			d := r.e.start(t)
			at, err := d.waitPoll(t, n+1)
			if err != nil {
				t.Fatalf("start: %v\n%s", err, br.logs)
			}
			if i > 0 { // the first start creates or migrates the database
				r.starts = append(r.starts, at.Sub(d.started))
			}
			if _, err := d.stop(); err != nil {
				t.Errorf("stop: %v", err)
			}
		}
	}
	br.rep.add("jobs", statRow("start to first getUpdates, no jobs", empty.starts, fmtDur, fmt.Sprintf("%d starts", len(empty.starts)), ""))
	br.rep.add("jobs", statRow(fmt.Sprintf("start to first getUpdates, %d jobs in %d chats", loadedJobs, jobChats), loaded.starts, fmtDur, fmt.Sprintf("%d starts", len(loaded.starts)), ""))

	// Both idle side by side for the same minute.
	for _, r := range []*jobsRig{empty, loaded} {
		r.d = r.e.startReady(t)
	}
	cpu0 := []time.Duration{empty.d.cpu(t), loaded.d.cpu(t)}
	time.Sleep(idleCPUWait) // the figure is what a minute of idling costs
	cpu1 := []time.Duration{empty.d.cpu(t), loaded.d.cpu(t)}
	for i, r := range []*jobsRig{empty, loaded} {
		m := r.d.memory(t)
		what := "no jobs"
		if i == 1 {
			what = fmt.Sprintf("%d jobs", loadedJobs)
		}
		br.rep.add("jobs", row{figure: "VmRSS / RssAnon after 60 s idle, " + what, median: fmtKB(m.rss) + " / " + fmtKB(m.anon), runs: "1 daemon"})
		br.rep.add("jobs", row{figure: "idle CPU over 60 s (user+sys), " + what, median: fmtDur(cpu1[i] - cpu0[i]), runs: "1 daemon", note: "one timer for the next due job, no polling"})
	}
	lat := loaded.latency(t, br.bin)
	br.rep.add("jobs", statRow(fmt.Sprintf("due time to sendMessage, instant model (%d one-shot jobs among %d)", len(lat), loadedJobs), lat, fmtDur, fmt.Sprintf("%d jobs", len(lat)), ""))
	for _, r := range []*jobsRig{empty, loaded} {
		if _, err := r.d.stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	}
}

type jobsRig struct {
	e      *env
	d      *daemon
	starts []time.Duration
}

func newJobsRig(t *testing.T, br *benchRun, jobs int) *jobsRig {
	t.Helper()
	users := make([]string, jobChats)
	for i := range users {
		users[i] = strconv.Itoa(5000 + i)
	}
	r := &jobsRig{e: newEnv(t, br, model{}, map[string]string{"agent.timezone": "UTC", "cron.max_jobs_per_chat": "1000",
		"channels.telegram.allow_from": "[" + strings.Join(users, ", ") + "]"})}
	// An instant model whose answer names the job it answers.
	r.e.stub.SetFunc(func(req goopenai.ChatCompletionRequest) openaitest.Reply {
		last := req.Messages[len(req.Messages)-1].Content
		if i := strings.LastIndex(last, "\n\n"); i >= 0 {
			last = last[i+2:]
		}
		return openaitest.Reply{Text: "fired: " + last}
	})
	if jobs > 0 {
		seedJobs(t, filepath.Join(r.e.dir, "data", "nanobot.db"), jobs)
	}
	return r
}

// seedJobs stores n daily jobs across jobChats chats, none due in the next
// few hours, in one transaction.
func seedJobs(t *testing.T, path string, n int) {
	t.Helper()
	st, err := memory.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	for i := range n {
		expr := fmt.Sprintf("%d %d * * *", i%60, (now.Hour()+6+i%12)%24)
		spec, err := schedule.Parse(schedule.Input{CronExpr: expr, TZ: "UTC"}, now, time.UTC)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(`INSERT INTO jobs (channel, chat_id, message, kind, spec, zone, next_run, created_at)
			VALUES ('telegram', ?, ?, 'cron', ?, 'UTC', ?, ?)`, strconv.Itoa(5000+i%jobChats), fmt.Sprintf("loaded job %d", i),
			expr, spec.Next(now).UnixMilli(), now.UnixMilli()); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// latency adds one-shot jobs due a quarter second apart, tells the running
// daemon with SIGHUP, and returns for each the time from its due time to
// the sendMessage of its answer.
func (r *jobsRig) latency(t *testing.T, bin string) []time.Duration {
	t.Helper()
	base := time.Now().Add(5 * time.Second).Truncate(time.Second)
	due := map[string]time.Time{}
	for i := range latencyJobs {
		at := base.Add(time.Duration(i) * latencySpace)
		msg := fmt.Sprintf("latency job %d", i)
		cmd := exec.Command(bin, "cron", "add", "-c", r.e.cfg, "--message", msg, "--at", at.UTC().Format(time.RFC3339Nano), "--chat", "5000")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("cron add: %v\n%s", err, out)
		}
		due["fired: "+msg] = at
	}
	if time.Now().After(base) {
		t.Fatal("adding the jobs took longer than their lead time")
	}
	if err := syscall.Kill(r.d.pid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	var out []time.Duration
	seen := map[string]bool{}
	for n := len(r.e.tg.Calls("sendMessage")) + 1; len(out) < latencyJobs; n++ {
		calls, err := r.e.tg.WaitCalls(ctx, "sendMessage", n)
		if err != nil {
			t.Fatalf("%d of %d job answers arrived: %v", len(out), latencyJobs, err)
		}
		c := calls[n-1]
		text := c.Params["text"]
		if at, ok := due[text]; ok && !seen[text] {
			seen[text] = true
			out = append(out, c.At.Sub(at))
		}
	}
	return out
}
