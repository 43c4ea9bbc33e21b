//go:build bench

package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/nanobot-go/nanobot/agent/openai/openaitest"
	"github.com/nanobot-go/nanobot/channels/telegram/telegramtest"
	"github.com/nanobot-go/nanobot/config"
)

const (
	botToken   = "123:BENCH"
	rtChat     = int64(1000) // the private chat of the round-trip run
	firstChat  = int64(1001) // throughput chats are firstChat .. firstChat+chats-1
	chats      = 50
	perChat    = 20
	rtMessages = 1000
	starts     = 5
	agentRuns  = 20
	idleWait   = 60 * time.Second
	waitLimit  = 60 * time.Second // for any single "wait until" on a loaded machine
	mb         = 1e6              // figures are in MB = 10^6 bytes

	// Message ids of our own choosing, far above the ones the fake assigns
	// to the bot's messages, so that a reply's reply_to names the message
	// it answers.
	rtBase = int64(10_000_000) // + i
	tpBase = int64(20_000_000) // + (chat-firstChat)*1000 + m
)

// TestDaemon runs the release binary against the Bot API fake and the model
// stub and prints the whole-daemon figures as a markdown table.
func TestDaemon(t *testing.T) {
	bin := os.Getenv("NANOBOT_BIN")
	if bin == "" {
		t.Skip("NANOBOT_BIN is not set; run bench/gateway.sh")
	}
	tg := telegramtest.NewServer(t, botToken)
	stub := openaitest.NewServer(t)
	stub.SetDefault(openaitest.Reply{Text: "ok"})
	// Replies quote the message they answer, so each is matched exactly
	// even when queued messages merge into one turn.
	cfg := writeConfig(t, t.TempDir(), tg, stub, map[string]string{"channels.telegram.reply_to_message": "true"})
	logs := &syncBuffer{}
	var tab table

	fi, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	tab.add("binary size", fmtMB(fi.Size()), "< 20 MB", float64(fi.Size()) < 20*mb)

	startDurs, stopDurs := measureStarts(t, bin, cfg, tg, logs)
	tab.add(fmt.Sprintf("start to first getUpdates (median of %d)", starts),
		fmt.Sprintf("%s (runs: %s; the first creates the database)", fmtMS(median(startDurs)), fmtList(startDurs)),
		"< 20 ms", median(startDurs) < 20*time.Millisecond)
	tab.add(fmt.Sprintf("SIGTERM to exit, idle (median of %d)", starts), fmtMS(median(stopDurs)), "", nil)

	d := startDaemon(t, bin, cfg, logs)
	n := len(tg.Calls("getUpdates"))
	if _, err := waitCalls(t, tg, "getUpdates", n+1); err != nil {
		t.Fatalf("long-running gateway: %v\n%s", err, logs)
	}
	time.Sleep(idleWait) // the figure is the footprint after a minute of idling
	idle := d.memory(t)
	tab.add("idle RSS after 60 s", idle.String(), "< 12 MB", float64(idle.rss)*1024 < 12*mb)
	tab.add("idle VmHWM after 60 s", fmtKB(idle.hwm), "", nil)

	rt := roundTrip(t, tg)
	tab.add(fmt.Sprintf("round trip, median (%d messages, one chat)", len(rt.durs)), fmtMS(median(rt.durs)), "< 5 ms", median(rt.durs) < 5*time.Millisecond)
	tab.add("round trip, p99", fmtMS(percentile(rt.durs, 0.99)), "", nil)
	tab.add("round trip, max", fmtMS(slices.Max(rt.durs)), "", nil)
	tab.add("round trip, other messages in the chat", fmt.Sprintf("%d notices, %d duplicate replies, %d replies other than \"ok\"", rt.notices, rt.duplicates, rt.unexpected), "0 duplicates", rt.duplicates == 0)
	afterRT := d.memory(t)
	tab.add(fmt.Sprintf("RSS after %d messages", rtMessages), afterRT.String(), "", nil)
	tab.add(fmt.Sprintf("VmHWM after %d messages", rtMessages), fmtKB(afterRT.hwm), "", nil)

	tp := throughput(t, tg, stub)
	tab.add(fmt.Sprintf("throughput, %d chats × %d messages", chats, perChat),
		fmt.Sprintf("%.0f messages/s (%d answered in %s)", float64(tp.answered)/tp.wall.Seconds(), tp.answered, fmtMS(tp.wall)), "", nil)
	tab.add("throughput, turns", fmt.Sprintf("%d turns (%d model requests), %.0f turns/s", tp.turns, tp.requests, float64(tp.turns)/tp.wall.Seconds()), "", nil)
	tab.add("throughput, replies", fmt.Sprintf("%d sendMessage, %d duplicates, %d replies other than \"ok\"", tp.replies, tp.duplicates, tp.unexpected), "0 duplicates", tp.duplicates == 0)
	afterTP := d.memory(t)
	tab.add("RSS after throughput run", afterTP.String(), "", nil)
	tab.add("VmHWM after throughput run", fmtKB(afterTP.hwm), "", nil)

	t.Logf("SIGTERM to the loaded gateway at %s", time.Now().UTC().Format(time.RFC3339Nano))
	stopBusy, err := d.stop(t)
	if err != nil {
		t.Errorf("gateway exit: %v", err)
	}
	tab.add("SIGTERM to exit, after load", fmtMS(stopBusy), "", nil)
	ps := d.cmd.ProcessState
	tab.add("gateway CPU time, whole run (user+sys)", fmtMS(ps.UserTime()+ps.SystemTime()), "", nil)

	ag := agentMessage(t, bin, cfg)
	tab.add(fmt.Sprintf("agent -m hello wall time (median of %d)", agentRuns),
		fmt.Sprintf("%s (min %s, max %s)", fmtMS(median(ag.durs)), fmtMS(slices.Min(ag.durs)), fmtMS(slices.Max(ag.durs))),
		"< 30 ms", median(ag.durs) < 30*time.Millisecond)
	rss := fmt.Sprintf("%s (spawner's own peak %s is the floor)", fmtKB(ag.maxRSS), fmtKB(ag.spawnerHWM))
	if ag.maxRSS <= ag.spawnerHWM {
		rss = fmt.Sprintf("not measurable: the spawner peaked at %s", fmtKB(ag.spawnerHWM))
	}
	tab.add(fmt.Sprintf("agent -m hello max RSS (max of %d)", agentRuns), rss, "< 15 MB", float64(ag.maxRSS)*1024 < 15*mb)

	levels, summary := summarizeLogs(logs.String() + ag.stderr)
	tab.add("daemon log lines at warn/error", fmt.Sprintf("%d warn, %d error", levels["WARN"], levels["ERROR"]), "", nil)

	out := tab.String() + "\nDaemon log (warn and above, by message):\n" + summary
	// gateway.sh prints the table after go test's output; run directly, the
	// test prints it.
	path := os.Getenv("NANOBOT_BENCH_TABLE")
	if path == "" {
		fmt.Print("\n" + out)
		return
	}
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		t.Errorf("write table: %v", err)
	}
}

