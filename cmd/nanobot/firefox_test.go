package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/agent/openai/openaitest"
)

var listeningOn = regexp.MustCompile(`Marionette\s+INFO\s+Listening on port (\d+)`)

// marionette drives Firefox over its remote protocol (Marionette: JSON
// commands framed as "length:json" on TCP), the WebDriver commands the
// console's test needs and nothing more.
type marionette struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
	id   int
}

// firefox starts a headless Firefox with a fresh profile and returns a
// WebDriver session in it. Without Firefox the test skips; with
// NANOBOT_FIREFOX_REQUIRED set it fails.
func firefox(t *testing.T) *marionette {
	t.Helper()
	bin := os.Getenv("NANOBOT_FIREFOX")
	for _, name := range []string{"firefox-esr", "firefox"} {
		if bin == "" {
			bin, _ = exec.LookPath(name)
		}
	}
	if bin == "" {
		if os.Getenv("NANOBOT_FIREFOX_REQUIRED") != "" {
			t.Fatal("no Firefox found (install Debian's firefox-esr, or set NANOBOT_FIREFOX)")
		}
		t.Skip("no Firefox on this machine: the web console's Firefox test skips")
	}
	profile := t.TempDir()
	// Port 0: Firefox picks one. No updates, telemetry or other traffic of
	// its own.
	prefs := `user_pref("marionette.port", 0);
user_pref("app.update.enabled", false);
user_pref("browser.shell.checkDefaultBrowser", false);
user_pref("datareporting.policy.dataSubmissionEnabled", false);
user_pref("toolkit.telemetry.enabled", false);
user_pref("network.captive-portal-service.enabled", false);
user_pref("browser.safebrowsing.malware.enabled", false);
user_pref("browser.safebrowsing.phishing.enabled", false);
`
	if err := os.WriteFile(filepath.Join(profile, "user.js"), []byte(prefs), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--headless", "--marionette", "--no-remote", "--profile", profile)
	cmd.Env = append(os.Environ(), "MOZ_HEADLESS=1")
	logs := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-done })

	// Marionette says where it listens: "Marionette INFO Listening on port N".
	var port string
	deadline := time.After(60 * time.Second)
	for port == "" {
		next := logs.next()
		if m := listeningOn.FindStringSubmatch(logs.String()); m != nil {
			port = m[1]
			break
		}
		select {
		case <-done:
			t.Fatalf("Firefox exited:\n%s", logs.String())
		case <-deadline:
			t.Fatalf("Firefox opened no Marionette port:\n%s", logs.String())
		case <-next:
		}
	}
	conn, err := net.Dial("tcp", "127.0.0.1:"+port)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(3 * time.Minute))
	m := &marionette{t: t, conn: conn, r: bufio.NewReader(conn)}
	var hello map[string]any
	if err := m.read(&hello); err != nil {
		t.Fatalf("Marionette handshake: %v", err)
	}
	m.call("WebDriver:NewSession", map[string]any{"capabilities": map[string]any{"alwaysMatch": map[string]any{
		"timeouts": map[string]int{"script": 60000, "pageLoad": 60000}}}})
	return m
}

func (m *marionette) read(v any) error {
	size, err := m.r.ReadString(':')
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(strings.TrimSuffix(size, ":"))
	if err != nil {
		return fmt.Errorf("frame length %q", size)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(m.r, buf); err != nil {
		return err
	}
	return json.Unmarshal(buf, v)
}

// call sends a command and returns its result's "value" (or the whole
// result when it has none).
func (m *marionette) call(name string, params any) json.RawMessage {
	m.t.Helper()
	m.id++
	data, _ := json.Marshal([]any{0, m.id, name, params})
	if _, err := fmt.Fprintf(m.conn, "%d:%s", len(data), data); err != nil {
		m.t.Fatal(err)
	}
	var resp []json.RawMessage
	if err := m.read(&resp); err != nil || len(resp) != 4 {
		m.t.Fatalf("%s: %v %s", name, err, resp)
	}
	if string(resp[2]) != "null" {
		m.t.Fatalf("%s: %s", name, resp[2])
	}
	var result struct {
		Value json.RawMessage `json:"value"`
	}
	if json.Unmarshal(resp[3], &result) == nil && result.Value != nil {
		return result.Value
	}
	return resp[3]
}

func (m *marionette) navigate(url string) {
	m.call("WebDriver:Navigate", map[string]string{"url": url})
}

// click clicks the element the selector finds, waiting for the page it
// loads, as WebDriver's Element Click does.
func (m *marionette) click(selector string) {
	m.t.Helper()
	var found map[string]string
	json.Unmarshal(m.call("WebDriver:FindElement", map[string]string{"using": "css selector", "value": selector}), &found)
	for _, id := range found {
		m.call("WebDriver:ElementClick", map[string]string{"id": id})
		return
	}
	m.t.Fatalf("no element %s", selector)
}

// script runs a function body in the page, awaiting a promise it returns.
func (m *marionette) script(body string, args ...any) json.RawMessage {
	m.t.Helper()
	if args == nil {
		args = []any{}
	}
	return m.call("WebDriver:ExecuteScript", map[string]any{"script": body, "args": args})
}

// waitFor waits, in the page, until the expression holds (20 s at most).
func (m *marionette) waitFor(expr string) {
	m.t.Helper()
	js := `const until = Date.now() + 20000;
return new Promise(resolve => (function check() {
	let ok = false;
	try { ok = !!(` + expr + `); } catch (e) {}
	if (ok || Date.now() > until) resolve(ok); else requestAnimationFrame(check);
})());`
	if string(m.script(js)) != "true" {
		m.t.Fatalf("the page never had %s; it shows:\n%s", expr, m.script(`return document.body.innerText`))
	}
}

// TestWebConsoleInFirefox: the console signs in, chats, renders a reply
// safely and draws its charts in Firefox as in Chromium.
func TestWebConsoleInFirefox(t *testing.T) {
	ff := firefox(t)
	addr := freeAddr(t)
	h := startGateway(t, map[string]string{"web.listen": addr})
	waitLogged(t, h.logs, "web console listening")
	h.model.Script(withUsage(openaitest.Reply{Text: injection}, 900, 30))

	ff.navigate(webLink(t, h.cfg))
	ff.click(`button[type=submit]`)
	ff.waitFor(`document.querySelector('#message-input')`)
	ff.script(`document.getElementById('message-input').value = 'hello from Firefox';`)
	ff.click(`#send`)
	ff.waitFor(`[...document.querySelectorAll('#messages .msg.assistant')].some(e => e.textContent.includes('Pushed.'))`)
	if n := string(ff.script(`return document.querySelectorAll('#messages img, #messages script').length + (window.pwned || 0)`)); n != "0" {
		t.Errorf("the model's markup became elements or ran in Firefox (%s)", n)
	}
	ff.script(`location.hash = '#usage';`)
	ff.waitFor(`document.querySelector('svg.chart[data-chart="by-model"] rect.bar')`)
	ff.navigate("http://" + addr + "/static/markdown-test.html")
	ff.waitFor(`document.getElementById('result').textContent.startsWith('PASS')`)
	if errs := string(ff.script(`return document.getElementById('result').textContent`)); !strings.HasPrefix(errs, `"PASS`) {
		t.Errorf("the Markdown self-test in Firefox: %s", errs)
	}
}
