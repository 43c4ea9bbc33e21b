package main

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3" // a second connection to the daemon's database
	goopenai "github.com/sashabaranov/go-openai"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/openai/openaitest"
	"github.com/nanobot-go/nanobot/channels/telegram/telegramtest"
	"github.com/nanobot-go/nanobot/config"
)

// editConfig rewrites keys of the config file at path as a user's editor
// would save it: the whole file replaced at once (temporary file, then
// rename in the same directory), so the daemon never reads half an edit.
func editConfig(t *testing.T, path string, values map[string]string) []byte {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out, err := config.SetKeys(src, values)
	if err != nil {
		t.Fatalf("SetKeys(%v) = %v", values, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".config-*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	if _, err := tmp.Write(out); err != nil {
		t.Fatal(err)
	}
	if err := tmp.Chmod(0o600); err != nil {
		t.Fatal(err)
	}
	if err := tmp.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		t.Fatal(err)
	}
	return out
}

// keyLine is the 1-based line of the first line of data that starts, after
// indentation, with prefix.
func keyLine(t *testing.T, data []byte, prefix string) int {
	t.Helper()
	for i, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), prefix) {
			return i + 1
		}
	}
	t.Fatalf("no line starts with %q", prefix)
	return 0
}

// waitLogged waits for a log line that contains every one of parts. The
// log is a plain buffer with nothing to wait on, so it is polled.
func waitLogged(t *testing.T, logs *syncBuffer, parts ...string) string {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		next := logs.next()
		for _, l := range strings.Split(logs.String(), "\n") {
			if containsAll(l, parts...) {
				return l
			}
		}
		select {
		case <-next:
		case <-deadline:
			t.Fatalf("no log line contains %q within 60 s; logs:\n%s", parts, logs.String())
		}
	}
}

// waitLoggedTimes waits for n log lines that contain every part.
func waitLoggedTimes(t *testing.T, logs *syncBuffer, n int, parts ...string) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		next := logs.next()
		got := 0
		for _, l := range strings.Split(logs.String(), "\n") {
			if containsAll(l, parts...) {
				got++
			}
		}
		if got >= n {
			return
		}
		select {
		case <-next:
		case <-deadline:
			t.Fatalf("%d of %d log lines contain %q within 60 s; logs:\n%s", got, n, parts, logs.String())
		}
	}
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// awaitSentTo waits for a message to chat among those sent after the first
// `after` ones. It reports false when ctx ends first.
func awaitSentTo(ctx context.Context, tg *telegramtest.Server, after int, chat int64) (telegramtest.Sent, bool) {
	for n := after + 1; ; n++ {
		sent, err := tg.WaitSent(ctx, n)
		if err != nil {
			return telegramtest.Sent{}, false
		}
		if m := sent[n-1]; m.ChatID == chat {
			return m, true
		}
	}
}

// ask sends text from the owner and waits for the answer.
func (h *gatewayHarness) ask(text string) telegramtest.Sent {
	h.t.Helper()
	before := len(h.tg.Sent())
	h.tg.SendText(owner, owner, "ada", text)
	m, ok := awaitSentTo(waitCtx(h.t), h.tg, before, owner)
	if !ok {
		h.t.Fatalf("no answer to %q within 60 s; sent: %+v\nlogs:\n%s", text, h.tg.Sent(), h.logs.String())
	}
	return m
}

// sentAt is the time the loop puts in front of each user message of a
// request ("[Monday, 2006-01-02 15:04 MST]\n").
var sentAt = regexp.MustCompile(`^\[[A-Z][a-z]+day, \d{4}-\d{2}-\d{2} \d{2}:\d{2} [^\]\n]*\]\n`)

// said is a message's text as its author wrote it: a user message without
// the time in front, a tool result without the reflection prompt the loop
// puts after the last result of a round.
func said(m goopenai.ChatCompletionMessage) string {
	switch m.Role {
	case "user":
		return sentAt.ReplaceAllString(m.Content, "")
	case "tool":
		return strings.TrimSuffix(m.Content, "\n\n"+reflection)
	}
	return m.Content
}