// writeConfig writes the repository's example config with the bench's fakes
// filled in and returns its path.
func writeConfig(t *testing.T, dir string, tg *telegramtest.Server, stub *openaitest.Server, extra map[string]string) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	users := []string{strconv.FormatInt(rtChat, 10)}
	for c := range int64(chats) {
		users = append(users, strconv.FormatInt(firstChat+c, 10))
	}
	values := map[string]string{
		"provider.base_url":            stub.URL(),
		"provider.api_key":             "sk-bench",
		"channels.telegram.enabled":    "true",
		"channels.telegram.token":      tg.Token(),
		"channels.telegram.api_url":    tg.URL(),
		"channels.telegram.allow_from": "[" + strings.Join(users, ", ") + "]",
		"agent.max_concurrent":         "8",
		"gateway.listen":               "",
		"log.level":                    "warn",
	}
	maps.Copy(values, extra)
	out, err := config.SetKeys(src, values)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// sendText queues a text from a user in their private chat, as the fake's
// SendText does, but under a message id of our choosing.
func sendText(tg *telegramtest.Server, chat, messageID int64, text string) {
	user := fmt.Sprintf("user%d", chat)
	tg.PushUpdate(models.Update{Message: &models.Message{
		ID:   int(messageID),
		From: &models.User{ID: chat, FirstName: user, Username: user},
		Date: int(time.Now().Unix()),
		Chat: models.Chat{ID: chat, Type: models.ChatTypePrivate, FirstName: user, Username: user},
		Text: text,
	}})
}

