//go:build bench

package bench

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/openai/openaitest"
)

// fetchDelay is how long each page of the loop section takes to answer.
const fetchDelay = 300 * time.Millisecond

// measureLoop times a turn whose model reply asks for three web_fetch
// calls of pages that each take 300 ms, through the daemon: read-only
// calls of one reply run in parallel. The same three fetches asked for in
// three replies, one after another, are the comparison.
func measureLoop(t *testing.T, br *benchRun) {
	pages := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(fetchDelay) // the slow page under test, not a wait for something
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<html><body><p>Page %s.</p></body></html>", r.URL.Path)
	}))
	t.Cleanup(pages.Close)
	e := newEnv(t, br, model{}, map[string]string{"tools.web.allow_private": "true"})
	e.stub.SetFunc(func(req goopenai.ChatCompletionRequest) openaitest.Reply { return fetchReply(req, pages.URL) })
	e.startReady(t)
	r := follow(t, e.tg)
	for _, c := range []struct{ figure, text, note string }{
		{"round trip, one reply with 3 web_fetch calls of 300 ms pages", "bench fetch=together", "the three fetches run in parallel: 2 model calls, about 300 ms of fetching"},
		{"round trip, the same 3 fetches in 3 replies", "bench fetch=apart", "one fetch per reply, one after another: 4 model calls, about 900 ms of fetching"},
	} {
		var lats []time.Duration
		for range runs {
			lat, err := e.exchange(t.Context(), r, toolChat, c.text)
			if err != nil {
				t.Fatal(err)
			}
			lats = append(lats, lat)
		}
		br.rep.add("loop", statRow(c.figure, lats, fmtDur, fmt.Sprintf("%d turns", len(lats)), c.note))
	}
	if !r.clean() {
		t.Errorf("loop runs: %s", r.health())
	}
}

// fetchReply asks for the pages /1, /2 and /3 of base in one reply
// ("together") or one per reply ("apart"), then answers "ok".
func fetchReply(req goopenai.ChatCompletionRequest, base string) openaitest.Reply {
	if req.ToolChoice != nil {
		return model{}.reply(req)
	}
	apart, done := false, 0
	for i := len(req.Messages) - 1; i >= 0; i-- {
		m := req.Messages[i]
		if m.Role == goopenai.ChatMessageRoleTool {
			done++
		}
		if m.Role == goopenai.ChatMessageRoleUser && strings.Contains(m.Content, "bench fetch=") {
			apart = strings.Contains(m.Content, "fetch=apart")
			break
		}
	}
	call := func(n int) agent.ToolCall {
		return agent.ToolCall{ID: fmt.Sprintf("call_%d", n), Name: "web_fetch", Arguments: fmt.Sprintf(`{"url":"%s/%d"}`, base, n)}
	}
	switch {
	case done >= 3:
		return openaitest.Reply{Text: "ok"}
	case apart:
		return openaitest.Reply{ToolCalls: []agent.ToolCall{call(done + 1)}}
	default:
		return openaitest.Reply{ToolCalls: []agent.ToolCall{call(1), call(2), call(3)}}
	}
}
