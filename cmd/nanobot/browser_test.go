package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/openai/openaitest"
	"github.com/nanobot-go/nanobot/channels/web"
	"github.com/nanobot-go/nanobot/daemon"
	"github.com/nanobot-go/nanobot/memory"
)

// chromium is the browser the console's tests drive: $NANOBOT_CHROMIUM,
// else the first of Debian's and others' names on the PATH. Without one
// the tests skip, unless NANOBOT_BROWSER_REQUIRED is set (.ci/run sets
// it after installing Chromium): then they fail.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("NANOBOT_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("NANOBOT_BROWSER_REQUIRED") != "" {
		t.Fatal("no Chromium found (install Debian's chromium, or set NANOBOT_CHROMIUM)")
	}
	t.Skip("no Chromium on this machine: the web console's browser tests skip")
	return ""
}

// browser starts a headless Chromium of its own (a fresh profile, no
// network of its own: it only reaches the console on loopback) and
// returns a tab; the returned function opens another, with no cookies.
func browser(t *testing.T) (context.Context, func() context.Context) {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(1100, 800),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.WithoutCancel(t.Context()), opts...)
	t.Cleanup(cancelAlloc)
	first, cancel := chromedp.NewContext(alloc)
	t.Cleanup(cancel)
	if err := chromedp.Do(first, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	limit := func(ctx context.Context) context.Context {
		ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		t.Cleanup(cancel)
		return ctx
	}
	return limit(first), func() context.Context {
		ctx, cancel := chromedp.NewContext(first, chromedp.WithNewBrowserContext())
		t.Cleanup(cancel)
		return limit(ctx)
	}
}

func drive(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v\npage:\n%s", what, err, pageOf(ctx))
	}
}

// pageOf is the tab's page, for a failure's message.
func pageOf(ctx context.Context) string {
	short, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	page, _ := chromedp.Run(short, chromedp.OuterHTML(chromedp.CSS("body")))
	return page
}

// waitText waits until the element's text contains want.
func waitText(sel, want string) chromedp.Action[chromedp.Void] {
	js := fmt.Sprintf(`(() => { const e = document.querySelector(%q); return !!e && e.textContent.includes(%q); })()`, sel, want)
	return chromedp.Poll[chromedp.Void](js, chromedp.WithPollingInterval(50*time.Millisecond))
}

// screenshot saves the page as PNG under $NANOBOT_SCREENSHOTS (README's
// pictures come from there), when set.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("NANOBOT_SCREENSHOTS")
	if dir == "" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// evalInt is the number a script gives.
func evalInt(t *testing.T, ctx context.Context, js string) int {
	t.Helper()
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](js, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("%s: %v\npage:\n%s", js, err, pageOf(ctx))
	}
	return n
}

// injection is a reply that tries to run script in the page: raw HTML,
// a javascript: link, an event handler.
const injection = "Pushed. **Done.** <img src=x onerror=\"window.pwned=1\"> <script>window.pwned=2</script> " +
	"[click](javascript:window.pwned=3) [docs](https://example.com/docs)"

