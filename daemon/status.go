package daemon

import (
	"context"
	"fmt"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/openai"
	"github.com/nanobot-go/nanobot/internal/human"
)

// Status describes a session for /status.
func (r *Daemon) Status(ctx context.Context, session string) (string, error) {
	cfg := r.Config()
	stats, err := r.store.SessionStats(ctx, session)
	if err != nil {
		return "", err
	}
	used, limit, err := r.loop.ContextUsage(ctx, agent.Turn{Session: session})
	if err != nil {
		return "", err
	}
	today, err := r.budget.Today(ctx, session)
	if err != nil {
		return "", err
	}
	model := cfg.Provider.Model
	if answered := r.currentChain().Answered(); answered != "" && answered != openai.EndpointName(cfg.Provider.BaseURL, cfg.Provider.Model) {
		model += " (the last answer came from the fallback " + answered + ")"
	}
	s := fmt.Sprintf("Model: %s\nSession: %d messages in context (%d stored)\nContext: %d of %d tokens (%d%%)\nTokens today: %d",
		model, stats.Live, stats.Total, used, limit, used*100/max(limit, 1), today.Total())
	if b := r.budget.Limit(); b > 0 {
		s += fmt.Sprintf(" of %d", b)
	}
	if today.CachedTokens != 0 {
		s += "\nCached today: " + human.Cached(today.CachedTokens, today.PromptTokens)
	}
	if line := r.backupLine(); line != "" {
		s += "\n" + line
	}
	if err := r.health.problem(); err != nil {
		s += "\nDatabase: DAMAGED: " + StorageProblem(cfg, err).Error()
	}
	if line := r.rejected.line(); line != "" {
		s += "\n" + line
	}
	if pro := r.pro; pro != nil {
		s += "\n" + pro.status(ctx)
	}
	if st, ok := r.boxes.status(); ok {
		s += "\nSandbox: " + st.Summary()
	}
	return s, nil
}
