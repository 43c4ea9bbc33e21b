package daemon

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/channels/web"
	"github.com/nanobot-go/nanobot/jobs"
	"github.com/nanobot-go/nanobot/memory"
	"github.com/nanobot-go/nanobot/schedule"
)

// dashboard is the console's view of the daemon.
type dashboard struct {
	d       *Daemon
	details func(context.Context) []string // the gateway's /readyz lines
}

func (b dashboard) Overview(ctx context.Context) (web.Overview, error) {
	text, err := b.d.Status(ctx, web.Session())
	if err != nil {
		return web.Overview{}, err
	}
	o := web.Overview{Model: b.d.Config().Provider.Model, Lines: append([]string{b.endpoints()}, statusLines(text)...)}
	if b.details != nil {
		o.Lines = append(o.Lines, b.details(ctx)...)
	}
	today, err := b.d.budget.Today(ctx, web.Session())
	if err != nil {
		return o, err
	}
	o.Budget = web.Budget{Limit: b.d.budget.Limit(), UsedToday: today.Total()}
	return o, nil
}

// endpoints is the line of the model endpoints: which answered last,
// which cool down after a failure.
func (b dashboard) endpoints() string {
	chain := b.d.currentChain()
	answered := chain.Answered()
	var parts []string
	for i, ep := range chain.Endpoints() {
		part := ep.Name
		if i > 0 {
			part += " (fallback)"
		}
		switch {
		case !ep.DownUntil.IsZero():
			part += ": failed, resting until " + ep.DownUntil.UTC().Format(time.TimeOnly) + " UTC"
		case ep.Name == answered:
			part += ": answered last"
		}
		parts = append(parts, part)
	}
	return "Endpoints: " + strings.Join(parts, "; ")
}

func (b dashboard) jobs() (*jobs.Service, error) {
	if b.d.pro == nil || b.d.pro.jobs == nil {
		return nil, errors.New("scheduled jobs are turned off (cron.enabled)")
	}
	return b.d.pro.jobs, nil
}

func webJob(j jobs.Job) web.Job {
	w := web.Job{ID: j.ID, Chat: j.Channel + ":" + j.ChatID, Message: j.Message, Schedule: scheduleOf(j),
		NextRun: j.NextRun, LastRun: j.LastRun, Paused: j.Paused}
	if j.Paused {
		w.NextRun = time.Time{} // a paused job keeps its old slot, which does not come
	}
	return w
}

// scheduleOf is when a job runs, in its zone: "every 24h (Etc/UTC)".
func scheduleOf(j jobs.Job) string {
	spec, err := schedule.Decode(schedule.Kind(j.Kind), j.Spec, j.Zone, j.CreatedAt)
	if err != nil {
		return "unreadable schedule: " + err.Error()
	}
	return spec.Describe() + " (" + spec.ShownZone() + ")"
}

func (b dashboard) Jobs(ctx context.Context) ([]web.Job, error) {
	s, err := b.jobs()
	if err != nil {
		return nil, nil // none to show
	}
	all, err := s.All(ctx)
	out := make([]web.Job, 0, len(all))
	for _, j := range all {
		out = append(out, webJob(j))
	}
	return out, err
}

func jobErr(err error) error {
	if errors.Is(err, jobs.ErrNotFound) {
		return fmt.Errorf("%w: %w", web.ErrNotFound, err)
	}
	return err
}

func (b dashboard) PauseJob(ctx context.Context, id int64, paused bool) (web.Job, error) {
	s, err := b.jobs()
	if err != nil {
		return web.Job{}, err
	}
	j, err := s.Pause(ctx, id, paused)
	return webJob(j), jobErr(err)
}

func (b dashboard) RunJob(ctx context.Context, id int64) error {
	s, err := b.jobs()
	if err != nil {
		return err
	}
	err = s.RunNow(ctx, id)
	if errors.Is(err, jobs.ErrStale) {
		return nil // run already this second: one run, not two
	}
	return jobErr(err)
}

