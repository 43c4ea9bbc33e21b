//go:build bench

package bench

import (
	"fmt"
	"testing"
	"time"
)

const (
	starts      = 6 // the first creates the database; the rest make the figure
	idleDaemons = 3
	idleWait    = 60 * time.Second
	runs        = 5 // repetitions of a latency or throughput figure
	rtPerRun    = 200
	toolsPerRun = 100
	tools       = 3
)

// measureStarts starts and stops the gateway several times on one
// directory and times start to first getUpdates and SIGTERM to exit.
func measureStarts(t *testing.T, br *benchRun) {
	e := newEnv(t, br, model{}, nil)
	var warm, stops []time.Duration
	var first time.Duration
	for i := range starts {
		n := len(e.tg.Calls("getUpdates"))
		d := e.start(t)
		at, err := d.waitPoll(t, n+1)
		if err != nil {
			t.Fatalf("start %d: %v\n%s", i, err, br.logs)
		}
		if i == 0 {
			first = at.Sub(d.started)
		} else {
			warm = append(warm, at.Sub(d.started))
		}
		stop, err := d.stop()
		if err != nil {
			t.Errorf("start %d: exit: %v", i, err)
		}
		stops = append(stops, stop)
	}
	br.rep.add("start", statRow("start to first getUpdates", warm, fmtDur, fmt.Sprintf("%d starts", len(warm)),
		fmt.Sprintf("process start to the fake receiving the first long poll, on an existing database; the first start, which creates it: %s", fmtDur(first))))
	br.rep.add("start", statRow("SIGTERM to exit, idle", stops, fmtDur, fmt.Sprintf("%d stops", len(stops)), ""))
}

// idleRun is a few daemons left alone for a minute.
type idleRun struct {
	since   time.Time // the last one's first long poll
	daemons []*daemon
	served  []*daemon // with the API and the web console listening too
}

// startIdle starts the idle daemons on t, the whole run's test, so they
// outlive the section that starts them.
func startIdle(t *testing.T, br *benchRun) *idleRun {
	t.Helper()
	r := &idleRun{}
	for range idleDaemons {
		r.daemons = append(r.daemons, newEnv(t, br, model{}, nil).startReady(t))
		listening := map[string]string{"api.listen": freeAddr(t), "web.listen": freeAddr(t)}
		r.served = append(r.served, newEnv(t, br, model{}, listening).startReady(t))
	}
	r.since = time.Now()
	return r
}

func (r *idleRun) finish(t *testing.T, br *benchRun) {
	time.Sleep(time.Until(r.since.Add(idleWait)))
	idle := time.Since(r.since)
	var rss, anon, hwm, servedRSS, servedAnon []int64
	for _, d := range r.daemons {
		u := d.memory(t)
		rss, anon, hwm = append(rss, u.rss), append(anon, u.anon), append(hwm, u.hwm)
		if _, err := d.stop(); err != nil {
			t.Errorf("idle gateway exit: %v", err)
		}
	}
	for _, d := range r.served {
		u := d.memory(t)
		servedRSS, servedAnon = append(servedRSS, u.rss), append(servedAnon, u.anon)
		if _, err := d.stop(); err != nil {
			t.Errorf("idle gateway exit: %v", err)
		}
	}
	n := fmt.Sprintf("%d daemons", len(r.daemons))
	defer func() {
		what := "the same, with api.listen and web.listen set (no client connected)"
		br.rep.add("memory", statRow(fmt.Sprintf("VmRSS after %.0f s idle, API and web console on", idle.Seconds()), servedRSS, fmtKB, n, what))
		br.rep.add("memory", statRow(fmt.Sprintf("RssAnon after %.0f s idle, API and web console on", idle.Seconds()), servedAnon, fmtKB, n, what))
	}()
	br.rep.add("memory", statRow(fmt.Sprintf("VmRSS after %.0f s idle", idle.Seconds()), rss, fmtKB, n, "gateway with Telegram (long polls of 25 s) and the admin endpoint on, left alone while the builds and micro-benchmarks ran; peak VmHWM "+fmtKB(maxOf(hwm))))
	br.rep.add("memory", statRow(fmt.Sprintf("RssAnon after %.0f s idle", idle.Seconds()), anon, fmtKB, n, "anonymous memory: the Go heap and stacks, C allocations (SQLite); the rest of VmRSS is the mapped binary and libraries (RssFile)"))
}