// daemon is a running `nanobot gateway` child process.
type daemon struct {
	cmd     *exec.Cmd
	started time.Time
	done    chan struct{} // closed when the process has been waited for
	waitErr error
}

func startDaemon(t *testing.T, bin, cfg string, logs *syncBuffer) *daemon {
	t.Helper()
	cmd := exec.Command(bin, "-c", cfg, "gateway")
	cmd.Stdout, cmd.Stderr = logs, logs
	// The child must not outlive a test binary that dies mid-run.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	d := &daemon{cmd: cmd, done: make(chan struct{})}
	d.started = time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		d.waitErr = cmd.Wait()
		close(d.done)
	}()
	t.Cleanup(func() {
		select {
		case <-d.done:
		default:
			_ = cmd.Process.Kill()
			<-d.done
		}
	})
	return d
}

// stop sends SIGTERM and waits for the exit, killing the process if it
// takes longer than a minute.
func (d *daemon) stop(t *testing.T) (time.Duration, error) {
	t.Helper()
	start := time.Now()
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return 0, err
	}
	select {
	case <-d.done:
		return time.Since(start), d.waitErr
	case <-time.After(waitLimit):
		_ = d.cmd.Process.Kill()
		<-d.done
		return time.Since(start), fmt.Errorf("no exit within %s of SIGTERM; killed", waitLimit)
	}
}

// usage is the memory of a process in kB, as /proc/<pid>/status reports it.
type usage struct{ rss, hwm, anon, file int64 }

func (u usage) String() string {
	return fmt.Sprintf("%s (anon %s, file %s)", fmtKB(u.rss), fmtKB(u.anon), fmtKB(u.file))
}

func (d *daemon) memory(t *testing.T) usage {
	t.Helper()
	u, err := readStatus(fmt.Sprintf("/proc/%d/status", d.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func readStatus(path string) (usage, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return usage{}, err
	}
	var u usage
	fields := map[string]*int64{"VmRSS": &u.rss, "VmHWM": &u.hwm, "RssAnon": &u.anon, "RssFile": &u.file}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if p := fields[key]; ok && p != nil {
			*p, _ = strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(val), " kB"), 10, 64)
		}
	}
	return u, nil
}

func waitCalls(t *testing.T, tg *telegramtest.Server, method string, n int) ([]telegramtest.Call, error) {
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	return tg.WaitCalls(ctx, method, n)
}

// measureStarts starts and stops the gateway several times; the first start
// also creates the database.
func measureStarts(t *testing.T, bin, cfg string, tg *telegramtest.Server, logs *syncBuffer) (startDurs, stopDurs []time.Duration) {
	t.Helper()
	for i := range starts {
		n := len(tg.Calls("getUpdates"))
		d := startDaemon(t, bin, cfg, logs)
		calls, err := waitCalls(t, tg, "getUpdates", n+1)
		if err != nil {
			t.Fatalf("start %d: %v\n%s", i, err, logs)
		}
		startDurs = append(startDurs, calls[n].At.Sub(d.started))
		stop, err := d.stop(t)
		if err != nil {
			t.Errorf("start %d: exit: %v", i, err)
		}
		stopDurs = append(stopDurs, stop)
	}
	return startDurs, stopDurs
}

type roundTrips struct {
	durs       []time.Duration
	notices    int // messages that answer no message (the daemon speaking on its own)
	duplicates int // replies to a message that was already answered
	unexpected int // replies other than the stub's "ok"
}

// roundTrip sends messages from one chat one at a time, each once the
// answer to the previous one arrived.
func roundTrip(t *testing.T, tg *telegramtest.Server) roundTrips {
	t.Helper()
	var r roundTrips
	next := len(tg.Sent()) // index of the next sent message to look at
	for i := range int64(rtMessages) {
		start := time.Now()
		sendText(tg, rtChat, rtBase+i, fmt.Sprintf("rt %d", i))
		for {
			ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
			sent, err := tg.WaitSent(ctx, next+1)
			cancel()
			if err != nil {
				t.Fatalf("round trip %d: %v", i, err)
			}
			s := sent[next]
			next++
			switch {
			case s.ChatID == rtChat && s.ReplyTo == rtBase+i:
				r.durs = append(r.durs, time.Since(start))
				if s.Text != "ok" {
					r.unexpected++
					t.Logf("round trip %d: reply %q", i, s.Text)
				}
			case s.ReplyTo == 0:
				r.notices++
				t.Logf("round trip %d: notice to chat %d: %q", i, s.ChatID, s.Text)
				continue
			default:
				r.duplicates++
				t.Logf("round trip %d: reply to chat %d message %d again: %q", i, s.ChatID, s.ReplyTo, s.Text)
				continue
			}
			break
		}
	}
	return r
}

