package web

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"
)

// Dashboard is what the console shows of the daemon and changes in it.
type Dashboard interface {
	Overview(ctx context.Context) (Overview, error)
	Jobs(ctx context.Context) ([]Job, error)
	PauseJob(ctx context.Context, id int64, paused bool) (Job, error)
	RunJob(ctx context.Context, id int64) error
	RemoveJob(ctx context.Context, id int64) error
	MemoryScopes(ctx context.Context) ([]MemoryDoc, error)
	MemoryDoc(ctx context.Context, scope string) (MemoryDoc, []Revision, error)
	// EditMemory replaces a scope's MEMORY if it still is base; else an
	// error wrapping ErrMemoryChanged.
	EditMemory(ctx context.Context, scope, base, doc string) error
	History(ctx context.Context, scope, query string, limit int) ([]HistoryEntry, error)
	Audit(ctx context.Context, f AuditFilter) ([]AuditEntry, error)
	Usage(ctx context.Context, since time.Time) ([]UsageRow, Budget, error)
}

// Errors of a Dashboard the console answers precisely.
var (
	ErrNotFound      = errors.New("not found")
	ErrMemoryChanged = errors.New("MEMORY changed meanwhile")
)

// Overview is the daemon at a glance: what `nanobot status` says.
type Overview struct {
	Version string   `json:"version"`
	Model   string   `json:"model"`
	Lines   []string `json:"lines"`
	Budget  Budget   `json:"budget"`
}

// Budget is the daily token budget of the console's chat (0: none).
type Budget struct {
	Limit     int `json:"limit"`
	UsedToday int `json:"used_today"`
}

// Job is a scheduled job.
type Job struct {
	ID       int64     `json:"id"`
	Chat     string    `json:"chat"`
	Message  string    `json:"message"`
	Schedule string    `json:"schedule"`
	NextRun  time.Time `json:"-"`
	LastRun  time.Time `json:"-"`
	Paused   bool      `json:"paused"`
}

// MemoryDoc is one scope's MEMORY.
type MemoryDoc struct {
	Scope   string    `json:"scope"`
	Doc     string    `json:"doc"`
	Updated time.Time `json:"updated"`
}

// Revision is one earlier text of a MEMORY.
type Revision struct {
	ID  int64     `json:"id"`
	At  time.Time `json:"at"`
	Doc string    `json:"doc"`
}

// HistoryEntry is one dated HISTORY entry.
type HistoryEntry struct {
	ID   int64     `json:"id"`
	At   time.Time `json:"at"`
	Text string    `json:"text"`
}

// AuditFilter selects audit entries; zero fields select all.
type AuditFilter struct {
	Session, Tool, Verdict string
	Since, Until           time.Time
	Limit                  int
}

// AuditEntry is one tool call of the audit trail.
type AuditEntry struct {
	At         time.Time `json:"at"`
	Session    string    `json:"session"`
	Tool       string    `json:"tool"`
	Args       string    `json:"args"`
	Verdict    string    `json:"verdict"`
	Outcome    string    `json:"outcome"`
	Reason     string    `json:"reason"`
	DurationMS int64     `json:"duration_ms"`
	ExitCode   int       `json:"exit_code"`
}

// UsageRow is one chat's tokens on one day with one model.
type UsageRow struct {
	Day        string `json:"day"`
	Session    string `json:"session"`
	Model      string `json:"model"`
	Prompt     int    `json:"prompt"`
	Completion int    `json:"completion"`
	Cached     int    `json:"cached"`
	Calls      int    `json:"calls"`
}

type route = func(pattern string, h func(http.ResponseWriter, *http.Request, visitor))

func (w *Web) dashboardRoutes(api route) {
	api("GET /api/overview", w.overview)
	api("GET /api/jobs", w.jobs)
	api("POST /api/jobs/{id}/pause", w.pauseJob)
	api("POST /api/jobs/{id}/run", w.runJob)
	api("DELETE /api/jobs/{id}", w.removeJob)
	api("GET /api/memory", w.memoryScopes)
	api("GET /api/memory/doc", w.memoryDoc)
	api("PUT /api/memory/doc", w.editMemory)
	api("GET /api/history", w.history)
	api("GET /api/audit", w.audit)
	api("GET /api/usage", w.usage)
}

func (w *Web) overview(rw http.ResponseWriter, r *http.Request, _ visitor) {
	o, err := w.dash.Overview(r.Context())
	if err != nil {
		w.fail(rw, "read the status", err)
		return
	}
	o.Version = w.cfg.Version
	o.Lines = nonNil(o.Lines)
	writeJSON(rw, http.StatusOK, o)
}

// jobWire is a job as the page reads it: times empty when unset.
type jobWire struct {
	Job
	NextRun string `json:"next_run"`
	LastRun string `json:"last_run"`
}

func wireJob(j Job) jobWire {
	return jobWire{Job: j, NextRun: stamp(j.NextRun), LastRun: stamp(j.LastRun)}
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func (w *Web) jobs(rw http.ResponseWriter, r *http.Request, _ visitor) {
	js, err := w.dash.Jobs(r.Context())
	if err != nil {
		w.fail(rw, "list the jobs", err)
		return
	}
	out := make([]jobWire, 0, len(js))
	for _, j := range js {
		out = append(out, wireJob(j))
	}
	writeJSON(rw, http.StatusOK, map[string]any{"jobs": out})
}

func jobID(rw http.ResponseWriter, r *http.Request) (int64, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		writeError(rw, http.StatusBadRequest, "a job id is a number")
	}
	return id, err == nil
}

func (w *Web) pauseJob(rw http.ResponseWriter, r *http.Request, _ visitor) {
	id, ok := jobID(rw, r)
	var req struct {
		Paused bool `json:"paused"`
	}
	if !ok || !readJSON(rw, r, &req) {
		return
	}
	j, err := w.dash.PauseJob(r.Context(), id, req.Paused)
	if w.dashError(rw, "pause the job", err) {
		return
	}
	w.log.Info("job paused from the web console", "job", id, "paused", req.Paused)
	writeJSON(rw, http.StatusOK, wireJob(j))
}

func (w *Web) runJob(rw http.ResponseWriter, r *http.Request, _ visitor) {
	id, ok := jobID(rw, r)
	if !ok {
		return
	}
	if w.dashError(rw, "run the job", w.dash.RunJob(r.Context(), id)) {
		return
	}
	w.log.Info("job run from the web console", "job", id)
	writeJSON(rw, http.StatusAccepted, map[string]bool{"queued": true})
}

func (w *Web) removeJob(rw http.ResponseWriter, r *http.Request, _ visitor) {
	id, ok := jobID(rw, r)
	if !ok {
		return
	}
	if w.dashError(rw, "remove the job", w.dash.RemoveJob(r.Context(), id)) {
		return
	}
	w.log.Info("job removed from the web console", "job", id)
	rw.WriteHeader(http.StatusNoContent)
}

// dashError answers err, if any; true when it did.
func (w *Web) dashError(rw http.ResponseWriter, what string, err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, ErrNotFound):
		writeError(rw, http.StatusNotFound, "not found")
	default:
		w.fail(rw, what, err)
	}
	return true
}
