package turns

import (
	"context"
	"fmt"
	"slices"
	"strconv"
)

// maxMerge bounds how many queued texts become one turn.
const maxMerge = 20

// chatQueue is the work of one chat. At most one goroutine (active) takes
// from it, which gives each chat its order.
type chatQueue struct {
	jobs    []*Job
	active  bool
	cancel  context.CancelCauseFunc // of the running turn
	current string                  // what the running turn answers, for /stop
	running []*Job                  // the running turn's batch
	steer   string                  // the Merge key of jobs the running turn may take ("": none)
	taken   []*Job                  // jobs the running turn took (steering)
}

func (e *Engine) enqueue(j *Job) {
	e.mu.Lock()
	defer e.mu.Unlock()
	q := e.chats[j.Chat]
	if q == nil {
		q = &chatQueue{}
		e.chats[j.Chat] = q
	}
	q.jobs = append(q.jobs, j)
	e.queued++
	e.report()
	e.startLocked(j.Chat, q)
}

// startLocked starts the chat's worker unless it runs. mu must be held.
func (e *Engine) startLocked(chat string, q *chatQueue) {
	if !q.active && !e.stopping && e.held == 0 {
		q.active = true
		e.wg.Add(1)
		go e.work(chat, q)
	}
}

func (e *Engine) startAllLocked() {
	if e.held > 0 {
		return
	}
	for chat, q := range e.chats {
		e.startLocked(chat, q)
	}
}

// work runs a chat's turns one after another, holding a slot per turn so
// other chats get theirs in between.
func (e *Engine) work(chat string, q *chatQueue) {
	defer e.wg.Done()
	for {
		e.slots <- struct{}{}
		e.mu.Lock()
		if e.stopping || len(q.jobs) == 0 {
			q.active = false
			if len(q.jobs) == 0 {
				delete(e.chats, chat)
			}
			e.mu.Unlock()
			<-e.slots
			return
		}
		batch := takeBatch(q)
		e.queued -= len(batch)
		e.running++
		ctx, cancel := context.WithCancelCause(context.Background())
		q.cancel = cancel
		q.current = describe(batch)
		q.running = batch
		if e.cfg.Steering {
			q.steer = batch[0].Merge
		}
		e.report()
		e.mu.Unlock()

		unwatch := batch[0].wait.watch(cancel)
		taken := e.runBatch(ctx, batch)
		unwatch()
		cancel(nil)

		e.mu.Lock()
		q.cancel = nil
		q.current = ""
		q.running, q.steer = nil, ""
		e.running--
		for _, j := range slices.Concat(batch, taken) {
			delete(e.known, j.Item.ID)
		}
		e.report()
		e.mu.Unlock()
		<-e.slots
	}
}

// takeBatch removes the next turn's jobs from the head of q: the items of
// an interrupted turn together, or consecutive texts that merge, or one
// job.
func takeBatch(q *chatQueue) []*Job {
	first := q.jobs[0]
	n := 1
	switch {
	case first.wait != nil:
	case first.Item.State == InboxStarted:
		// The items one turn answered share its first message; one it
		// took while it ran may have come after others of the chat.
		var batch, rest []*Job
		for _, j := range q.jobs {
			if j.wait == nil && j.Item.State == InboxStarted && j.Item.MessageID == first.Item.MessageID {
				batch = append(batch, j)
			} else {
				rest = append(rest, j)
			}
		}
		q.jobs = rest
		return batch
	case first.Merge != "":
		for n < len(q.jobs) && n < maxMerge {
			next := q.jobs[n]
			if next.wait != nil || next.Merge != first.Merge || next.Item.State != InboxPending {
				break
			}
			n++
		}
	}
	batch := q.jobs[:n:n]
	q.jobs = q.jobs[n:]
	return batch
}

func describe(batch []*Job) string {
	s := batch[len(batch)-1].Text
	if s == "" {
		s = "a message"
	}
	if r := []rune(s); len(r) > 80 {
		s = string(r[:80]) + "…"
	}
	if len(batch) > 1 {
		return fmt.Sprintf("%d messages, the last: %q", len(batch), s)
	}
	return strconv.Quote(s)
}