type throughputRun struct {
	wall       time.Duration
	answered   int // messages a reply answers (a reply answers its turn's merged messages)
	turns      int // distinct replies
	requests   int // model requests for turns, memory consolidation left out
	replies    int // sendMessage calls to the run's chats
	duplicates int // replies sent again
	unexpected int // replies other than the stub's "ok"
}

// throughput lets every chat send all its messages at once and waits until
// each message has been answered. Messages queued while a chat's turn runs
// merge into its next turn, whose reply quotes the last of them.
func throughput(t *testing.T, tg *telegramtest.Server, stub *openaitest.Server) throughputRun {
	t.Helper()
	sentBase := len(tg.Sent())
	reqBase := stub.RequestCount()
	start := time.Now()
	var wg sync.WaitGroup
	for c := range int64(chats) {
		wg.Go(func() {
			for m := int64(1); m <= perChat; m++ {
				sendText(tg, firstChat+c, tpBase+c*1000+m, fmt.Sprintf("tp c%d m%d", firstChat+c, m))
			}
		})
	}
	wg.Wait()

	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	var run throughputRun
	for n := sentBase + 1; ; {
		sent, err := tg.WaitSent(ctx, n)
		run = tallyReplies(sent[sentBase:])
		if err != nil {
			t.Errorf("throughput: %v; %d of %d messages answered", err, run.answered, chats*perChat)
			break
		}
		n = len(sent) + 1
		if run.answered == chats*perChat {
			break
		}
	}
	run.wall = time.Since(start)
	for _, req := range stub.Requests()[reqBase:] {
		if req.ToolChoice == nil { // consolidation forces its tool; turns do not
			run.requests++
		}
	}
	return run
}

func tallyReplies(sent []telegramtest.Sent) throughputRun {
	var run throughputRun
	upTo := map[int64]int64{} // by chat, the last message answered
	seen := map[int64]bool{}  // reply_to ids already answered
	for _, s := range sent {
		c := s.ChatID - firstChat
		if c < 0 || c >= chats {
			continue
		}
		run.replies++
		m := s.ReplyTo - tpBase - c*1000
		if m < 1 || m > perChat {
			continue // a notice
		}
		if seen[s.ReplyTo] {
			run.duplicates++
			continue
		}
		seen[s.ReplyTo] = true
		run.turns++
		upTo[s.ChatID] = max(upTo[s.ChatID], m)
		if s.Text != "ok" {
			run.unexpected++
		}
	}
	for _, m := range upTo {
		run.answered += int(m)
	}
	return run
}

type agentRunsResult struct {
	durs       []time.Duration
	maxRSS     int64 // kB
	spawnerHWM int64 // kB
	stderr     string
}

// agentMessage runs `nanobot agent -m hello` several times from a small
// spawner process: Linux counts the peak RSS of the process a child was
// forked from in the child's ru_maxrss, and this test process is large by now.
func agentMessage(t *testing.T, bin, cfg string) agentRunsResult {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestAgentSpawner$", "-test.count=1")
	cmd.Env = append(os.Environ(), "NANOBOT_BENCH_SPAWN="+cfg)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("agent spawner: %v\n%s%s", err, out, stderr.String())
	}
	var r agentRunsResult
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		switch {
		case len(f) == 3 && f[0] == "agent-run":
			ns, _ := strconv.ParseInt(f[1], 10, 64)
			kb, _ := strconv.ParseInt(f[2], 10, 64)
			r.durs = append(r.durs, time.Duration(ns))
			r.maxRSS = max(r.maxRSS, kb)
		case len(f) == 2 && f[0] == "spawner-hwm":
			r.spawnerHWM, _ = strconv.ParseInt(f[1], 10, 64)
		case len(f) > 0 && f[0] == "agent-failed":
			t.Errorf("agent -m hello: %s", strings.TrimSpace(line))
		case len(f) > 0 && f[0] == "agent-stderr":
			s, _ := strconv.Unquote(strings.TrimSpace(strings.TrimPrefix(line, "agent-stderr")))
			r.stderr += s
		}
	}
	if len(r.durs) != agentRuns {
		t.Fatalf("agent spawner reported %d runs, want %d:\n%s%s", len(r.durs), agentRuns, out, stderr.String())
	}
	return r
}

