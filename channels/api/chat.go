package api

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/turns"
)

// answer is the outcome of a request's turn.
type answer struct {
	text string
	err  error
}

// chat is POST /v1/chat/completions: the message is recorded, its turn
// runs in the engine, and the reply goes back whole or as a stream.
func (a *API) chat(w http.ResponseWriter, r *http.Request, k hashedKey) {
	req, text, perr := parse(w, r)
	if perr != nil {
		writeError(w, perr)
		a.outcome(k.name, "invalid")
		return
	}
	p := payload{Client: k.name, Chat: conversation(k, r, req), Text: text}
	it, perr := a.record(r.Context(), p, r.Header.Get("Idempotency-Key"))
	if perr != nil {
		if perr.Status == http.StatusConflict {
			w.Header().Set("X-Should-Retry", "false")
		}
		writeError(w, perr)
		a.outcome(k.name, "failed")
		return
	}
	// The message is kept and its turn runs whatever this response says:
	// a client that retried an error would send it a second time.
	w.Header().Set("X-Should-Retry", "false")
	a.last.Store(a.cfg.Now().UnixMilli())
	wt := &waiter{}
	var events chan string
	if req.Stream {
		events = make(chan string, 64)
		wt.progress = func(ev agent.ProgressEvent) {
			if line := progressLine(ev); line != "" {
				select {
				case events <- line:
				default: // a slow client misses a progress line, never the turn
				}
			}
		}
	}
	done := a.wait(it.ID, wt)
	result := make(chan answer, 1)
	go func() {
		defer done()
		j := a.Prepare(r.Context(), it)
		j.Item = it
		// The turn is the engine's, not the request's: a client that
		// leaves does not end it.
		text, err := a.engine.Await(context.WithoutCancel(r.Context()), a, j)
		result <- answer{text, err}
	}()
	c := &reply{w: w, id: "chatcmpl-" + rand.Text()[:24], created: a.cfg.Now().Unix(), wt: wt,
		includeUsage: req.StreamOptions != nil && req.StreamOptions.IncludeUsage}
	var outcome string
	if req.Stream {
		outcome = a.stream(r.Context(), c, events, result)
	} else {
		outcome = a.whole(r.Context(), c, result)
	}
	if outcome == "ok" {
		a.served.Add(1)
	}
	if outcome == "gone" {
		a.log.Info("the client left before its answer; the turn goes on and is kept in its conversation", "client", k.name, "chat", p.Chat)
	}
	a.outcome(k.name, outcome)
}

// reply writes one request's answer.
type reply struct {
	w            http.ResponseWriter
	id           string
	created      int64
	wt           *waiter
	includeUsage bool
}

func (c *reply) usage() *usage {
	c.wt.mu.Lock()
	u := c.wt.usage
	c.wt.mu.Unlock()
	out := &usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.PromptTokens + u.CompletionTokens}
	if u.CachedTokens > 0 {
		out.PromptTokensDetails = &promptDetail{CachedTokens: u.CachedTokens}
	}
	return out
}

// failure is the error a turn's outcome is, or nil for an answer.
func (c *reply) failure(ans answer) *apiError {
	c.wt.mu.Lock()
	failed := c.wt.failed
	c.wt.mu.Unlock()
	switch {
	case errors.Is(ans.err, turns.ErrShutdown):
		return restarting()
	case errors.Is(ans.err, turns.ErrStopped):
		return newError(http.StatusConflict, "invalid_request_error", "stopped", "The turn was stopped before it answered.")
	case ans.err != nil && (failed || ans.text != ""):
		msg := ans.text
		if msg == "" {
			msg = turns.Apology
		}
		return newError(http.StatusBadGateway, "server_error", "model_unavailable", "%s", msg)
	case ans.err != nil:
		return newError(http.StatusInternalServerError, "server_error", "", "%s", turns.Apology)
	}
	return nil
}

func restarting() *apiError {
	return newError(http.StatusServiceUnavailable, "server_error", "restarting",
		"The assistant is restarting. Your message is kept and answered after the restart; the answer will be in this conversation.")
}

func (a *API) whole(ctx context.Context, c *reply, result <-chan answer) string {
	select {
	case ans := <-result:
		if e := c.failure(ans); e != nil {
			writeError(c.w, e)
			return "failed"
		}
		stop := "stop"
		writeJSON(c.w, http.StatusOK, completion{ID: c.id, Object: "chat.completion", Created: c.created, Model: Model,
			Choices: []choice{{Message: &message{Role: "assistant", Content: &ans.text}, FinishReason: &stop}},
			Usage:   c.usage()})
		return "ok"
	case <-ctx.Done():
		return "gone"
	case <-a.stopping:
		writeError(c.w, restarting())
		return "failed"
	}
}

// stream answers as server-sent events in OpenAI's chunk format: the
// role, progress as comment lines while the turn works, the text in one
// chunk, the finish, the usage when asked for, and [DONE].
func (a *API) stream(ctx context.Context, c *reply, events <-chan string, result <-chan answer) string {
	h := c.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: pass each event on at once
	c.w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(c.w)
	empty := ""
	c.chunk(choice{Delta: &message{Role: "assistant", Content: &empty}}, nil)
	rc.Flush()
	tick := time.NewTicker(a.cfg.KeepAlive)
	defer tick.Stop()
	for {
		select {
		case line := <-events:
			fmt.Fprintf(c.w, ": %s\n", line)
		case <-tick.C:
			fmt.Fprint(c.w, ": working\n")
		case ans := <-result:
			for drained := false; !drained; { // what the turn reported before it ended goes first
				select {
				case line := <-events:
					fmt.Fprintf(c.w, ": %s\n", line)
				default:
					drained = true
				}
			}
			if e := c.failure(ans); e != nil {
				c.event(map[string]*apiError{"error": e})
				rc.Flush()
				return "failed"
			}
			stop := "stop"
			if ans.text != "" {
				c.chunk(choice{Delta: &message{Content: &ans.text}}, nil)
			}
			u := c.usage()
			c.chunk(choice{Delta: &message{}, FinishReason: &stop}, u)
			if c.includeUsage {
				c.event(completion{ID: c.id, Object: "chat.completion.chunk", Created: c.created, Model: Model, Choices: []choice{}, Usage: u})
			}
			fmt.Fprint(c.w, "data: [DONE]\n\n")
			rc.Flush()
			return "ok"
		case <-ctx.Done():
			return "gone"
		case <-a.stopping:
			c.event(map[string]*apiError{"error": restarting()})
			rc.Flush()
			return "failed"
		}
		rc.Flush()
	}
}

func (c *reply) chunk(ch choice, u *usage) {
	c.event(completion{ID: c.id, Object: "chat.completion.chunk", Created: c.created, Model: Model, Choices: []choice{ch}, Usage: u})
}

func (c *reply) event(v any) {
	data, _ := json.Marshal(v)
	fmt.Fprintf(c.w, "data: %s\n\n", data)
}