func maxOf[T int | int64](xs []T) T {
	var m T
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

// measureLatency times round trips one message at a time, in one chat
// each: a plain answer, and a turn of three list_dir rounds then the
// answer. It also sizes the model's requests in fresh chats and in the
// chat that has 1,000 messages behind it.
func measureLatency(t *testing.T, br *benchRun) {
	e := newEnv(t, br, model{}, nil)
	d := e.startReady(t)
	r := follow(t, e.tg)
	ctx := t.Context()

	turnBytes := func(chat int64, text string) int {
		t.Helper()
		n := e.stub.RequestCount()
		if _, err := e.exchange(ctx, r, chat, text); err != nil {
			t.Fatal(err)
		}
		for _, req := range e.stub.Requests()[n:] {
			if req.ToolChoice == nil { // the turn's, not a consolidation's
				return requestBytes(req)
			}
		}
		t.Fatalf("chat %d: no model request for the turn", chat)
		return 0
	}
	var fresh []int
	for i := range freshMax {
		fresh = append(fresh, turnBytes(freshChat+int64(i), plainText))
	}
	br.rep.add("requests", statRow("model request, first message of a fresh chat", fresh, fmtBytes, fmt.Sprintf("%d chats", len(fresh)),
		"JSON body: system prompt, tool schemas, the message"))

	var all []time.Duration
	var medians, p99s []time.Duration
	for range runs {
		var lats []time.Duration
		for range rtPerRun {
			lat, err := e.exchange(ctx, r, rtChat, plainText)
			if err != nil {
				t.Fatal(err)
			}
			lats = append(lats, lat)
		}
		all = append(all, lats...)
		medians, p99s = append(medians, percentile(lats, 0.5)), append(p99s, percentile(lats, 0.99))
	}
	runsOf := func(n int) string { return fmt.Sprintf("%d × %d messages", runs, n) }
	br.rep.add("latency", statRow("round trip, plain answer, median", medians, fmtDur, runsOf(rtPerRun),
		fmt.Sprintf("one chat, one message at a time, update queued at the fake to reply accepted by it; all %d: p10–p90 %s – %s", len(all), fmtDur(percentile(all, 0.1)), fmtDur(percentile(all, 0.9)))))
	br.rep.add("latency", statRow("round trip, plain answer, p99", p99s, fmtDur, runsOf(rtPerRun), "max "+fmtDur(percentile(all, 1))))

	var after []int
	for range runs {
		after = append(after, turnBytes(rtChat, plainText))
	}
	br.rep.add("requests", statRow(fmt.Sprintf("model request, chat with %d messages before it", runs*rtPerRun), after, fmtBytes, fmt.Sprintf("%d requests", len(after)),
		"older messages consolidated into MEMORY/HISTORY in the background (memory.window 50), so the request stays bounded"))

	all, medians, p99s = nil, nil, nil
	for range runs {
		var lats []time.Duration
		for range toolsPerRun {
			lat, err := e.exchange(ctx, r, toolChat, toolsText(tools))
			if err != nil {
				t.Fatal(err)
			}
			lats = append(lats, lat)
		}
		all = append(all, lats...)
		medians, p99s = append(medians, percentile(lats, 0.5)), append(p99s, percentile(lats, 0.99))
	}
	br.rep.add("latency", statRow("round trip, 3 list_dir rounds then the answer, median", medians, fmtDur, runsOf(toolsPerRun),
		fmt.Sprintf("4 model calls and 3 tool runs a turn; all %d: p10–p90 %s – %s", len(all), fmtDur(percentile(all, 0.1)), fmtDur(percentile(all, 0.9)))))
	br.rep.add("latency", statRow("round trip, 3 list_dir rounds then the answer, p99", p99s, fmtDur, runsOf(toolsPerRun), "max "+fmtDur(percentile(all, 1))))
	br.rep.add("latency", row{figure: "replies in the latency runs", median: r.health()})
	if !r.clean() {
		t.Errorf("latency runs: %s", r.health())
	}
	u := d.memory(t)
	br.rep.add("memory", row{figure: fmt.Sprintf("VmRSS after the latency runs (%d messages, 12 chats)", freshMax+runs*rtPerRun+runs+runs*toolsPerRun),
		median: fmtKB(u.rss), runs: "1 daemon", note: fmt.Sprintf("RssAnon %s, VmHWM %s", fmtKB(u.anon), fmtKB(u.hwm))})
	if _, err := d.stop(); err != nil {
		t.Errorf("gateway exit: %v", err)
	}
}
