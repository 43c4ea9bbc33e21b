package memory

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/agent"
)

// AuditEntry records one tool call. Args must already be redacted: the store
// keeps them exactly as given.
type AuditEntry struct {
	At       time.Time
	Session  string
	Tool     string
	Args     string
	Verdict  string // "allow" | "ask" | "deny"; "" for tools without a policy
	Category string
	Reason   string
	Approver string
	// Approval is what came of asking (agent.ApprovalApproved and the
	// others); "" when nobody was asked, or for calls recorded before it
	// was (see Outcome).
	Approval string
	Duration time.Duration
	ExitCode int
	// OutputBytes is the size of the tool's output.
	OutputBytes int
}

// AuditFilter selects audit entries. Zero fields select everything.
type AuditFilter struct {
	Since      time.Time // only calls at or after it
	Until      time.Time // only calls at or before it
	DeniedOnly bool      // only calls refused (verdict "deny")
	Session    string    // only this session
	Tool       string    // only calls of this tool
	Verdict    string    // only calls with this verdict ("allow", "ask", "deny")
	Limit      int       // at most this many, the newest (<= 0: no limit)
}

// UsageRow is one session's token usage on one day with one model.
type UsageRow struct {
	Day     string // YYYY-MM-DD
	Session string
	Model   string // "" for usage recorded before models were
	Calls   int
	agent.Usage
}

// RecordAudit stores one tool call. A zero At becomes now.
func (s *Store) RecordAudit(ctx context.Context, e AuditEntry) error {
	err := s.write(ctx, func(tx *sql.Tx) error { return insertAudit(ctx, tx, e) })
	if err != nil {
		return fmt.Errorf("record audit: %w", err)
	}
	return nil
}

func insertAudit(ctx context.Context, tx *sql.Tx, e AuditEntry) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO audit
		(at, session, tool, args, verdict, category, reason, approver, approval, duration_ns, exit_code, output_bytes)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		millis(e.At), e.Session, e.Tool, e.Args, e.Verdict, e.Category, e.Reason, e.Approver, e.Approval,
		int64(e.Duration), e.ExitCode, e.OutputBytes)
	return err
}

// auditEntry is the audit row of a tool call the loop ran. A call without a
// verdict ran without a policy to ask: it was allowed.
func auditEntry(ev agent.ToolEvent) AuditEntry {
	verdict := ev.Verdict
	if verdict == "" {
		verdict = "allow"
	}
	return AuditEntry{
		At: time.Now().Add(-ev.Duration), Session: ev.Turn.Session, Tool: ev.Tool, Args: ev.Args,
		Verdict: verdict, Category: ev.Category, Reason: ev.Reason, Approver: ev.Approver, Approval: ev.Approval,
		Duration: ev.Duration, ExitCode: ev.ExitCode, OutputBytes: len(ev.Result),
	}
}

// Outcome says what happened to the call: "approved by telegram:42",
// "denied by telegram:42", "timed out", "not asked" (asking failed), or
// "ran" and "refused" for calls nobody was asked about. For a
// call recorded before approvals were, an "ask" that ran was approved.
func (e AuditEntry) Outcome() string {
	approval := e.Approval
	if approval == "" && e.Verdict == "ask" {
		approval = agent.ApprovalApproved
	}
	switch {
	case approval == "" && e.Verdict == "deny":
		return "refused"
	case approval == "":
		return "ran"
	case e.Approver != "":
		return approval + " by " + e.Approver
	}
	return approval
}

// Audit returns the entries f selects, newest first.
func (s *Store) Audit(ctx context.Context, f AuditFilter) ([]AuditEntry, error) {
	var where []string
	var args []any
	if !f.Since.IsZero() {
		where = append(where, "at >= ?")
		args = append(args, f.Since.UnixMilli())
	}
	if !f.Until.IsZero() {
		where = append(where, "at <= ?")
		args = append(args, f.Until.UnixMilli())
	}
	if f.DeniedOnly {
		where = append(where, "verdict = 'deny'")
	}
	for _, eq := range []struct{ column, value string }{
		{"session", f.Session}, {"tool", f.Tool}, {"verdict", f.Verdict},
	} {
		if eq.value != "" {
			where = append(where, eq.column+" = ?")
			args = append(args, eq.value)
		}
	}
	q := `SELECT at, session, tool, args, verdict, category, reason, approver, approval, duration_ns, exit_code, output_bytes
		FROM audit`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY at DESC, id DESC LIMIT ?"
	limit := f.Limit
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	args = append(args, limit)

	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read audit: %w", err)
	}
	defer rows.Close()
	var entries []AuditEntry
	for rows.Next() {
		var e AuditEntry
		var at, dur int64
		if err := rows.Scan(&at, &e.Session, &e.Tool, &e.Args, &e.Verdict, &e.Category, &e.Reason,
			&e.Approver, &e.Approval, &dur, &e.ExitCode, &e.OutputBytes); err != nil {
			return nil, fmt.Errorf("read audit: %w", err)
		}
		e.At = fromMillis(at)
		e.Duration = time.Duration(dur)
		entries = append(entries, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read audit: %w", err)
	}
	return entries, nil
}

