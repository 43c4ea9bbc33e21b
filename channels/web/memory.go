package web

import (
	"errors"
	"net/http"
	"strconv"
	"time"
)

func (w *Web) memoryScopes(rw http.ResponseWriter, r *http.Request, _ visitor) {
	docs, err := w.dash.MemoryScopes(r.Context())
	if err != nil {
		w.fail(rw, "list the memory", err)
		return
	}
	writeJSON(rw, http.StatusOK, map[string]any{"scopes": nonNil(docs)})
}

func scopeOf(rw http.ResponseWriter, r *http.Request) (string, bool) {
	scope := r.URL.Query().Get("scope")
	if scope == "" {
		writeError(rw, http.StatusBadRequest, "say which MEMORY: ?scope=global")
	}
	return scope, scope != ""
}

func (w *Web) memoryDoc(rw http.ResponseWriter, r *http.Request, _ visitor) {
	scope, ok := scopeOf(rw, r)
	if !ok {
		return
	}
	w.writeDoc(rw, r, scope)
}

func (w *Web) writeDoc(rw http.ResponseWriter, r *http.Request, scope string) {
	doc, revs, err := w.dash.MemoryDoc(r.Context(), scope)
	if err != nil {
		w.fail(rw, "read the memory", err)
		return
	}
	writeJSON(rw, http.StatusOK, map[string]any{"scope": scope, "doc": doc.Doc, "revisions": nonNil(revs)})
}

func (w *Web) editMemory(rw http.ResponseWriter, r *http.Request, v visitor) {
	scope, ok := scopeOf(rw, r)
	var req struct {
		Doc  string `json:"doc"`
		Base string `json:"base"`
	}
	if !ok || !readJSON(rw, r, &req) {
		return
	}
	err := w.dash.EditMemory(r.Context(), scope, req.Base, req.Doc)
	if errors.Is(err, ErrMemoryChanged) {
		cur, _, rerr := w.dash.MemoryDoc(r.Context(), scope)
		if rerr != nil {
			w.fail(rw, "read the memory", rerr)
			return
		}
		writeJSON(rw, http.StatusConflict, map[string]string{"error": "MEMORY changed meanwhile", "doc": cur.Doc})
		return
	}
	if err != nil {
		w.fail(rw, "save the memory", err)
		return
	}
	w.log.Info("MEMORY edited in the web console", "scope", scope, "bytes", len(req.Doc), "session", v.ID)
	w.writeDoc(rw, r, scope)
}

func (w *Web) history(rw http.ResponseWriter, r *http.Request, _ visitor) {
	q := r.URL.Query()
	scope := q.Get("scope")
	if scope == "" {
		scope = "global"
	}
	limit, _ := strconv.Atoi(q.Get("limit"))
	entries, err := w.dash.History(r.Context(), scope, q.Get("q"), min(max(limit, 1), 100))
	if err != nil {
		w.fail(rw, "search the history", err)
		return
	}
	writeJSON(rw, http.StatusOK, map[string]any{"entries": nonNil(entries)})
}

// timeParam reads an RFC 3339 time or a YYYY-MM-DD date; until dates
// include their whole day.
func timeParam(s string, endOfDay bool) (time.Time, bool) {
	if s == "" {
		return time.Time{}, true
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, true
	}
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return time.Time{}, false
	}
	if endOfDay {
		t = t.Add(24*time.Hour - time.Millisecond)
	}
	return t, true
}

func (w *Web) audit(rw http.ResponseWriter, r *http.Request, _ visitor) {
	q := r.URL.Query()
	since, ok1 := timeParam(q.Get("since"), false)
	until, ok2 := timeParam(q.Get("until"), true)
	if !ok1 || !ok2 {
		writeError(rw, http.StatusBadRequest, "since and until are dates (2026-12-01) or RFC 3339 times")
		return
	}
	limit, _ := strconv.Atoi(q.Get("limit"))
	f := AuditFilter{Session: q.Get("session"), Tool: q.Get("tool"), Verdict: q.Get("verdict"),
		Since: since, Until: until, Limit: min(max(limit, 1), 500)}
	if limit == 0 {
		f.Limit = 100
	}
	entries, err := w.dash.Audit(r.Context(), f)
	if err != nil {
		w.fail(rw, "read the audit trail", err)
		return
	}
	writeJSON(rw, http.StatusOK, map[string]any{"entries": nonNil(entries)})
}

func (w *Web) usage(rw http.ResponseWriter, r *http.Request, _ visitor) {
	days, _ := strconv.Atoi(r.URL.Query().Get("days"))
	days = min(max(days, 1), 366)
	if r.URL.Query().Get("days") == "" {
		days = 30
	}
	today := w.cfg.Now().UTC().Truncate(24 * time.Hour)
	since := today.AddDate(0, 0, 1-days)
	rows, budget, err := w.dash.Usage(r.Context(), since)
	if err != nil {
		w.fail(rw, "read the usage", err)
		return
	}
	list := make([]string, 0, days)
	for d := since; !d.After(today); d = d.AddDate(0, 0, 1) {
		list = append(list, d.Format(time.DateOnly))
	}
	writeJSON(rw, http.StatusOK, map[string]any{"days": list, "rows": nonNil(rows), "budget": budget})
}
