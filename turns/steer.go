package turns

import (
	"context"
	"slices"

	"github.com/nanobot-go/nanobot/agent"
)

// Steering: a text its chat sends while a turn of the same sender's texts
// runs is handed to that turn at its next model call (agent.WithSteering)
// instead of waiting for a turn of its own. The turn's record that holds
// it takes its item into the turn (agent.Record.Inbox), so the turn's
// last record closes it and a crash resumes it with the turn.

// steerable reports whether j may be handed to the running turn whose
// batch merges by key: a recorded text of the same sender, not started,
// that nobody awaits.
func steerable(j *Job, key string) bool {
	return key != "" && j.Merge == key && j.wait == nil && j.Item.ID != 0 && j.Item.State == InboxPending
}

// withSteering gives the running turn of chat what the chat sends: its
// queue's texts, then what own (the plan's Steer) hands over.
func (e *Engine) withSteering(ctx context.Context, chat string, own func() []agent.Steer) context.Context {
	if !e.cfg.Steering {
		return ctx
	}
	return agent.WithSteering(ctx, func() []agent.Steer {
		out := e.takeSteers(chat)
		if own != nil {
			out = append(out, own()...)
		}
		return out
	})
}

// takeSteers removes from the head of chat's queue the jobs its running
// turn may read, and returns them as that turn's new words.
func (e *Engine) takeSteers(chat string) []agent.Steer {
	e.mu.Lock()
	defer e.mu.Unlock()
	q := e.chats[chat]
	if q == nil {
		return nil
	}
	var out []agent.Steer
	for len(q.jobs) > 0 && len(q.taken) < maxMerge && steerable(q.jobs[0], q.steer) {
		j := q.jobs[0]
		q.jobs = q.jobs[1:]
		q.taken = append(q.taken, j)
		e.queued--
		out = append(out, agent.Steer{Inbox: j.Item.ID,
			Message: agent.Message{Role: agent.RoleUser, Content: j.Text, CreatedAt: j.Item.ReceivedAt}})
	}
	if len(out) > 0 {
		e.report()
		q.current = describe(append(slices.Clone(q.running), q.taken...))
	}
	return out
}

// settleTaken looks, after a try of chat's turn, at what the turn took:
// an item its records hold belongs to the turn (closed with it, or
// resumed with it); one they do not hold (the turn was stopped or failed
// before recording it) goes back to the head of the queue, in order. It
// returns the items that belong to the turn.
func (e *Engine) settleTaken(ctx context.Context, chat, channel string) []*Job {
	e.mu.Lock()
	q := e.chats[chat]
	var taken []*Job
	if q != nil {
		taken, q.taken = q.taken, nil
	}
	e.mu.Unlock()
	if len(taken) == 0 {
		return nil
	}
	pending, err := e.store.PendingInbound(context.WithoutCancel(ctx), channel)
	if err != nil {
		// They stay in the inbox, as they are, for the next start.
		e.log.Error("messages sent during a turn wait for the next start", "chat", chat, "count", len(taken), "err", err)
		return taken
	}
	var back, kept []*Job
	for _, j := range taken {
		i := slices.IndexFunc(pending, func(it InboxItem) bool { return it.ID == j.Item.ID })
		if i >= 0 && pending[i].State == InboxPending {
			back = append(back, j)
		} else {
			kept = append(kept, j)
		}
	}
	if len(back) > 0 {
		e.mu.Lock()
		q.jobs = append(back, q.jobs...)
		e.queued += len(back)
		e.report()
		e.mu.Unlock()
	}
	return kept
}
