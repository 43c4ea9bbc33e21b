//go:build bench

package bench

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/nanobot-go/nanobot/agent/openai/openaitest"
	"github.com/nanobot-go/nanobot/channels/telegram/telegramtest"
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

// TestJobs measures the daemon with 10,000 scheduled jobs across 100 chats
// against one without any: start-up, idle memory and CPU over a minute, and
// the time from a job's due time to its sendMessage with an instant model.
// Run it with bench/jobs.sh.
func TestJobs(t *testing.T) {
	bin := os.Getenv("NANOBOT_BIN")
	if bin == "" {
		t.Skip("NANOBOT_BIN is not set; run bench/jobs.sh")
	}
	empty := newJobsRig(t, bin, 0)
	loaded := newJobsRig(t, bin, loadedJobs)
	var tab table

	for _, r := range []*jobsRig{empty, loaded} {
		r.starts, _ = measureStarts(t, bin, r.cfg, r.tg, r.logs)
	}
	// The first start of the empty daemon creates its database; it is left out.
	tab.add(fmt.Sprintf("start to first getUpdates, no jobs (median of starts 2-%d)", starts), fmtMS(median(empty.starts[1:])), "", nil)
	tab.add(fmt.Sprintf("start to first getUpdates, %d jobs in %d chats (median of starts 2-%d)", loadedJobs, jobChats, starts),
		fmtMS(median(loaded.starts[1:])), "", nil)

	// Both idle side by side for the same minute.
	for _, r := range []*jobsRig{empty, loaded} {
		r.d = startDaemon(t, bin, r.cfg, r.logs)
		if _, err := waitCalls(t, r.tg, "getUpdates", len(r.tg.Calls("getUpdates"))+1); err != nil {
			t.Fatalf("start: %v\n%s", err, r.logs)
		}
	}
	cpu0 := []time.Duration{cpuTime(t, empty.d), cpuTime(t, loaded.d)}
	time.Sleep(idleCPUWait)
	cpu1 := []time.Duration{cpuTime(t, empty.d), cpuTime(t, loaded.d)}
	memEmpty, memLoaded := empty.d.memory(t), loaded.d.memory(t)
	tab.add("idle RSS after 60 s, no jobs", memEmpty.String(), "", nil)
	tab.add(fmt.Sprintf("idle RSS after 60 s, %d jobs", loadedJobs), memLoaded.String(), "", nil)
	tab.add("idle CPU over 60 s, no jobs (user+sys)", fmtMS(cpu1[0]-cpu0[0]), "near 0", nil)
	tab.add(fmt.Sprintf("idle CPU over 60 s, %d jobs (user+sys)", loadedJobs), fmtMS(cpu1[1]-cpu0[1]), "near 0", nil)

	lat := loaded.latency(t, bin)
	tab.add(fmt.Sprintf("due time to sendMessage, instant model (%d one-shot jobs among %d, median)", len(lat), loadedJobs),
		fmtMS(median(lat)), "", nil)
	tab.add("due time to sendMessage, max", fmtMS(slices.Max(lat)), "", nil)
	for _, r := range []*jobsRig{empty, loaded} {
		if _, err := r.d.stop(t); err != nil {
			t.Errorf("stop: %v", err)
		}
	}
	levels, summary := summarizeLogs(empty.logs.String() + loaded.logs.String())
	tab.add("daemon log lines at warn/error", fmt.Sprintf("%d warn, %d error", levels["WARN"], levels["ERROR"]), "", nil)
	out := tab.String() + "\nDaemon log (warn and above, by message):\n" + summary
	if path := os.Getenv("NANOBOT_BENCH_TABLE"); path != "" {
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			t.Error(err)
		}
		return
	}
	fmt.Print("\n" + out)
}

type jobsRig struct {
	dir    string
	cfg    string
	tg     *telegramtest.Server
	stub   *openaitest.Server
	logs   *syncBuffer
	d      *daemon
	starts []time.Duration
}

func newJobsRig(t *testing.T, bin string, jobs int) *jobsRig {
	t.Helper()
	r := &jobsRig{dir: t.TempDir(), tg: telegramtest.NewServer(t, botToken), stub: openaitest.NewServer(t), logs: &syncBuffer{}}
	// An instant model whose answer names the job it answers.
	r.stub.SetFunc(func(req goopenai.ChatCompletionRequest) openaitest.Reply {
		last := req.Messages[len(req.Messages)-1].Content
		if i := strings.LastIndex(last, "\n\n"); i >= 0 {
			last = last[i+2:]
		}
		return openaitest.Reply{Text: "fired: " + last}
	})
	r.cfg = writeConfig(t, r.dir, r.tg, r.stub, map[string]string{"agent.timezone": "UTC", "cron.max_jobs_per_chat": "1000"})
	if jobs > 0 {
		seedJobs(t, filepath.Join(r.dir, "data", "nanobot.db"), jobs)
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
		cmd := exec.Command(bin, "-c", r.cfg, "cron", "add", "--message", msg, "--at", at.UTC().Format(time.RFC3339Nano), "--chat", "5000")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("cron add: %v\n%s", err, out)
		}
		due["fired: "+msg] = at
	}
	if time.Now().After(base) {
		t.Fatal("adding the jobs took longer than their lead time")
	}
	if err := r.d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	var out []time.Duration
	seen := map[string]bool{}
	for n := len(r.tg.Calls("sendMessage")) + 1; len(out) < latencyJobs; n++ {
		calls, err := r.tg.WaitCalls(ctx, "sendMessage", n)
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

// cpuTime is the user and system time the process has used.
func cpuTime(t *testing.T, d *daemon) time.Duration {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", d.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	// Fields after the command name in parentheses; utime and stime are
	// the 14th and 15th fields, in clock ticks (100 per second).
	fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