// reflection is the example config's reflection prompt.
const reflection = "Reflect on the results and decide next steps."

// requestFor is the model request whose last message is text.
func requestFor(t *testing.T, reqs []goopenai.ChatCompletionRequest, text string) goopenai.ChatCompletionRequest {
	t.Helper()
	for _, r := range slices.Backward(reqs) {
		if n := len(r.Messages); n > 0 && said(r.Messages[n-1]) == text {
			return r
		}
	}
	t.Fatalf("no model request ends with %q", text)
	return goopenai.ChatCompletionRequest{}
}

func TestGatewayReloadsConfig(t *testing.T) {
	const newcomer = 333
	h := startGateway(t, nil)

	// Not on the list yet: told their id, at no model cost.
	h.tg.SendText(newcomer, newcomer, "bob", "hello?")
	waitSentContaining(t, h.tg, newcomer, strconv.Itoa(newcomer))
	if n := h.model.RequestCount(); n != 0 {
		t.Fatalf("%d model calls for a sender not on the list, want 0", n)
	}

	// A valid edit lets them in without a restart. Until the daemon has
	// read the edit their messages go unanswered (the id notice is sent
	// once an hour), so keep asking, waiting longer each time.
	h.model.SetDefault(openaitest.Reply{Text: "welcome, bob"})
	editConfig(t, h.cfg, map[string]string{"channels.telegram.allow_from": fmt.Sprintf("[%d, %d]", owner, newcomer)})
	deadline := time.Now().Add(60 * time.Second)
	for attempt := 0; ; attempt++ {
		if time.Now().After(deadline) {
			t.Fatalf("user %d still unanswered 60 s after the edit; logs:\n%s", newcomer, h.logs.String())
		}
		before := len(h.tg.Sent())
		h.tg.SendText(newcomer, newcomer, "bob", fmt.Sprintf("may I now? (%d)", attempt))
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond<<min(attempt, 5))
		m, ok := awaitSentTo(ctx, h.tg, before, newcomer)
		cancel()
		if ok {
			if !strings.Contains(m.Text, "welcome, bob") {
				t.Fatalf("after the edit user %d got %q, want the model's answer", newcomer, m.Text)
			}
			break
		}
	}

	// A new model applies to the next turn.
	h.model.SetDefault(openaitest.Reply{Text: "answered"})
	editConfig(t, h.cfg, map[string]string{"provider.model": "gpt-reloaded"})
	deadline = time.Now().Add(60 * time.Second)
	for i := 0; ; i++ {
		q := fmt.Sprintf("which model answers? (%d)", i)
		h.ask(q)
		if requestFor(t, h.model.Requests(), q).Model == "gpt-reloaded" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the model edit was not applied within 60 s; logs:\n%s", h.logs.String())
		}
	}

	// An invalid edit is refused with file, line and key; the running
	// config stays.
	bad := editConfig(t, h.cfg, map[string]string{"agent.max_iterations": "500"})
	want := fmt.Sprintf("config.yaml:%d: agent.max_iterations: must be between 1 and 200", keyLine(t, bad, "max_iterations:"))
	waitLogged(t, h.logs, want)
	// The owner hears of it once, and /status says it until it is fixed.
	if told := waitSentContaining(t, h.tg, owner, "edit of the config was rejected"); !strings.Contains(told.Text, want) {
		t.Errorf("the owner was told %q, want the problem %q", told.Text, want)
	}
	h.ask("still there?")
	if got := requestFor(t, h.model.Requests(), "still there?").Model; got != "gpt-reloaded" {
		t.Errorf("after the rejected edit the model is %q, want gpt-reloaded", got)
	}
	if st := h.ask("/status"); !strings.Contains(st.Text, "was rejected, so the previous config is still in use: ") || !strings.Contains(st.Text, want) {
		t.Errorf("/status after a rejected edit = %q", st.Text)
	}
	if err := os.WriteFile(h.cfg, append(bad, '\n'), 0o600); err != nil { // the same mistake, read again
		t.Fatal(err)
	}
	waitLoggedTimes(t, h.logs, 2, want)
	h.ask("/status")
	if n := sentTo(h.tg, owner, "edit of the config was rejected"); n != 1 {
		t.Errorf("the owner was told of the same rejected edit %d times, want once", n)
	}

	// A key that needs a restart is named in a warning and not applied.
	editConfig(t, h.cfg, map[string]string{"agent.max_iterations": "20", "storage.path": "./moved/nanobot.db"})
	waitLogged(t, h.logs, "level=WARN", "restart", "storage.path")
	h.ask("and now?")
	if _, err := os.Stat(filepath.Join(h.dir, "moved")); err == nil {
		t.Error("the moved storage.path was opened before a restart")
	}
	if st := h.ask("/status"); strings.Contains(st.Text, "was rejected") {
		t.Errorf("/status after a valid edit still reports the rejected one: %q", st.Text)
	}

	if err := h.stop(); err != nil {
		t.Fatalf("gateway stopped with %v", err)
	}
	if logs := h.logs.String(); strings.Contains(logs, botToken) || strings.Contains(logs, testKey) {
		t.Error("a secret appears in the logs")
	}
}