// TestAgentSpawner is the small process agentMessage runs the agent from;
// it does nothing in a normal run.
func TestAgentSpawner(t *testing.T) {
	cfg := os.Getenv("NANOBOT_BENCH_SPAWN")
	if cfg == "" {
		t.Skip("runs only as TestDaemon's spawner")
	}
	bin := os.Getenv("NANOBOT_BIN")
	for i := range agentRuns {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(bin, "-c", cfg, "agent", "-m", "hello")
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		start := time.Now()
		err := cmd.Run()
		wall := time.Since(start)
		var exitErr *exec.ExitError
		if err != nil && !errors.As(err, &exitErr) {
			t.Fatalf("agent run %d: %v", i, err)
		}
		if err != nil || strings.TrimSpace(stdout.String()) != "ok" {
			fmt.Printf("agent-failed run %d: %v, stdout %q\n", i, err, stdout.String())
		}
		if stderr.Len() > 0 {
			fmt.Printf("agent-stderr %q\n", stderr.String())
		}
		var maxRSS int64
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			maxRSS = ru.Maxrss // kB on Linux
		}
		fmt.Printf("agent-run %d %d\n", wall.Nanoseconds(), maxRSS)
	}
	u, err := readStatus("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("spawner-hwm %d\n", u.hwm)
}

var logLine = regexp.MustCompile(`level=(\w+) msg=("(?:[^"\\]|\\.)*"|\S+)`)

// summarizeLogs counts log lines by level and lists each distinct warn or
// error message with its count, first and last occurrence.
func summarizeLogs(logs string) (levels map[string]int, summary string) {
	levels = map[string]int{}
	counts := map[string]int{}
	first, last := map[string]string{}, map[string]string{}
	var order []string
	for line := range strings.Lines(logs) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		level, msg := "OTHER", line
		if m := logLine.FindStringSubmatch(line); m != nil {
			level, msg = m[1], m[2]
		}
		levels[level]++
		if level == "INFO" || level == "DEBUG" {
			continue
		}
		key := level + " " + msg
		if counts[key] == 0 {
			order = append(order, key)
			first[key] = line
		}
		counts[key]++
		last[key] = line
	}
	var b strings.Builder
	if len(order) == 0 {
		b.WriteString("(none)\n")
	}
	for _, k := range order {
		fmt.Fprintf(&b, "- %d× %s\n  first: %s\n", counts[k], k, first[k])
		if counts[k] > 1 {
			fmt.Fprintf(&b, "  last:  %s\n", last[k])
		}
	}
	return levels, b.String()
}

// table is the markdown report.
type table struct{ rows [][4]string }

// add appends a figure; met is nil when the figure has no target.
func (tb *table) add(figure, measured, target string, met any) {
	verdict := ""
	if ok, isBool := met.(bool); isBool {
		verdict = "no"
		if ok {
			verdict = "yes"
		}
	}
	if target == "" {
		target = "–"
	}
	tb.rows = append(tb.rows, [4]string{figure, measured, target, verdict})
}

func (tb *table) String() string {
	var b strings.Builder
	b.WriteString("| figure | measured | target | met |\n|---|---|---|---|\n")
	for _, r := range tb.rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", r[0], r[1], r[2], r[3])
	}
	return b.String()
}

func median(ds []time.Duration) time.Duration { return percentile(ds, 0.5) }

// percentile is the nearest-rank percentile of ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	s := slices.Sorted(slices.Values(ds))
	k := int(float64(len(s))*p+0.999999) - 1
	return s[min(max(k, 0), len(s)-1)]
}

func fmtMS(d time.Duration) string {
	return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
}

func fmtList(ds []time.Duration) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond))
	}
	return strings.Join(parts, ", ") + " ms"
}

func fmtMB(bytes int64) string { return fmt.Sprintf("%.2f MB", float64(bytes)/mb) }

func fmtKB(kb int64) string { return fmtMB(kb * 1024) }

// syncBuffer collects a child's output while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