func (b dashboard) RemoveJob(ctx context.Context, id int64) error {
	s, err := b.jobs()
	if err != nil {
		return err
	}
	return jobErr(s.Remove(ctx, jobs.Chat{}, id))
}

func (b dashboard) MemoryScopes(ctx context.Context) ([]web.MemoryDoc, error) {
	docs, err := b.d.store.MemoryScopes(ctx)
	out := make([]web.MemoryDoc, 0, len(docs)+1)
	global := false
	for _, m := range docs {
		global = global || m.Scope == memory.GlobalScope
		out = append(out, web.MemoryDoc{Scope: m.Scope, Doc: m.Doc, Updated: m.Updated})
	}
	if !global { // the owner may write the first MEMORY here
		out = append([]web.MemoryDoc{{Scope: memory.GlobalScope}}, out...)
	}
	return out, err
}

func (b dashboard) MemoryDoc(ctx context.Context, scope string) (web.MemoryDoc, []web.Revision, error) {
	doc, err := b.d.store.Memory(ctx, scope)
	if err != nil {
		return web.MemoryDoc{}, nil, err
	}
	revs, err := b.d.store.MemoryRevisions(ctx, scope, 50)
	out := make([]web.Revision, 0, len(revs))
	for _, r := range revs {
		out = append(out, web.Revision{ID: r.ID, At: r.At, Doc: r.Doc})
	}
	return web.MemoryDoc{Scope: scope, Doc: doc}, out, err
}

func (b dashboard) EditMemory(ctx context.Context, scope, base, doc string) error {
	err := b.d.store.EditMemory(ctx, scope, base, doc)
	if errors.Is(err, memory.ErrMemoryChanged) {
		return fmt.Errorf("%w: %w", web.ErrMemoryChanged, err)
	}
	return err
}

func (b dashboard) History(ctx context.Context, scope, query string, limit int) ([]web.HistoryEntry, error) {
	var entries []memory.HistoryEntry
	var err error
	if query == "" {
		entries, err = b.d.store.History(ctx, scope, limit)
	} else {
		entries, err = b.d.store.SearchHistory(ctx, scope, query, limit)
	}
	out := make([]web.HistoryEntry, 0, len(entries))
	for _, e := range entries {
		out = append(out, web.HistoryEntry{ID: e.ID, At: e.At, Text: e.Text})
	}
	return out, err
}

func (b dashboard) Audit(ctx context.Context, f web.AuditFilter) ([]web.AuditEntry, error) {
	entries, err := b.d.store.Audit(ctx, memory.AuditFilter{Since: f.Since, Until: f.Until, Session: f.Session,
		Tool: f.Tool, Verdict: f.Verdict, Limit: f.Limit})
	out := make([]web.AuditEntry, 0, len(entries))
	for _, e := range entries {
		out = append(out, web.AuditEntry{At: e.At, Session: e.Session, Tool: e.Tool, Args: e.Args, Verdict: e.Verdict,
			Outcome: e.Outcome(), Reason: e.Reason, DurationMS: e.Duration.Milliseconds(), ExitCode: e.ExitCode})
	}
	return out, err
}

func (b dashboard) Usage(ctx context.Context, since time.Time) ([]web.UsageRow, web.Budget, error) {
	rows, err := b.d.store.UsageSince(ctx, since)
	if err != nil {
		return nil, web.Budget{}, err
	}
	out := make([]web.UsageRow, 0, len(rows))
	for _, r := range rows {
		out = append(out, web.UsageRow{Day: r.Day, Session: r.Session, Model: r.Model, Prompt: r.PromptTokens,
			Completion: r.CompletionTokens, Cached: r.CachedTokens, Calls: r.Calls})
	}
	today, err := b.d.budget.Today(ctx, web.Session())
	return out, web.Budget{Limit: b.d.budget.Limit(), UsedToday: today.Total()}, err
}
