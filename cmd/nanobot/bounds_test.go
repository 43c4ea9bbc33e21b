package main

import (
	"fmt"
	"net/http"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/openai/openaitest"
)

// dbBytes is the size of the gateway's database as a reader sees it (the
// pages of the main file and the committed WAL frames together).
func (h *gatewayHarness) dbBytes() int64 {
	path := filepath.Join(h.dir, "data", "nanobot.db")
	return query[int64](h.t, path, `SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()`)
}

func heapInUse() uint64 {
	goruntime.GC()
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// A model that answers with twenty calls to tools it invents, each name
// 50 KB long, gets an error result per call and changes neither /metrics
// nor the database by more than a few kilobytes.
func TestGatewayInventedToolNamesStayBounded(t *testing.T) {
	addr := freeAddr(t)
	// A window past the 71 messages of the four turns keeps consolidation
	// (a model call and a HISTORY write of its own) out of the figures.
	h := startGateway(t, map[string]string{"gateway.listen": addr, "memory.window": "200"})
	metricsSize := func() int {
		t.Helper()
		code, body, err := httpGet(t.Context(), "http://"+addr+"/metrics")
		if err != nil || code != http.StatusOK {
			t.Fatalf("GET /metrics = %d, %v", code, err)
		}
		return len(body)
	}
	// A first turn creates what every turn writes to, so what follows
	// measures growth alone.
	h.model.Script(openaitest.Reply{Text: "warm"})
	h.tg.SendText(owner, owner, "ada", "hello")
	waitSentContaining(t, h.tg, owner, "warm")
	dbBefore, metricsBefore, heapBefore := h.dbBytes(), metricsSize(), heapInUse()

	const calls, nameBytes = 20, 50 << 10
	for msg := range 3 {
		var cs []agent.ToolCall
		for i := range calls {
			name := fmt.Sprintf("m%dt%d_", msg, i) + strings.Repeat("x", nameBytes)
			cs = append(cs, agent.ToolCall{ID: fmt.Sprintf("call_%d_%d", msg, i), Name: name, Arguments: `{"path":"/etc/passwd"}`})
		}
		answer := fmt.Sprintf("answer %d", msg)
		h.model.Script(openaitest.Reply{ToolCalls: cs}, openaitest.Reply{Text: answer})
		h.tg.SendText(owner, owner, "ada", fmt.Sprintf("message %d", msg))
		waitSentContaining(t, h.tg, owner, answer)
	}

	// Each invented call came back to the model as an error result (the
	// last request holds the three turns).
	reqs := h.model.Requests()
	var results []goopenai.ChatCompletionMessage
	for _, m := range reqs[len(reqs)-1].Messages {
		if m.Role == "tool" {
			results = append(results, m)
		}
	}
	if len(results) != 3*calls {
		t.Errorf("the last request has %d tool results, want %d", len(results), 3*calls)
	}
	for _, m := range results {
		if !strings.HasPrefix(m.Content, "Error: unknown tool") || len(m.Content) > 4<<10 {
			t.Errorf("result %.120q (%d bytes), want a short unknown-tool error", m.Content, len(m.Content))
		}
	}

	dbGrowth, metricsGrowth := h.dbBytes()-dbBefore, metricsSize()-metricsBefore
	heapGrowth := int64(heapInUse()) - int64(heapBefore)
	t.Logf("after 3 replies of %d calls with %d KB names: database +%d bytes, /metrics +%d bytes, heap in use %+d bytes",
		calls, nameBytes>>10, dbGrowth, metricsGrowth, heapGrowth)
	if dbGrowth > 64<<10 {
		t.Errorf("the database grew by %d bytes, want at most 64 KB", dbGrowth)
	}
	if metricsGrowth > 4<<10 {
		t.Errorf("/metrics grew by %d bytes, want at most 4 KB", metricsGrowth)
	}
	n := query[int64](t, filepath.Join(h.dir, "data", "nanobot.db"), `SELECT max(length(tool)) FROM audit`)
	if n > agent.MaxToolNameBytes+32 {
		t.Errorf("an audit row holds a tool name of %d bytes", n)
	}
}

// Two thousand messages from a sender not in allow_from cost no model
// call and almost no storage, and the sender is told their id once.
func TestGatewayStrangerFloodStoresNothing(t *testing.T) {
	h := startGateway(t, nil)
	h.model.Script(openaitest.Reply{Text: "warm"})
	h.tg.SendText(owner, owner, "ada", "hello")
	waitSentContaining(t, h.tg, owner, "warm")
	before := h.dbBytes()

	const flood = 2000
	text := strings.Repeat("let me in, this is a long message. ", 100) // 3.5 KB
	var last int64
	for range flood {
		last = h.tg.SendText(stranger, stranger, "eve", text)
	}
	ctx := waitCtx(t)
	for h.tg.Offset() <= last {
		if _, err := h.tg.WaitCalls(ctx, "getUpdates", len(h.tg.Calls("getUpdates"))+1); err != nil {
			t.Fatalf("the flood was not taken: offset %d, last update %d", h.tg.Offset(), last)
		}
	}
	growth := h.dbBytes() - before
	if err := h.stop(); err != nil { // delivers what is queued
		t.Fatal(err)
	}
	notices := 0
	for _, m := range h.tg.Sent() {
		if m.ChatID == stranger {
			notices++
		}
	}
	t.Logf("%d stranger messages of %d bytes: database +%d bytes, %d notices", flood, len(text), growth, notices)
	if growth > 64<<10 {
		t.Errorf("the database grew by %d bytes, want at most 64 KB", growth)
	}
	if notices != 1 {
		t.Errorf("the stranger was told their id %d times, want once", notices)
	}
	if n := h.model.RequestCount(); n != 1 {
		t.Errorf("%d model calls, want 1 (the owner's; the stranger must cost none)", n)
	}
	db := filepath.Join(h.dir, "data", "nanobot.db")
	if n := query[int64](t, db, `SELECT count(*) FROM messages WHERE content LIKE '%let me in%'`); n != 0 {
		t.Errorf("%d of the stranger's messages reached the conversation", n)
	}
}