// TestWebConsoleInABrowser drives the console as its owner does: a link
// from `nanobot web login`, a message whose command waits for approval
// with the tool shown as it runs, the answer rendered inert, MEMORY
// edited, a job paused, usage drawn; and what a stranger's page cannot.
func TestWebConsoleInABrowser(t *testing.T) {
	tab, otherTab := browser(t)
	addr := freeAddr(t)
	h := startGateway(t, map[string]string{"web.listen": addr, "tools.exec.approval": "owner"})
	waitLogged(t, h.logs, "web console listening")
	base := "http://" + addr
	if r := runCLI(t.Context(), "", "-c", h.cfg, "cron", "add", "--message", "water the plants", "--every", "24h",
		"--chat", fmt.Sprint(owner)); r.code != 0 {
		t.Fatalf("cron add: %s", r.stderr)
	}
	seedUsage(t, h)
	hold := make(chan struct{})
	defer close(hold)
	h.model.Script(
		withUsage(execCall("p", "git push origin main"), 1200, 40),
		withUsage(openaitest.Reply{Text: injection}, 1500, 60),
		openaitest.Reply{ToolCalls: []agent.ToolCall{{ID: "s", Name: "save_memory",
			Arguments: `{"history_entry":"Pushed the owner's work.","memory_update":"- The owner drinks green tea.\n- Pushes to origin main."}`}}},
		openaitest.Reply{Text: "never finished", Hold: hold},
	)

	link := webLink(t, h.cfg)
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(h.logs.String())
		}
	})
	drive(t, tab, "sign in", chromedp.Navigate(link), chromedp.Click(chromedp.CSS(`button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#message-input`)))

	drive(t, tab, "send a message", chromedp.SendKeys(chromedp.CSS(`#message-input`), "push my work"),
		chromedp.Click(chromedp.CSS(`#send`)),
		chromedp.WaitVisible(chromedp.CSS(`#approvals .approval button.approve`)),
		waitText(`#approvals .approval`, "git push origin main"),
		waitText(`#progress`, "exec"))
	screenshot(t, tab, "approval")
	drive(t, tab, "approve", chromedp.Click(chromedp.CSS(`#approvals .approval button.approve`)),
		waitText(`#messages .msg.assistant:last-child`, "Pushed."))
	if got := toolResult(t, h.model, "p"); !strings.Contains(got, "exit code:") {
		t.Errorf("the approved command's result = %q, want it run", got)
	}
	screenshot(t, tab, "chat")

	// The reply's markup is text; only the https link is a link.
	if n := evalInt(t, tab, `document.querySelectorAll('#messages img, #messages script, #messages [onerror]').length`); n != 0 {
		t.Errorf("%d elements made from the model's markup", n)
	}
	if n := evalInt(t, tab, `window.pwned || 0`); n != 0 {
		t.Errorf("the model's script ran (window.pwned = %d)", n)
	}
	if n := evalInt(t, tab, `[...document.querySelectorAll('#messages a')].filter(a => !a.href.startsWith('https:')).length`); n != 0 {
		t.Errorf("%d links that are not https", n)
	}
	if n := evalInt(t, tab, `document.querySelector('#messages').textContent.includes('<img src=x') ? 1 : 0`); n != 1 {
		t.Error("the raw HTML is not shown as text")
	}

	// The audit trail, filtered by tool and verdict, holds the approved call.
	audit := `fetch('/api/audit?tool=exec&verdict=ask').then(r => r.json()).then(d =>
		d.entries.filter(e => e.args.includes('git push origin main') && e.outcome.includes('approved')).length)`
	if n := evalInt(t, tab, audit); n != 1 {
		t.Errorf("%d audit entries of the approved push, want 1", n)
	}
	if n := evalInt(t, tab, `fetch('/api/audit?verdict=deny').then(r => r.json()).then(d => d.entries.length)`); n != 0 {
		t.Errorf("%d denied calls in the audit trail, want none", n)
	}

	// A script of the page (or one injected into it) without the page's
	// token changes nothing.
	forged := `fetch('/api/memory/doc?scope=global', {method: 'PUT', headers: {'Content-Type': 'application/json', 'X-CSRF-Token': 'forged'},
		body: JSON.stringify({doc: 'owned', base: ''})}).then(r => r.status)`
	if code := evalInt(t, tab, forged); code != 403 {
		t.Errorf("a forged CSRF token = %d, want 403", code)
	}

	drive(t, tab, "edit MEMORY", chromedp.Click(chromedp.CSS(`#tab-memory`)),
		chromedp.WaitEnabled(chromedp.CSS(`#memory-editor`)),
		chromedp.SetValue(chromedp.CSS(`#memory-editor`), "- The owner drinks green tea."),
		chromedp.Click(chromedp.CSS(`#memory-save`)),
		waitText(`#memory-status`, "Saved"),
		waitText(`#revisions`, "green tea"))
	screenshot(t, tab, "memory")
	if r := runCLI(t.Context(), "", "-c", h.cfg, "memory", "show"); !strings.Contains(r.stdout, "green tea") {
		t.Errorf("MEMORY after the edit:\n%s%s", r.stdout, r.stderr)
	}

	drive(t, tab, "pause the job", chromedp.Click(chromedp.CSS(`#tab-jobs`)),
		waitText(`#jobs`, "water the plants"),
		chromedp.Click(chromedp.Search(`//div[@id='jobs']//button[text()='Pause']`)),
		waitText(`#jobs`, "Resume"))
	if r := runCLI(t.Context(), "", "-c", h.cfg, "cron", "list"); !strings.Contains(r.stdout, "paused") {
		t.Errorf("the job after Pause:\n%s", r.stdout)
	}

	drive(t, tab, "usage charts", chromedp.Click(chromedp.CSS(`#tab-usage`)),
		chromedp.WaitVisible(chromedp.CSS(`svg.chart[data-chart="by-model"] rect.bar`)),
		chromedp.WaitVisible(chromedp.CSS(`svg.chart[data-chart="by-session"] rect.bar`)))
	screenshot(t, tab, "usage")
	drive(t, tab, "overview", chromedp.Click(chromedp.CSS(`#tab-overview`)), waitText(`#overview`, "web: listening on"))
	screenshot(t, tab, "overview")

	// On a phone's screen the chat fits, and /new starts over.
	drive(t, tab, "phone", chromedp.EmulateViewport(390, 800, chromedp.EmulateMobile), chromedp.Click(chromedp.CSS(`#tab-chat`)),
		chromedp.WaitVisible(chromedp.CSS(`#message-input`)))
	if w := evalInt(t, tab, `document.documentElement.scrollWidth`); w > 390 {
		t.Errorf("the chat is %d px wide on a 390 px screen", w)
	}
	screenshot(t, tab, "phone")
	drive(t, tab, "new chat", chromedp.EmulateReset(), chromedp.Click(chromedp.CSS(`#new-chat`)),
		waitText(`#messages .note`, "New conversation"))
	if n := evalInt(t, tab, `fetch('/api/messages').then(r => r.json()).then(d => d.messages.length)`); n != 0 {
		t.Errorf("%d messages after /new, want none", n)
	}
	history := `fetch('/api/history?scope=global&q=pushed').then(r => r.json()).then(d =>
		d.entries.filter(e => e.text.includes("Pushed the owner's work.")).length)`
	if n := evalInt(t, tab, history); n != 1 {
		t.Errorf("HISTORY search for the consolidated conversation found %d entries, want 1", n)
	}
	// A turn that would not end is stopped from the page.
	drive(t, tab, "stop", chromedp.SendKeys(chromedp.CSS(`#message-input`), "think it over for a long time"),
		chromedp.Click(chromedp.CSS(`#send`)), chromedp.WaitVisible(chromedp.CSS(`#working`)),
		chromedp.Click(chromedp.CSS(`#stop`)), waitText(`#messages .note:last-child`, "Stopped"))
	drive(t, tab, "markdown self-test", chromedp.Navigate(base+"/static/markdown-test.html"), waitText(`#result`, "PASS"))

	// The used link signs nobody in; a browser without the cookie gets
	// the signed-out page, and the API answers it 401.
	stranger := otherTab()
	drive(t, stranger, "used link", chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS(`button[type=submit]`)))
	used := `fetch('/login', {method: 'POST', body: new URLSearchParams({t: document.getElementById('t').value})}).then(r => r.status)`
	if code := evalInt(t, stranger, used); code != 401 {
		t.Errorf("a used link = %d, want 401", code)
	}
	expired := expiredLink(t, h, base)
	drive(t, stranger, "expired link", chromedp.Navigate(expired), chromedp.WaitVisible(chromedp.CSS(`button[type=submit]`)))
	if code := evalInt(t, stranger, used); code != 401 {
		t.Errorf("an expired link = %d, want 401", code)
	}
	drive(t, stranger, "no session", chromedp.Navigate(base+"/"), waitText(`body`, "nanobot web login"))
	if code := evalInt(t, stranger, `fetch('/api/messages').then(r => r.status)`); code != 401 {
		t.Errorf("the API without a session = %d, want 401", code)
	}
}

