//go:build bench

package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/nanobot-go/nanobot/agent/openai/openaitest"
	"github.com/nanobot-go/nanobot/channels/telegram/telegramtest"
	"github.com/nanobot-go/nanobot/config"
)

const (
	botToken  = "123:BENCH"
	waitLimit = 60 * time.Second // for any single "wait until" on a loaded machine
	mb        = 1e6              // figures are in MB = 10^6 bytes

	// maxConcurrent is agent.max_concurrent for every daemon of the run
	// (the default is 4): high enough that turns per second with a slow
	// model can be seen to grow with the number of chats, then stop at it.
	maxConcurrent = 20

	// Private chats, one range per use; every one is in allow_from.
	rtChat    = int64(1000) // plain round trips
	toolChat  = int64(1001) // 3-tool round trips
	freshChat = int64(1100) // + i: first requests of fresh chats
	loadChat  = int64(2000) // + i: throughput and the soak
	freshMax  = 10
	loadMax   = 100

	// Message ids of our own choosing, far above the ones the fake assigns
	// to the bot's messages, so that a reply's reply_to names the message
	// it answers.
	firstMessageID = int64(10_000_000)
)

// env is one daemon's surroundings: its own Bot API fake, model stub,
// directory (config, database, workspace) and admin address.
type env struct {
	tg    *telegramtest.Server
	stub  *openaitest.Server
	dir   string
	cfg   string
	admin string // host:port of gateway.listen
	br    *benchRun
	delay time.Duration // the model's, per reply
	ids   atomic.Int64  // the last message id used
	slow  atomic.Int32  // slow round trips seen
}

// newEnv writes the repository's example config with the bench's fakes
// filled in, a model that answers as m says, and extra keys on top.
func newEnv(t *testing.T, br *benchRun, m model, extra map[string]string) *env {
	t.Helper()
	e := &env{tg: telegramtest.NewServer(t, botToken), stub: openaitest.NewServer(t), dir: t.TempDir(), br: br, delay: m.delay}
	e.ids.Store(firstMessageID)
	e.stub.SetFunc(m.reply)
	e.admin = freeAddr(t)
	users := []string{strconv.FormatInt(rtChat, 10), strconv.FormatInt(toolChat, 10)}
	for i := range freshMax {
		users = append(users, strconv.FormatInt(freshChat+int64(i), 10))
	}
	for i := range loadMax {
		users = append(users, strconv.FormatInt(loadChat+int64(i), 10))
	}
	values := map[string]string{
		"provider.base_url":                  e.stub.URL(),
		"provider.api_key":                   "sk-bench",
		"channels.telegram.enabled":          "true",
		"channels.telegram.token":            e.tg.Token(),
		"channels.telegram.api_url":          e.tg.URL(),
		"channels.telegram.allow_from":       "[" + strings.Join(users, ", ") + "]",
		"channels.telegram.reply_to_message": "true", // each reply names the message it answers
		"agent.max_concurrent":               strconv.Itoa(maxConcurrent),
		"gateway.listen":                     e.admin,
		"web.listen":                         "",
		"log.level":                          "warn",
	}
	maps.Copy(values, extra)
	src, err := os.ReadFile(filepath.Join("..", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := config.SetKeys(src, values)
	if err != nil {
		t.Fatal(err)
	}
	e.cfg = filepath.Join(e.dir, "config.yaml")
	if err := os.WriteFile(e.cfg, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return e
}

// freeAddr is a loopback address nothing listens on right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// nextID is a message id not used before in this env.
func (e *env) nextID() int64 { return e.ids.Add(1) }

// send queues a text from a user in their private chat, as the fake's
// SendText does, but under a message id of our choosing.
func (e *env) send(chat, messageID int64, text string) {
	user := fmt.Sprintf("user%d", chat)
	e.tg.PushUpdate(models.Update{Message: &models.Message{
		ID:   int(messageID),
		From: &models.User{ID: chat, FirstName: user, Username: user},
		Date: int(time.Now().Unix()),
		Chat: models.Chat{ID: chat, Type: models.ChatTypePrivate, FirstName: user, Username: user},
		Text: text,
	}})
}

// daemon is a running `nanobot gateway` child process.
type daemon struct {
	env     *env
	cmd     *exec.Cmd
	target  int // under a wrapper (strace), the daemon's own pid
	started time.Time
	done    chan struct{} // closed when the process has been waited for
	waitErr error
}

// start runs `nanobot gateway -c FILE`, under wrap (strace) when given.
func (e *env) start(t *testing.T, wrap ...string) *daemon {
	t.Helper()
	args := slices.Concat(wrap, []string{e.br.bin, "gateway", "-c", e.cfg})
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = e.br.logs, e.br.logs
	// The child must not outlive a test binary that dies mid-run.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	d := &daemon{env: e, cmd: cmd, done: make(chan struct{})}
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
			if d.target != 0 {
				_ = syscall.Kill(d.target, syscall.SIGKILL)
			}
			_ = cmd.Process.Kill()
			<-d.done
		}
	})
	return d
}

