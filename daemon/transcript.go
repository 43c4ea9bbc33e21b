package daemon

import (
	"context"
	"errors"
	"fmt"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/tools"
	"github.com/nanobot-go/nanobot/memory"
	"github.com/nanobot-go/nanobot/session"
)

// transcriptChat is the chat whose transcript the turn in ctx may search:
// the turn's own, or for a job's run, a task's or the heartbeat's the chat
// it belongs to, as for memory.scope: chat. Never another chat's: a
// transcript stays with its chat even when MEMORY is shared.
func (r *Daemon) transcriptChat(ctx context.Context) string {
	t, _ := agent.TurnFrom(ctx)
	chat := r.chatSession(t.Session)
	if s, err := session.Parse(chat); err != nil || s.Kind != session.KindChat {
		return ""
	}
	return chat
}

func (r *Daemon) findMessages(ctx context.Context, chat, query string, limit int) ([]tools.MessageHit, error) {
	found, err := r.store.SearchTranscript(ctx, chat, query, limit)
	if err != nil {
		return nil, err
	}
	hits := make([]tools.MessageHit, len(found))
	for i, h := range found {
		hits[i] = tools.MessageHit{ID: h.ID, Role: h.Role, At: h.At, Snippet: h.Snippet}
	}
	return hits, nil
}

func (r *Daemon) readMessages(ctx context.Context, chat string, id int64, before, after int) ([]tools.PastMessage, error) {
	msgs, err := r.store.ReadTranscript(ctx, chat, id, before, after)
	if errors.Is(err, memory.ErrNotInTranscript) {
		return nil, fmt.Errorf("%w: %w", tools.ErrNotInChat, err)
	}
	if err != nil {
		return nil, err
	}
	out := make([]tools.PastMessage, len(msgs))
	for i, m := range msgs {
		out[i] = tools.PastMessage{ID: m.ID, Role: m.Role, At: m.At, Text: m.Text}
	}
	return out, nil
}