// day is the calendar date of t in t's own location: pass times in the zone
// whose days should count (the daemon uses UTC). The zero time means today,
// in UTC.
func day(t time.Time) string {
	if t.IsZero() {
		t = time.Now().UTC()
	}
	return t.Format(time.DateOnly)
}

// RecordUsage adds one model call's tokens to the session's total for the
// calendar day of at (see UsageOn for which day that is) and the model that
// answered.
func (s *Store) RecordUsage(ctx context.Context, session string, at time.Time, model string, u agent.Usage) error {
	err := s.write(ctx, func(tx *sql.Tx) error { return addUsage(ctx, tx, session, at, model, u) })
	if err != nil {
		return fmt.Errorf("record usage: %w", err)
	}
	return nil
}

// addUsage counts one model call of the session on the day of at.
func addUsage(ctx context.Context, tx *sql.Tx, session string, at time.Time, model string, u agent.Usage) error {
	channel, chat, err := chatOf(ctx, tx, session)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO usage
		(session, channel, chat, day, model, calls, prompt_tokens, completion_tokens, cached_tokens)
		VALUES (?, ?, ?, ?, ?, 1, ?, ?, ?)
		ON CONFLICT (session, day, model) DO UPDATE SET
			calls = calls + 1,
			prompt_tokens = prompt_tokens + excluded.prompt_tokens,
			completion_tokens = completion_tokens + excluded.completion_tokens,
			cached_tokens = cached_tokens + excluded.cached_tokens`,
		session, channel, chat, day(at), model, u.PromptTokens, u.CompletionTokens, u.CachedTokens)
	return err
}

// usageSums selects the sums of an agent.Usage over usage rows, in the
// order of its fields: prompt, completion, cached.
const usageSums = `coalesce(sum(prompt_tokens), 0), coalesce(sum(completion_tokens), 0),
	coalesce(sum(cached_tokens), 0)`

// UsageOn returns the session's usage on the calendar day of the given time,
// taken in that time's own location: days are the dates recorded by
// RecordUsage, so pass times in one zone consistently (the daemon uses UTC).
// An empty session sums every session.
func (s *Store) UsageOn(ctx context.Context, session string, on time.Time) (agent.Usage, error) {
	var u agent.Usage
	err := s.db.QueryRowContext(ctx, `SELECT `+usageSums+`
		FROM usage WHERE day = ?1 AND (?2 = '' OR session = ?2)`, day(on), session).
		Scan(&u.PromptTokens, &u.CompletionTokens, &u.CachedTokens)
	if err != nil {
		return agent.Usage{}, fmt.Errorf("read usage: %w", err)
	}
	return u, nil
}

// UsageSince returns usage per day, session and model from the calendar
// day of since (in its own location) on, oldest day first.
func (s *Store) UsageSince(ctx context.Context, since time.Time) ([]UsageRow, error) {
	from := ""
	if !since.IsZero() {
		from = day(since)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT day, session, model, calls, prompt_tokens, completion_tokens, cached_tokens
		FROM usage WHERE day >= ? ORDER BY day, session, model`, from)
	if err != nil {
		return nil, fmt.Errorf("read usage: %w", err)
	}
	defer rows.Close()
	var out []UsageRow
	for rows.Next() {
		var r UsageRow
		if err := rows.Scan(&r.Day, &r.Session, &r.Model, &r.Calls, &r.PromptTokens, &r.CompletionTokens, &r.CachedTokens); err != nil {
			return nil, fmt.Errorf("read usage: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read usage: %w", err)
	}
	return out, nil
}
