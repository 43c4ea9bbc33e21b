package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// event is one server-sent event.
type event struct {
	name string
	data []byte
}

// hub hands events to every open page.
type hub struct {
	mu     sync.Mutex
	subs   map[chan event]bool
	closed bool
}

func newHub() *hub { return &hub{subs: map[chan event]bool{}} }

// subscribe returns the events from now on, and the function that ends
// them; ok is false when the hub is closed.
func (h *hub) subscribe() (ch chan event, done func(), ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, nil, false
	}
	ch = make(chan event, 64)
	h.subs[ch] = true
	return ch, func() {
		h.mu.Lock()
		if h.subs[ch] {
			delete(h.subs, ch)
			close(ch)
		}
		h.mu.Unlock()
	}, true
}

// publish sends an event to every page. A page too slow to take it
// misses it: events tell what to fetch, and a page refetches after any
// reconnect, so nothing is lost but a progress line.
func (h *hub) publish(name string, v any) {
	data, _ := json.Marshal(v)
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs {
		select {
		case ch <- event{name, data}:
		default:
		}
	}
}

func (h *hub) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}

// close ends every page's stream (a shutdown).
func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for ch := range h.subs {
		delete(h.subs, ch)
		close(ch)
	}
}

// keepAlive is the time between two comment lines of an idle stream, so
// proxies do not cut it.
const keepAlive = 15 * time.Second

// events is GET /api/events: the page's stream of what happens.
func (w *Web) events(rw http.ResponseWriter, r *http.Request) {
	ch, done, ok := w.hub.subscribe()
	if !ok {
		writeError(rw, http.StatusServiceUnavailable, "the assistant is restarting")
		return
	}
	defer done()
	h := rw.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	rw.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(rw)
	fmt.Fprintf(rw, "retry: 2000\n\nevent: turn\ndata: {\"running\":%t}\n\n", w.engine.ChatLoad(Session()).Busy)
	rc.Flush()
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		select {
		case ev, open := <-ch:
			if !open {
				return
			}
			fmt.Fprintf(rw, "event: %s\ndata: %s\n\n", ev.name, ev.data)
		case <-tick.C:
			fmt.Fprint(rw, ": ping\n\n")
		case <-r.Context().Done():
			return
		}
		if rc.Flush() != nil {
			return
		}
	}
}