// httpGet returns the status and body of a GET, or an error when the
// server cannot be reached.
func httpGet(ctx context.Context, url string) (int, string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// waitHTTPStatus polls url until it answers code (an HTTP endpoint has
// nothing to wait on) and returns the body.
func waitHTTPStatus(t *testing.T, url string, code int) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		got, body, err := httpGet(t.Context(), url)
		if err == nil && got == code {
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s = %d %q %v, want %d within 60 s", url, got, body, err, code)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestGatewayAdminEndpoint(t *testing.T) {
	addr := freeAddr(t)
	h := startGateway(t, map[string]string{"gateway.listen": addr})
	base := "http://" + addr

	waitHTTPStatus(t, base+"/healthz", http.StatusOK)
	waitHTTPStatus(t, base+"/readyz", http.StatusOK)
	if n := strings.Count(h.logs.String(), "admin endpoint listening"); n != 1 {
		t.Errorf("the log says %d times that the admin endpoint listens, want once", n)
	}
	if r := runCLI(t.Context(), "", "health", "--addr", addr); r.code != 0 {
		t.Errorf("health = %d %q %q, want 0", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(t.Context(), "", "health", "--ready", "--addr", addr); r.code != 0 {
		t.Errorf("health --ready = %d %q %q, want 0", r.code, r.stdout, r.stderr)
	}

	// Another process holds the write lock: the daemon is alive but cannot
	// write, so it is not ready.
	db, err := sql.Open("sqlite3", filepath.Join(h.dir, "data", "nanobot.db")+"?_busy_timeout=30000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	body := waitHTTPStatus(t, base+"/readyz", http.StatusServiceUnavailable)
	if !strings.Contains(body, "database") {
		t.Errorf("/readyz body = %q, want the reason naming the database", body)
	}
	if code, _, err := httpGet(t.Context(), base+"/healthz"); err != nil || code != http.StatusOK {
		t.Errorf("/healthz with the database locked = %d, %v, want 200", code, err)
	}
	if r := runCLI(t.Context(), "", "health", "--ready", "--addr", addr); r.code != exitFail {
		t.Errorf("health --ready with the database locked = %d %q, want %d", r.code, r.stderr, exitFail)
	}
	if r := runCLI(t.Context(), "", "health", "--addr", addr); r.code != 0 {
		t.Errorf("health with the database locked = %d %q, want 0", r.code, r.stderr)
	}

	if _, err := conn.ExecContext(t.Context(), "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	waitHTTPStatus(t, base+"/readyz", http.StatusOK)
	if r := runCLI(t.Context(), "", "health", "--ready", "--addr", addr); r.code != 0 {
		t.Errorf("health --ready after the lock is gone = %d %q, want 0", r.code, r.stderr)
	}
}

// metricValue is the value of the sample line that starts with series.
func metricValue(body, series string) (float64, bool) {
	for _, l := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(l, series+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f, err == nil
		}
	}
	return 0, false
}

func TestGatewayMetricsAfterTurn(t *testing.T) {
	addr := freeAddr(t)
	h := startGateway(t, map[string]string{"gateway.listen": addr})
	h.model.Script(openaitest.Reply{Text: "metered answer", Usage: agent.Usage{PromptTokens: 40, CompletionTokens: 20}})
	h.tg.SendText(owner, owner, "ada", "count this")
	waitSentContaining(t, h.tg, owner, "metered answer")

	code, body, err := httpGet(t.Context(), "http://"+addr+"/metrics")
	if err != nil || code != http.StatusOK {
		t.Fatalf("GET /metrics = %d, %v", code, err)
	}
	for _, c := range []struct {
		series  string
		want    float64
		atLeast bool
	}{
		{`nanobot_inbound_messages_total{channel="telegram"}`, 1, false},
		{`nanobot_turns_total{outcome="answered"}`, 1, false},
		{`nanobot_model_calls_total{outcome="ok"}`, 1, true},
		{`nanobot_model_call_duration_seconds_count`, 1, true},
		{`nanobot_model_tokens_total{kind="prompt"}`, 40, false},
		{`nanobot_model_tokens_total{kind="completion"}`, 20, false},
	} {
		got, ok := metricValue(body, c.series)
		switch {
		case !ok:
			t.Errorf("/metrics has no %s", c.series)
		case c.atLeast && got < c.want:
			t.Errorf("%s = %v, want at least %v", c.series, got, c.want)
		case !c.atLeast && got != c.want:
			t.Errorf("%s = %v, want %v", c.series, got, c.want)
		}
	}
}

// runCLIWithEnv is runCLI with an environment.
func runCLIWithEnv(ctx context.Context, env map[string]string, args ...string) result {
	var out, errb bytes.Buffer
	a := &app{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: func(k string) string { return env[k] }}
	err := a.run(ctx, args)
	code := exitCode(err, &errb)
	return result{err, code, out.String(), errb.String()}
}

func TestOnboardNonInteractive(t *testing.T) {
	const (
		flagToken = "424242:flag-token-abcdefghijklmnop"
		envToken  = "515151:env-token-abcdefghijklmnop"
		envKey    = "sk-from-the-environment-0987654321"
	)
	tests := []struct {
		name      string
		env       map[string]string
		flags     []string
		wantKey   string // as loaded, with the environment set
		wantToken string
		wantOwner string
		wantRefs  []string // written as references, never as values
		secrets   []string // must not be in the file
	}{
		{
			name:      "flags",
			flags:     []string{"--telegram-token", flagToken, "--api-key", testKey, "--owner", "12345"},
			wantKey:   testKey,
			wantToken: flagToken,
			wantOwner: "12345",
		},
		{
			name:      "environment",
			env:       map[string]string{"OPENAI_API_KEY": envKey, "TELEGRAM_BOT_TOKEN": envToken, "NANOBOT_OWNER": "777"},
			wantKey:   envKey,
			wantToken: envToken,
			wantOwner: "777",
			wantRefs:  []string{"${OPENAI_API_KEY}", "${TELEGRAM_BOT_TOKEN}"},
			secrets:   []string{envKey, envToken},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "bot")
			args := append([]string{"onboard", "--non-interactive", "--dir", dir, "--model", "gpt-4.1-mini"}, tc.flags...)
			r := runCLIWithEnv(t.Context(), tc.env, args...)
			if r.code != 0 {
				t.Fatalf("onboard = %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			for _, s := range append([]string{testKey, flagToken}, tc.secrets...) {
				if strings.Contains(r.stdout+r.stderr, s) {
					t.Errorf("onboard printed a secret:\n%s%s", r.stdout, r.stderr)
				}
			}
			path := filepath.Join(dir, "config.yaml")
			info, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if perm := info.Mode().Perm(); perm != 0o600 {
				t.Errorf("config.yaml mode = %o, want 600", perm)
			}
			for _, d := range []string{"workspace", "data"} {
				if fi, err := os.Stat(filepath.Join(dir, d)); err != nil || !fi.IsDir() {
					t.Errorf("%s directory: %v", d, err)
				}
			}
			written, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, ref := range tc.wantRefs {
				if !bytes.Contains(written, []byte(ref)) {
					t.Errorf("config.yaml lacks the reference %s", ref)
				}
			}
			for _, s := range tc.secrets {
				if bytes.Contains(written, []byte(s)) {
					t.Errorf("config.yaml holds the secret %q from the environment", s)
				}
			}

			// Loaded as the daemon would, with the environment it runs in.
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			cfg, err := config.Load(path)
			if err != nil {
				t.Fatalf("Load(written config) = %v", err)
			}
			if string(cfg.Provider.APIKey) != tc.wantKey || string(cfg.Channels.Telegram.Token) != tc.wantToken ||
				cfg.Provider.Model != "gpt-4.1-mini" || !cfg.Channels.Telegram.Enabled ||
				!slices.Equal(cfg.Channels.Telegram.AllowFrom, []string{tc.wantOwner}) {
				t.Errorf("loaded: key ok %v, token ok %v, model %q, telegram %v, allow_from %v",
					string(cfg.Provider.APIKey) == tc.wantKey, string(cfg.Channels.Telegram.Token) == tc.wantToken,
					cfg.Provider.Model, cfg.Channels.Telegram.Enabled, cfg.Channels.Telegram.AllowFrom)
			}
			if r := runCLI(t.Context(), "", "config", "check", path); r.code != 0 {
				t.Errorf("config check = %d\n%s\n%s", r.code, r.stdout, r.stderr)
			} else if strings.Contains(r.stdout, tc.wantKey) || strings.Contains(r.stdout, tc.wantToken) {
				t.Errorf("config check printed a secret:\n%s", r.stdout)
			}
		})
	}
}

func TestOnboardKeepsExistingConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	onboard := func(extra ...string) result {
		return runCLI(t.Context(), "", append([]string{"onboard", "--non-interactive", "--dir", dir, "--owner", "12345"}, extra...)...)
	}
	if r := onboard("--model", "first-model"); r.code != 0 {
		t.Fatalf("first onboard = %d\n%s", r.code, r.stderr)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	r := onboard("--model", "second-model")
	if r.code != exitFail || !strings.Contains(r.stderr, "already exists") || !strings.Contains(r.stderr, "--force") {
		t.Errorf("onboard over an existing config = %d %q, want %d and a hint at --force", r.code, r.stderr, exitFail)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
		t.Error("onboard without --force changed the existing config.yaml")
	}

	if r := onboard("--model", "second-model", "--force"); r.code != 0 {
		t.Fatalf("onboard --force = %d\n%s", r.code, r.stderr)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Provider.Model != "second-model" {
		t.Errorf("model after onboard --force = %q, want second-model", cfg.Provider.Model)
	}
}

func TestStatusCommand(t *testing.T) {
	tests := []struct {
		name        string
		extra       map[string]string
		want        []string
		wantMissing []string // keys listed under "Missing:"; none means nothing is missing
	}{
		{
			name: "incomplete",
			extra: map[string]string{
				"provider.model":               "status-model",
				"channels.telegram.enabled":    "true",
				"channels.telegram.token":      "",
				"channels.telegram.allow_from": "[]",
			},
			want:        []string{"status-model", "token not set", "not created yet"},
			wantMissing: []string{"channels.telegram.token:", "channels.telegram.allow_from:"},
		},
		{
			name: "complete",
			extra: map[string]string{
				"provider.model":               "status-model",
				"channels.telegram.enabled":    "true",
				"channels.telegram.token":      botToken,
				"channels.telegram.allow_from": "[111]",
			},
			want: []string{"status-model", "token set", "Nothing is missing."},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := writeConfig(t, t.TempDir(), "http://127.0.0.1:1/v1", tc.extra)
			r := runCLI(t.Context(), "", "-c", cfg, "status")
			if r.code != 0 {
				t.Fatalf("status = %d\n%s", r.code, r.stderr)
			}
			r.assertNoSecret(t)
			if strings.Contains(r.stdout, botToken) {
				t.Error("status printed the bot token")
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("status lacks %q:\n%s", w, r.stdout)
				}
			}
			_, missing, found := strings.Cut(r.stdout, "\nMissing:\n")
			if found != (len(tc.wantMissing) > 0) {
				t.Fatalf("status: Missing section present = %v, want %v:\n%s", found, len(tc.wantMissing) > 0, r.stdout)
			}
			for _, k := range tc.wantMissing {
				if !strings.Contains(missing, "- "+k) {
					t.Errorf("Missing lacks %s:\n%s", k, missing)
				}
			}
		})
	}
}

func TestDailyTokenBudget(t *testing.T) {
	stub := openaitest.NewServer(t)
	stub.Script(openaitest.Reply{Text: "first answer", Usage: agent.Usage{PromptTokens: 40, CompletionTokens: 20}})
	cfg := writeConfig(t, t.TempDir(), stub.URL(), map[string]string{"agent.daily_token_budget": "50"})

	if r := runCLI(t.Context(), "", "-c", cfg, "agent", "-m", "hello"); r.code != 0 || !strings.Contains(r.stdout, "first answer") {
		t.Fatalf("first turn = %d %q\n%s", r.code, r.stdout, r.stderr)
	}
	r := runCLI(t.Context(), "", "-c", cfg, "agent", "-m", "and again")
	if r.code != 0 {
		t.Errorf("turn past the budget = %d, want 0 (a polite answer is not a failure)\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "budget") || !strings.Contains(r.stdout, "50") {
		t.Errorf("turn past the budget said %q, want it to name the budget of 50", r.stdout)
	}
	if n := stub.RequestCount(); n != 1 {
		t.Errorf("%d model calls, want 1: past the budget no call is made", n)
	}

	// The budget is per chat.
	stub.Script(openaitest.Reply{Text: "other chat answer"})
	if r := runCLI(t.Context(), "", "-c", cfg, "agent", "--session", "other", "-m", "hi"); r.code != 0 || !strings.Contains(r.stdout, "other chat answer") {
		t.Errorf("another chat = %d %q, want an answer\n%s", r.code, r.stdout, r.stderr)
	}
}

// linesWith are the lines of s that contain every one of parts.
func linesWith(s string, parts ...string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if containsAll(l, parts...) {
			out = append(out, l)
		}
	}
	return out
}

func TestUsageAndAudit(t *testing.T) {
	stub := openaitest.NewServer(t)
	stub.Script(
		openaitest.Reply{ToolCalls: []agent.ToolCall{{ID: "ls", Name: "list_dir", Arguments: `{"path":"."}`}},
			Usage: agent.Usage{PromptTokens: 100, CompletionTokens: 10}},
		openaitest.Reply{Text: "The workspace is empty.", Usage: agent.Usage{PromptTokens: 120, CompletionTokens: 15, CachedTokens: 100}},
	)
	cfg := writeConfig(t, t.TempDir(), stub.URL(), nil)
	if r := runCLI(t.Context(), "", "-c", cfg, "agent", "-m", "what is in my workspace?"); r.code != 0 {
		t.Fatalf("agent = %d %q\n%s", r.code, r.stdout, r.stderr)
	}

	r := runCLI(t.Context(), "", "-c", cfg, "usage", "--since", "7d")
	if r.code != 0 {
		t.Fatalf("usage = %d\n%s", r.code, r.stderr)
	}
	rows := linesWith(r.stdout, "cli:default")
	if len(rows) != 1 {
		t.Fatalf("usage has %d rows for cli:default, want 1:\n%s", len(rows), r.stdout)
	}
	// DAY CHAT MODEL CALLS PROMPT COMPLETION TOTAL CACHED CACHED%
	if f := strings.Fields(rows[0]); len(f) != 9 || !slices.Equal(f[2:], []string{"gpt-4o-mini", "2", "220", "25", "245", "100", "45%"}) {
		t.Errorf("usage row = %q, want the model, 2 calls, 220 prompt, 25 completion, 245 total, 100 cached, 45%%", rows[0])
	}

	r = runCLI(t.Context(), "", "-c", cfg, "audit", "--since", "1h")
	if r.code != 0 || len(linesWith(r.stdout, "cli:default", "list_dir", "allow")) != 1 {
		t.Errorf("audit = %d, want one allowed list_dir call of cli:default:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t.Context(), "", "-c", cfg, "audit", "--denied")
	if lines := strings.Split(strings.TrimSpace(r.stdout), "\n"); r.code != 0 || len(lines) != 1 {
		t.Errorf("audit --denied before any refusal = %d, want the header only:\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	// The command below is only ever judged: make sure the policy refuses
	// it before a turn can hand it to the shell tool.
	const dangerous = "rm -rf /"
	if r := runCLI(t.Context(), "", "-c", cfg, "safety", "check", dangerous); !strings.HasPrefix(r.stdout, "deny") {
		t.Fatalf("safety check %q = %q, want deny", dangerous, r.stdout)
	}
	stub.Script(
		openaitest.Reply{ToolCalls: []agent.ToolCall{{ID: "rm", Name: "exec", Arguments: `{"command":"` + dangerous + `"}`}}},
		openaitest.Reply{Text: "I will not do that."},
	)
	if r := runCLI(t.Context(), "", "-c", cfg, "agent", "-m", "wipe the disk"); r.code != 0 {
		t.Fatalf("agent = %d %q\n%s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t.Context(), "", "-c", cfg, "audit", "--denied")
	if r.code != 0 {
		t.Fatalf("audit --denied = %d\n%s", r.code, r.stderr)
	}
	if lines := strings.Split(strings.TrimSpace(r.stdout), "\n"); len(lines) != 2 ||
		!containsAll(lines[1], "cli:default", "exec", "deny", dangerous) {
		t.Errorf("audit --denied = %q, want one refused exec of %q", lines, dangerous)
	}
}

func TestOnboardInteractive(t *testing.T) {
	dir := t.TempDir()
	answers := "123456:typed-token\n\ngpt-typed\nsk-typed-key-123456\n4242\n"
	r := runCLI(t.Context(), answers, "onboard", "--dir", dir)
	if r.code != 0 {
		t.Fatalf("onboard = %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, prompt := range []string{"Telegram bot token", "Model API base URL [https://api.openai.com/v1]", "Model [gpt-4o-mini]", "API key", "numeric Telegram user id"} {
		if !strings.Contains(r.stdout, prompt) {
			t.Errorf("no prompt %q in:\n%s", prompt, r.stdout)
		}
	}
	cfgPath := filepath.Join(dir, "config.yaml")
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Provider.Model != "gpt-typed" || string(cfg.Provider.APIKey) != "sk-typed-key-123456" ||
		string(cfg.Channels.Telegram.Token) != "123456:typed-token" || cfg.Provider.BaseURL != "https://api.openai.com/v1" ||
		len(cfg.Channels.Telegram.AllowFrom) != 1 || cfg.Channels.Telegram.AllowFrom[0] != "4242" {
		t.Errorf("config from the answers: model %q, base %q, allow %v", cfg.Provider.Model, cfg.Provider.BaseURL, cfg.Channels.Telegram.AllowFrom)
	}
	if fi, err := os.Stat(cfgPath); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("config mode = %v, %v; want 0600 for typed secrets", fi.Mode().Perm(), err)
	}
}
