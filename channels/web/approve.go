package web

import (
	"context"
	"crypto/rand"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/internal/human"
)

// approval is a command waiting for the owner's answer in the console.
type approval struct {
	ID      string    `json:"id"`
	Command string    `json:"command"`
	Reason  string    `json:"reason"`
	Expires time.Time `json:"expires"`
	answer  chan decision
}

// decision is the owner's answer and the session that gave it.
type decision struct {
	ok bool
	by string
}

// approvals are the console's pending approvals.
type approvals struct {
	mu   sync.Mutex
	open map[string]*approval
}

// ErrNoPage refuses an approval at once when no page of the console is
// open: nobody would see it.
var ErrNoPage = errors.New("no page of the web console is open to approve the command")

// Approve asks the owner in the open pages whether command may run, with
// Approve and Deny, and waits for the answer until the approval times
// out or the turn ends. It returns the decision and who made it
// ("web:" and the session; "" when nobody did).
func (w *Web) Approve(ctx context.Context, command, reason string) (bool, string, error) {
	if w.hub.count() == 0 {
		return false, "", ErrNoPage
	}
	// Every character of the command shows: what the owner approves must
	// read exactly as what runs (no bidi overrides, zero-width or padding).
	a := &approval{ID: rand.Text()[:10], Command: human.Visible(command), Reason: human.Visible(reason),
		Expires: w.cfg.Now().Add(w.cfg.ApprovalTimeout).UTC(), answer: make(chan decision, 1)}
	p := w.approvals
	p.mu.Lock()
	p.open[a.ID] = a
	p.mu.Unlock()
	w.hub.publish("approval", a)
	w.log.Info("approval asked in the web console", "id", a.ID)
	timer := time.NewTimer(w.cfg.ApprovalTimeout)
	defer timer.Stop()
	var d decision
	var outcome string
	var err error
	select {
	case d = <-a.answer:
		outcome = "denied"
		if d.ok {
			outcome = "approved"
		}
	case <-timer.C:
		outcome = "timed out"
	case <-ctx.Done():
		outcome, err = "cancelled", ctx.Err()
	}
	p.mu.Lock()
	delete(p.open, a.ID)
	p.mu.Unlock()
	w.hub.publish("approval_done", map[string]string{"id": a.ID, "outcome": outcome})
	return d.ok, d.by, err
}

// pendingApprovals is GET /api/approvals.
func (w *Web) pendingApprovals(rw http.ResponseWriter, _ *http.Request, _ visitor) {
	p := w.approvals
	p.mu.Lock()
	out := make([]*approval, 0, len(p.open))
	for _, a := range p.open {
		out = append(out, a)
	}
	p.mu.Unlock()
	writeJSON(rw, http.StatusOK, map[string]any{"approvals": out})
}

// decide is POST /api/approvals/{id} {"approve": bool}.
func (w *Web) decide(rw http.ResponseWriter, r *http.Request, v visitor) {
	var req struct {
		Approve *bool `json:"approve"`
	}
	if !readJSON(rw, r, &req) {
		return
	}
	if req.Approve == nil {
		writeError(rw, http.StatusBadRequest, `say {"approve": true} or {"approve": false}`)
		return
	}
	p := w.approvals
	p.mu.Lock()
	a := p.open[r.PathValue("id")]
	if a != nil {
		delete(p.open, a.ID) // one answer, even from two pages at once
	}
	p.mu.Unlock()
	if a == nil {
		writeError(rw, http.StatusNotFound, "this approval is no longer pending")
		return
	}
	a.answer <- decision{ok: *req.Approve, by: "web:" + v.ID}
	outcome := "denied"
	if *req.Approve {
		outcome = "approved"
	}
	w.log.Info("approval answered in the web console", "id", a.ID, "outcome", outcome, "session", v.ID)
	writeJSON(rw, http.StatusOK, map[string]string{"outcome": outcome})
}
