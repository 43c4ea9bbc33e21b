package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/openai/openaitest"
	"github.com/nanobot-go/nanobot/channels/telegram/telegramtest"
)

// webSession is a signed-in client of a gateway's web console, as the
// console's page talks to it.
type webSession struct {
	t    *testing.T
	base string
	c    *http.Client
	csrf string
}

// webLink is a sign-in link from `nanobot web login`.
func webLink(t *testing.T, cfg string) string {
	t.Helper()
	r := runCLI(t.Context(), "", "-c", cfg, "web", "login")
	link := strings.TrimSpace(r.stdout)
	if r.code != 0 || !strings.Contains(link, "/login?t=") {
		t.Fatalf("web login = %d %q\n%s", r.code, r.stdout, r.stderr)
	}
	return link
}

func signInWeb(t *testing.T, cfg, base string) *webSession {
	t.Helper()
	u, err := url.Parse(webLink(t, cfg))
	if err != nil {
		t.Fatal(err)
	}
	jar, _ := cookiejar.New(nil)
	s := &webSession{t: t, base: base, c: &http.Client{Jar: jar}}
	resp, err := s.c.PostForm(base+"/login", url.Values{"t": {u.Query().Get("t")}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/" {
		t.Fatalf("sign in = %d at %s", resp.StatusCode, resp.Request.URL)
	}
	var info struct{ CSRF string }
	s.get("/api/session", &info)
	s.csrf = info.CSRF
	return s
}

func (s *webSession) do(method, path, body string) (int, []byte) {
	s.t.Helper()
	req, _ := http.NewRequest(method, s.base+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-CSRF-Token", s.csrf)
	resp, err := s.c.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}

func (s *webSession) get(path string, v any) {
	s.t.Helper()
	code, data := s.do(http.MethodGet, path, "")
	if code != http.StatusOK {
		s.t.Fatalf("GET %s = %d %s", path, code, data)
	}
	if err := json.Unmarshal(data, v); err != nil {
		s.t.Fatalf("GET %s: %v in %s", path, err, data)
	}
}

type webMessage struct {
	ID   int64
	Role string
	Text string
}

func (s *webSession) messages() []webMessage {
	var out struct{ Messages []webMessage }
	s.get("/api/messages", &out)
	return out.Messages
}

func TestWebChatSurvivesKill(t *testing.T) {
	tg := telegramtest.NewServer(t, botToken)
	model := openaitest.NewServer(t)
	hold := make(chan struct{})
	defer close(hold)
	model.Script(openaitest.Reply{Hold: hold}, openaitest.Reply{Text: "answer after the crash"})
	addr := freeAddr(t)
	cfg := gatewayConfig(t, t.TempDir(), tg, model, map[string]string{"web.listen": addr})
	base := "http://" + addr

	first := startDaemon(t, cfg)
	waitLogged(t, first.logs, "web console listening")
	s := signInWeb(t, cfg, base)
	if code, body := s.do(http.MethodPost, "/api/messages", `{"text":"answer despite the crash","id":"m1"}`); code != http.StatusAccepted {
		t.Fatalf("send = %d %s", code, body)
	}
	if _, err := model.WaitRequests(waitCtx(t), 1); err != nil {
		t.Fatalf("the model was not asked: %v\n%s", err, first.logs.String())
	}
	first.kill()

	second := startDaemon(t, cfg)
	waitLogged(t, second.logs, "web console listening")
	if _, err := model.WaitRequests(waitCtx(t), 2); err != nil {
		t.Fatal(err)
	}
	// The page retries the send it saw no answer to: the same message.
	if code, body := s.do(http.MethodPost, "/api/messages", `{"text":"answer despite the crash","id":"m1"}`); code != http.StatusAccepted {
		t.Fatalf("send again = %d %s (the session should outlive the restart)", code, body)
	}
	waitLogged(t, second.logs, "turn finished")
	var users, answers int
	for _, m := range s.messages() {
		switch {
		case m.Role == "user" && m.Text == "answer despite the crash":
			users++
		case m.Role == "assistant" && m.Text == "answer after the crash":
			answers++
		}
	}
	if users != 1 || answers != 1 {
		t.Errorf("after the crash: %d questions, %d answers; want one each: %+v", users, answers, s.messages())
	}
	if n := len(model.Requests()); n != 2 {
		t.Errorf("%d model calls, want 2 (held, resumed)", n)
	}
	second.terminate(t)
}

// TestWebConsoleOperations: the console's sign-in from Telegram is the
// owner's alone and keeps no secret in the outbox; `nanobot status`,
// /readyz and /metrics cover it; the CLI revokes a session.
func TestWebConsoleOperations(t *testing.T) {
	addr, admin := freeAddr(t), freeAddr(t)
	h := startGateway(t, map[string]string{"web.listen": addr, "gateway.listen": admin,
		"channels.telegram.allow_from": fmt.Sprintf("[%d, %d]", owner, stranger)})
	waitLogged(t, h.logs, "web console listening")
	base := "http://" + addr

	h.tg.SendText(stranger, stranger, "eve", "/web")
	waitSentContaining(t, h.tg, stranger, "Only the owner")
	h.tg.SendText(-500, owner, "ada", "/web")
	waitSentContaining(t, h.tg, -500, "private chat")
	h.tg.SendText(owner, owner, "ada", "/web")
	sent := waitSentContaining(t, h.tg, owner, "/login?t=")
	if !strings.Contains(sent.LinkPreview, `"is_disabled":true`) {
		t.Errorf("the link's preview is not off: %q", sent.LinkPreview)
	}
	waitSentContaining(t, h.tg, owner, "Open the link above")
	link := sent.Text[strings.Index(sent.Text, "http"):]
	token := link[strings.Index(link, "t=")+2:]
	var kept int
	if err := h.db().QueryRow(`SELECT count(*) FROM outbox WHERE text LIKE '%' || ? || '%'`, token).Scan(&kept); err != nil || kept != 0 {
		t.Errorf("the sign-in token is in the outbox %d times (%v)", kept, err)
	}

	s := signInWeb(t, h.cfg, base)
	r := runCLI(t.Context(), "", "-c", h.cfg, "status")
	if !strings.Contains(r.stdout, "web  ") || !strings.Contains(r.stdout, "1 signed-in sessions") || !strings.Contains(r.stdout, addr+" at "+base) {
		t.Errorf("status:\n%s", r.stdout)
	}
	_, details, _ := httpGet(t.Context(), "http://"+admin+"/readyz")
	if !strings.Contains(details, "web: listening on "+addr) || !strings.Contains(details, "telegram: polling") {
		t.Errorf("/readyz details:\n%s", details)
	}
	var overview struct{ Lines []string }
	s.get("/api/overview", &overview)
	if all := strings.Join(overview.Lines, "\n"); !strings.Contains(all, "Endpoints: gpt-4o-mini@127.0.0.1:") ||
		!strings.Contains(all, "telegram: polling") || !strings.Contains(all, "web: listening on "+addr) || !strings.Contains(all, "Heartbeat:") {
		t.Errorf("the overview:\n%s", all)
	}
	_, metrics, _ := httpGet(t.Context(), "http://"+admin+"/metrics")
	if !strings.Contains(metrics, `nanobot_web_signins_total{outcome="ok"} 1`) || !strings.Contains(metrics, `nanobot_web_requests_total{kind="api"}`) {
		t.Errorf("/metrics lacks the console's counters:\n%s", metrics)
	}

	// Jobs: run one now (a firing in the inbox, answered like a due one),
	// remove it, and a second removal finds nothing.
	if r := runCLI(t.Context(), "", "-c", h.cfg, "cron", "add", "--message", "water the plants", "--every", "24h",
		"--chat", fmt.Sprint(owner)); r.code != 0 {
		t.Fatalf("cron add: %s", r.stderr)
	}
	h.model.Script(openaitest.Reply{Text: "Time to water the plants."})
	if code, body := s.do(http.MethodPost, "/api/jobs/1/run", ""); code != http.StatusAccepted {
		t.Errorf("run now = %d %s", code, body)
	}
	waitSentContaining(t, h.tg, owner, "Time to water the plants.")
	if code, body := s.do(http.MethodDelete, "/api/jobs/1", ""); code != http.StatusNoContent {
		t.Errorf("remove = %d %s", code, body)
	}
	if code, body := s.do(http.MethodDelete, "/api/jobs/1", ""); code != http.StatusNotFound {
		t.Errorf("remove again = %d %s, want 404", code, body)
	}
	// MEMORY edited elsewhere meanwhile is not overwritten.
	if code, body := s.do(http.MethodPut, "/api/memory/doc?scope=global", `{"doc":"- first","base":""}`); code != http.StatusOK {
		t.Fatalf("first edit = %d %s", code, body)
	}
	code, body := s.do(http.MethodPut, "/api/memory/doc?scope=global", `{"doc":"- stale","base":""}`)
	if code != http.StatusConflict || !strings.Contains(string(body), `"doc":"- first"`) {
		t.Errorf("an edit from a stale text = %d %s, want 409 with the current text", code, body)
	}

	r = runCLI(t.Context(), "", "-c", h.cfg, "web", "sessions")
	fields := strings.Fields(strings.Split(strings.TrimSpace(r.stdout), "\n")[1])
	if r = runCLI(t.Context(), "", "-c", h.cfg, "web", "revoke", fields[0]); r.code != 0 {
		t.Fatalf("web revoke: %s", r.stderr)
	}
	if code, _ := s.do(http.MethodGet, "/api/session", ""); code != http.StatusUnauthorized {
		t.Errorf("a session revoked on the host = %d, want 401", code)
	}
}

// TestWebConsoleRefusesTheNetworkWithoutProxy: a public address without
// web.public_url does not start.
func TestWebConsoleRefusesTheNetworkWithoutProxy(t *testing.T) {
	cfg := writeConfig(t, t.TempDir(), "http://127.0.0.1:1", map[string]string{"web.listen": "0.0.0.0:18791"})
	r := runCLI(t.Context(), "", "-c", cfg, "gateway")
	if r.code == 0 || !strings.Contains(r.stderr, "web.listen") || !strings.Contains(r.stderr, "web.public_url") {
		t.Errorf("gateway = %d:\n%s", r.code, r.stderr)
	}
}

// TestWebBackgroundTaskReportsToTheConsole: a task spawned from the
// console reports back in the console's chat, not on Telegram.
func TestWebBackgroundTaskReportsToTheConsole(t *testing.T) {
	addr := freeAddr(t)
	h := startGateway(t, map[string]string{"web.listen": addr})
	waitLogged(t, h.logs, "web console listening")
	m := lyonResearch()
	h.model.SetFunc(m.reply)
	s := signInWeb(t, h.cfg, "http://"+addr)
	if code, body := s.do(http.MethodPost, "/api/messages", `{"text":"research Lyon"}`); code != http.StatusAccepted {
		t.Fatalf("send = %d %s", code, body)
	}
	// The message's turn, then the turn of the task's report.
	waitLoggedTimes(t, h.logs, 2, "turn finished", "session=web:owner")
	if got := reports(h.model.Requests()); len(got) != 1 || !strings.Contains(got[0], "520,000") {
		t.Errorf("reports %q", got)
	}
	var texts []string
	for _, m := range s.messages() {
		texts = append(texts, m.Text)
	}
	if all := strings.Join(texts, "\n"); !strings.Contains(all, "Started the research.") || !strings.Contains(all, "The research is done") {
		t.Errorf("the console's conversation:\n%s", all)
	}
	for _, sent := range h.tg.Sent() {
		if strings.Contains(sent.Text, "research") {
			t.Errorf("Telegram got %q", sent.Text)
		}
	}
}

// lyonResearch is a model that spawns a background task on "research
// Lyon", says it started, and reports the task's result when told it.
func lyonResearch() *taskModel {
	return &taskModel{
		task: func(goopenai.ChatCompletionRequest) openaitest.Reply {
			return openaitest.Reply{Text: "Lyon has about 520,000 inhabitants."}
		},
		chat: func(last string, _ goopenai.ChatCompletionRequest) openaitest.Reply {
			switch {
			case last == "research Lyon":
				return openaitest.Reply{ToolCalls: []agent.ToolCall{spawnCall("s1", "Find the population of Lyon.", "Lyon")}}
			case strings.HasPrefix(last, "Started background task"):
				return openaitest.Reply{Text: "Started the research."}
			case strings.HasPrefix(last, "[Background task"):
				return openaitest.Reply{Text: "The research is done: about 520,000."}
			}
			return openaitest.Reply{Text: "anything else?"}
		},
	}
}