// startReady starts the daemon and waits for its first long poll.
func (e *env) startReady(t *testing.T, wrap ...string) *daemon {
	t.Helper()
	n := len(e.tg.Calls("getUpdates"))
	d := e.start(t, wrap...)
	if _, err := d.waitPoll(t, n+1); err != nil {
		t.Fatalf("gateway did not poll: %v\n%s", err, e.br.logs)
	}
	if len(wrap) > 0 {
		// The wrapper's only child is the daemon: signals and /proc
		// figures go to it.
		pid := d.cmd.Process.Pid
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
		f := strings.Fields(string(data))
		if err != nil || len(f) == 0 {
			t.Fatalf("no daemon under %s: %v", wrap[0], err)
		}
		d.target, _ = strconv.Atoi(f[0])
	}
	return d
}

// waitPoll waits for the n-th getUpdates call and returns when it came.
func (d *daemon) waitPoll(t *testing.T, n int) (time.Time, error) {
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	calls, err := d.env.tg.WaitCalls(ctx, "getUpdates", n)
	if err != nil {
		return time.Time{}, err
	}
	return calls[n-1].At, nil
}

// stop sends SIGTERM and waits for the exit, killing the process if it
// takes longer than a minute.
func (d *daemon) stop() (time.Duration, error) {
	start := time.Now()
	if err := syscall.Kill(d.pid(), syscall.SIGTERM); err != nil {
		return 0, err
	}
	select {
	case <-d.done:
		return time.Since(start), d.waitErr
	case <-time.After(waitLimit):
		_ = syscall.Kill(d.pid(), syscall.SIGKILL)
		_ = d.cmd.Process.Kill()
		<-d.done
		return time.Since(start), fmt.Errorf("no exit within %s of SIGTERM; killed", waitLimit)
	}
}

func (d *daemon) pid() int {
	if d.target != 0 {
		return d.target
	}
	return d.cmd.Process.Pid
}

// usage is the memory of a process in kB, as /proc/PID/status reports it.
type usage struct{ rss, hwm, anon, file int64 }

func (d *daemon) memory(t *testing.T) usage {
	t.Helper()
	u, err := readStatus(fmt.Sprintf("/proc/%d/status", d.pid()))
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

// fds counts the open file descriptors of the daemon.
func (d *daemon) fds(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", d.pid()))
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// cpu is the user plus system time the daemon has used so far.
func (d *daemon) cpu(t *testing.T) time.Duration {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", d.pid()))
	if err != nil {
		t.Fatal(err)
	}
	// The fields after the command name, which is in parentheses and may
	// hold spaces: state is field 3, utime 14 and stime 15.
	f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	const ticks = 100 // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / ticks
}

// scrape reads the daemon's admin endpoint /metrics: the values of the
// unlabelled series named.
func (d *daemon) scrape(t *testing.T, names ...string) map[string]float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+d.env.admin+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for line := range strings.Lines(string(body)) {
		name, v, ok := strings.Cut(strings.TrimSpace(line), " ")
		if ok && slices.Contains(names, name) {
			if got[name], err = strconv.ParseFloat(v, 64); err != nil {
				t.Fatalf("/metrics: %s %q: %v", name, v, err)
			}
		}
	}
	for _, n := range names {
		if _, ok := got[n]; !ok {
			t.Fatalf("no %s in /metrics:\n%s", n, body)
		}
	}
	return got
}

// syncBuffer collects the children's output while the test reads it.
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