func withUsage(r openaitest.Reply, prompt, completion int) openaitest.Reply {
	r.Usage = agent.Usage{PromptTokens: prompt, CompletionTokens: completion}
	return r
}

// seedUsage records a fortnight of usage of two chats and two models, so
// the charts have days to stack.
func seedUsage(t *testing.T, h *gatewayHarness) {
	t.Helper()
	st, err := memory.Open(t.Context(), filepath.Join(h.dir, "data", "nanobot.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	today := time.Now().UTC()
	for d := 1; d <= 14; d++ {
		at := today.AddDate(0, 0, -d)
		for i, chat := range []string{"telegram:111", "api:phone"} {
			model := []string{"gpt-4o-mini", "deepseek-chat"}[(d+i)%2]
			u := agent.Usage{PromptTokens: 2000 + 300*((d*7+i*3)%11), CompletionTokens: 150 + 20*(d%5), CachedTokens: 800 * (d % 3)}
			if err := st.RecordUsage(t.Context(), chat, at, model, u); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// expiredLink is a sign-in link made eleven minutes ago: a minute past
// its time.
func expiredLink(t *testing.T, h *gatewayHarness, base string) string {
	t.Helper()
	st, err := memory.Open(t.Context(), filepath.Join(h.dir, "data", "nanobot.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	link, err := web.NewLogin(t.Context(), daemon.WebAuth{S: st}, base, time.Now().Add(-web.LoginTTL-time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	return link
}
