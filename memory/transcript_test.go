package memory

import (
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/nanobot-go/nanobot/agent"
)

const (
	chatA = "telegram:1"
	chatB = "telegram:2"
)

// libraryFTS5 reports whether the SQLite library of this build has FTS5, so
// that a test building an old schema by hand renders it as Open would.
func libraryFTS5(t testing.TB) bool {
	t.Helper()
	db, err := sql.Open("sqlite3", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var ok bool
	if err := db.QueryRow(`SELECT sqlite_compileoption_used('ENABLE_FTS5')`).Scan(&ok); err != nil {
		t.Fatal(err)
	}
	return ok
}

// haveFTS5 reports whether the SQLite library of this build has FTS5.
func haveFTS5(t testing.TB, s *Store) bool {
	t.Helper()
	var ok bool
	if err := s.db.QueryRow(`SELECT sqlite_compileoption_used('ENABLE_FTS5')`).Scan(&ok); err != nil {
		t.Fatal(err)
	}
	return ok
}

// past stores msgs in chat and archives them, as /new would: the past.
func past(t testing.TB, s *Store, chat string, msgs ...agent.Message) []int64 {
	t.Helper()
	ctx := t.Context()
	if err := s.Append(ctx, chat, msgs...); err != nil {
		t.Fatal(err)
	}
	if err := s.ResetSession(ctx, chat); err != nil {
		t.Fatal(err)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT id FROM messages WHERE session = ? ORDER BY id DESC LIMIT ?`, chat, len(msgs))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	slices.Reverse(ids)
	return ids
}

func said(role agent.Role, text string, at time.Time) agent.Message {
	return agent.Message{Role: role, Content: text, CreatedAt: at}
}

func hitIDs(hits []TranscriptHit) []int64 {
	ids := make([]int64, len(hits))
	for i, h := range hits {
		ids[i] = h.ID
	}
	return ids
}

func TestSearchTranscript(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  options
	}{{"fts5", options{}}, {"fts4", options{forceFTS4: true}}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			s := openAt(t, dbPath(t), tc.opt)
			if tc.name == "fts5" && !haveFTS5(t, s) {
				t.Skip("SQLite built without FTS5 (no -tags sqlite_fts5): the store falls back to FTS4")
			}
			day := time.Now().Add(-30 * 24 * time.Hour)
			a := past(t, s, chatA,
				said(agent.RoleUser, "The wifi password at the cabin is moose-42", day),
				said(agent.RoleAssistant, "Noted: cabin wifi is moose-42.", day.Add(time.Minute)),
				agent.Message{Role: agent.RoleTool, ToolCallID: "c1", Name: "exec", Content: "cabin wifi tool output", CreatedAt: day},
				said(agent.RoleSystem, "cabin wifi system text", day),
				said(agent.RoleUser, "a:b NEAR( \"quoted\" * tea", day.Add(2*time.Minute)),
			)
			b := past(t, s, chatB, said(agent.RoleUser, "The cabin wifi in chat B is elk-7", day))
			// The work of a job of chat A is not A's transcript, nor is what
			// is still live (the model sees it already).
			past(t, s, "cron:1", said(agent.RoleAssistant, "cabin wifi from a job", day))
			if err := s.Append(ctx, chatA, said(agent.RoleUser, "what was the cabin wifi?", time.Time{})); err != nil {
				t.Fatal(err)
			}

			tests := []struct {
				chat, query string
				want        []int64
			}{
				{chatA, "cabin wifi", []int64{a[0], a[1]}},
				{chatB, "cabin wifi", []int64{b[0]}},
				{chatA, "elk", nil},
				{chatB, "moose", nil},
				{chatA, "a:b", []int64{a[4]}},
				{chatA, "NEAR(", []int64{a[4]}},
				{chatA, "tool output", nil},
				{chatA, "system text", nil},
				{chatA, "from a job", nil},
				{chatA, "*", nil},
				{chatA, "", nil},
			}
			for _, tt := range tests {
				got, err := s.SearchTranscript(ctx, tt.chat, tt.query, 10)
				if err != nil {
					t.Errorf("SearchTranscript(%s, %q): %v", tt.chat, tt.query, err)
					continue
				}
				ids := hitIDs(got)
				slices.Sort(ids) // the order is TestSearchTranscriptRanking's
				if !slices.Equal(ids, tt.want) && !(len(ids) == 0 && len(tt.want) == 0) {
					t.Errorf("SearchTranscript(%s, %q) = %v, want %v", tt.chat, tt.query, ids, tt.want)
				}
			}
			for _, q := range hostileQueries {
				if _, err := s.SearchTranscript(ctx, chatA, q, 5); err != nil {
					t.Errorf("SearchTranscript(%q): %v", q, err)
				}
			}
			for _, chat := range []string{"", "cron:1", "heartbeat", "nochannel"} {
				if _, err := s.SearchTranscript(ctx, chat, "wifi", 5); err == nil {
					t.Errorf("SearchTranscript(%q) found no fault with a session that is no chat", chat)
				}
			}
		})
	}
}

// A chat never finds another chat's messages, however many of them match
// and whatever the query says.
func TestSearchTranscriptIsolation(t *testing.T) {
	s := newStore(t)
	day := time.Now().Add(-time.Hour)
	var other []agent.Message
	for i := range 200 {
		other = append(other, said(agent.RoleUser, fmt.Sprintf("secret plan number %d of chat B", i), day))
	}
	past(t, s, chatB, other...)
	past(t, s, "cli:telegram:1", said(agent.RoleUser, "secret plan of a chat named like A", day))
	mine := past(t, s, chatA, said(agent.RoleUser, "my own secret", day))
	for _, q := range []string{"secret plan", "secret", "plan OR secret", `transcript_key : "c` + "74", "chat B", "c74656c656772616d3a32"} {
		got, err := s.SearchTranscript(t.Context(), chatA, q, 50)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range got {
			if h.ID != mine[0] {
				t.Errorf("SearchTranscript(%s, %q) found message %d of another chat", chatA, q, h.ID)
			}
		}
	}
}

func TestSearchTranscriptRanking(t *testing.T) {
	s := newStore(t)
	if !haveFTS5(t, s) {
		t.Skip("ranking needs FTS5 (build with -tags sqlite_fts5)")
	}
	now := time.Now()
	filler := make([]agent.Message, 0, 40)
	for i := range 40 {
		filler = append(filler, said(agent.RoleUser, fmt.Sprintf("we talked about lunch and the weather, day %d", i), now.AddDate(0, 0, -i)))
	}
	past(t, s, chatA, filler...)
	ids := past(t, s, chatA,
		said(agent.RoleUser, "my locksmith is called Ferreira, his number is 0172 555 0199", now.AddDate(-2, 0, 0)),
		said(agent.RoleUser, "the locksmith was late again", now.AddDate(0, 0, -1)),
		said(agent.RoleUser, "the dentist is on Friday", now.AddDate(0, -6, 0)),
		said(agent.RoleUser, "the dentist is on Friday", now.AddDate(0, 0, -2)),
	)
	tests := []struct {
		name, query string
		first       int64
	}{
		{"an old close match beats a new weak one", "what is the number of my locksmith Ferreira?", ids[0]},
		{"equal matches: the newer first", "when is the dentist", ids[3]},
	}
	for _, tt := range tests {
		got, err := s.SearchTranscript(t.Context(), chatA, tt.query, 5)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 || got[0].ID != tt.first {
			t.Errorf("%s: SearchTranscript(%q) = %v, want %d first", tt.name, tt.query, hitIDs(got), tt.first)
		}
	}
}

func TestSearchTranscriptSnippet(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  options
	}{{"fts5", options{}}, {"fts4", options{forceFTS4: true}}} {
		t.Run(tc.name, func(t *testing.T) {
			s := openAt(t, dbPath(t), tc.opt)
			long := strings.Repeat("supercalifragilistic ", 50) + "needle " + strings.Repeat("antidisestablishment ", 50)
			past(t, s, chatA, said(agent.RoleAssistant, long, time.Now().Add(-time.Hour)),
				said(agent.RoleUser, "short needle", time.Now().Add(-time.Hour)))
			got, err := s.SearchTranscript(t.Context(), chatA, "needle", 5)
			if err != nil || len(got) != 2 {
				t.Fatalf("SearchTranscript = %v, %v; want 2 hits", got, err)
			}
			for _, h := range got {
				if n := utf8.RuneCountInString(h.Snippet); n > MaxSnippetChars || !strings.Contains(h.Snippet, "needle") {
					t.Errorf("snippet of %d = %q (%d characters), want ≤ %d with the match", h.ID, h.Snippet, n, MaxSnippetChars)
				}
			}
		})
	}
}

func TestReadTranscript(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	day := time.Date(2026, 3, 1, 14, 0, 0, 0, time.UTC)
	var msgs []agent.Message
	for i := range 80 {
		msgs = append(msgs, said([]agent.Role{agent.RoleUser, agent.RoleAssistant}[i%2], fmt.Sprintf("line %d", i), day.Add(time.Duration(i)*time.Minute)))
	}
	ids := past(t, s, chatA, msgs...)
	toolIDs := past(t, s, chatA, call("c1"), result("c1"))
	other := past(t, s, chatB, said(agent.RoleUser, "B's", day))
	if err := s.Append(ctx, chatA, said(agent.RoleUser, "live line", time.Time{})); err != nil {
		t.Fatal(err)
	}

	texts := func(ms []TranscriptMessage) []string {
		var out []string
		for _, m := range ms {
			out = append(out, m.Text)
		}
		return out
	}
	lines := func(from, to int) []string {
		var out []string
		for i := from; i <= to; i++ {
			out = append(out, fmt.Sprintf("line %d", i))
		}
		return out
	}
	tests := []struct {
		name          string
		id            int64
		before, after int
		want          []string
	}{
		{"around", ids[10], 2, 3, lines(8, 13)},
		{"only the message", ids[10], 0, 0, lines(10, 10)},
		{"from the start", ids[0], 5, 2, lines(0, 2)},
		{"after, to the live end", ids[78], 0, 10, append(lines(78, 79), "live line")},
		{"bounded", ids[40], 100, 100, lines(0, 49)},
		{"a tool message anchors but is not shown", toolIDs[1], 2, 1, append(lines(78, 79), "live line")},
		{"negative counts", ids[5], -3, -1, lines(5, 5)},
	}
	for _, tt := range tests {
		got, err := s.ReadTranscript(ctx, chatA, tt.id, tt.before, tt.after)
		if err != nil {
			t.Errorf("%s: ReadTranscript(%d, %d, %d): %v", tt.name, tt.id, tt.before, tt.after, err)
			continue
		}
		if diff := cmp.Diff(tt.want, texts(got)); diff != "" {
			t.Errorf("%s: ReadTranscript(%d, %d, %d) (-want +got):\n%s", tt.name, tt.id, tt.before, tt.after, diff)
		}
	}
	for _, id := range []int64{other[0], 0, -1, 1 << 40} {
		got, err := s.ReadTranscript(ctx, chatA, id, 5, 5)
		if !errors.Is(err, ErrNotInTranscript) {
			t.Errorf("ReadTranscript(%s, %d) = %v, %v; want ErrNotInTranscript", chatA, id, texts(got), err)
		}
	}
	if _, err := s.ReadTranscript(ctx, "cron:1", ids[0], 1, 1); err == nil {
		t.Error("ReadTranscript of a job's session: no error")
	}
	if got, err := s.ReadTranscript(ctx, chatA, ids[3], 0, 0); err != nil || !got[0].At.Equal(day.Add(3*time.Minute)) || got[0].Role != "assistant" {
		t.Errorf("ReadTranscript(%d) = %+v, %v; want line 3 by the assistant at 14:03", ids[3], got, err)
	}
}

// A database at the schema before the transcript index, with messages,
// gets them indexed: the past becomes searchable, and new messages are
// indexed as they come.
func TestMigrateTranscriptSearch(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  options
	}{{"fts5", options{}}, {"fts4", options{forceFTS4: true}}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			path := dbPath(t)
			fts5 := tc.name == "fts5"
			if fts5 && !libraryFTS5(t) {
				t.Skip("SQLite built without FTS5")
			}
			ms, err := loadMigrations(migrationData{FTS5: fts5})
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(ms, func(m migration) bool { return strings.HasSuffix(m.name, "transcript_search.sql") })
			if i < 0 {
				t.Fatal("no migration indexes the transcript")
			}
			raw := rawDB(t, path)
			for _, m := range ms[:i] {
				if _, err := raw.Exec(m.sql); err != nil {
					t.Fatalf("%s: %v", m.name, err)
				}
			}
			if _, err := raw.Exec(fmt.Sprintf(`PRAGMA user_version = %d;
				INSERT INTO messages (id, session, channel, chat, role, content, created_at, state) VALUES
					(1, 'telegram:1', 'telegram', '1', 'user', 'the boat is called Marlin', 1000, 'consolidated'),
					(2, 'telegram:1', 'telegram', '1', 'tool', 'boat tool output', 1000, 'consolidated'),
					(3, 'telegram:2', 'telegram', '2', 'user', 'another boat', 1000, 'archived'),
					(4, 'telegram:1', 'telegram', '1', 'assistant', '', 1000, 'consolidated'),
					(5, 'cron:1', 'telegram', '1', 'assistant', 'boat job', 1000, 'consolidated')`, ms[i-1].version)); err != nil {
				t.Fatal(err)
			}
			raw.Close()

			s := openAt(t, path, tc.opt)
			got, err := s.SearchTranscript(ctx, chatA, "boat", 10)
			if err != nil || !slices.Equal(hitIDs(got), []int64{1}) {
				t.Errorf("after the upgrade: SearchTranscript(boat) = %v, %v; want [1]", hitIDs(got), err)
			}
			// Editing and deleting keep the index in step.
			if _, err := s.db.ExecContext(ctx, `UPDATE messages SET content = 'the yacht' WHERE id = 1`); err != nil {
				t.Fatal(err)
			}
			if _, err := s.db.ExecContext(ctx, `UPDATE messages SET state = 'archived' WHERE id = 2`); err != nil {
				t.Fatal(err)
			}
			ids := past(t, s, chatA, said(agent.RoleUser, "a new boat", time.Now()))
			got, err = s.SearchTranscript(ctx, chatA, "boat", 10)
			if err != nil || !slices.Equal(hitIDs(got), ids) {
				t.Errorf("after edits: SearchTranscript(boat) = %v, %v; want %v", hitIDs(got), err, ids)
			}
			if _, err := s.db.ExecContext(ctx, `DELETE FROM messages WHERE id IN (1, 2, ?)`, ids[0]); err != nil {
				t.Fatal(err)
			}
			for _, q := range []string{"boat", "yacht"} {
				if got, err := s.SearchTranscript(ctx, chatA, q, 10); err != nil || len(got) != 0 {
					t.Errorf("after deletes: SearchTranscript(%s) = %v, %v; want nothing", q, hitIDs(got), err)
				}
			}
			if fts5 {
				if _, err := s.db.ExecContext(ctx, `INSERT INTO transcript_fts (transcript_fts, rank) VALUES ('integrity-check', 1)`); err != nil {
					t.Errorf("integrity-check: %v", err)
				}
			}
		})
	}
}

func FuzzSearchTranscript(f *testing.F) {
	for _, q := range hostileQueries {
		f.Add(q)
	}
	s, err := Open(f.Context(), filepath.Join(f.TempDir(), "nanobot.db"))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	past(f, s, chatA, said(agent.RoleUser, "green tea (NEAR the \"door\") a:b *", time.Now()))
	past(f, s, chatB, said(agent.RoleUser, "green tea of chat B", time.Now()))
	f.Fuzz(func(t *testing.T, q string) {
		hits, err := s.SearchTranscript(t.Context(), chatA, q, 5)
		if err != nil {
			t.Fatalf("SearchTranscript(%q): %v", q, err)
		}
		if len(hits) > 1 {
			t.Fatalf("SearchTranscript(%q) = %v: more than chat A's one message", q, hitIDs(hits))
		}
	})
}

func TestAnyWords(t *testing.T) {
	tests := []struct {
		query string
		want  []string
	}{
		{"what's the phone number of the locksmith?", []string{`"phone"`, `"number"`, `"locksmith"`}},
		{"what's Pedro's number now?", []string{`"pedro"`, `"pedro s"`, `"number"`, `"now"`}},
		{"r.almeida@casaprop.pt", []string{`"r"`, `"almeida"`, `"casaprop"`, `"pt"`, `"r almeida casaprop pt"`}},
		{"Tea tea TEA", []string{`"tea"`}},
		{"what is it", []string{`"what"`, `"is"`, `"it"`}},
		{`NEAR( "x" AND* -y`, []string{`"near"`, `"x"`, `"y"`}}, // "and" is a stop word
		{"", nil},
	}
	for _, tt := range tests {
		if got := anyWords(searchPhrases(tt.query)); !slices.Equal(got, tt.want) {
			t.Errorf("anyWords(%q) = %q, want %q", tt.query, got, tt.want)
		}
	}
}

// The key of a chat is one token the stemmer leaves alone, whatever the
// chat is called: a chat whose name's hex ends in "e" or "s"-like suffixes
// still finds its own messages, and only those.
func TestTranscriptKeyIsNotStemmed(t *testing.T) {
	s := newStore(t)
	chats := []string{"cli:n", "cli:ne", "cli:es", "cli:ed", "telegram:-100123"}
	ids := map[string]int64{}
	for _, chat := range chats {
		ids[chat] = past(t, s, chat, said(agent.RoleUser, "the shared word kiwi in "+chat, time.Now().Add(-time.Hour)))[0]
	}
	for _, chat := range chats {
		got, err := s.SearchTranscript(t.Context(), chat, "kiwi", 10)
		if err != nil || !slices.Equal(hitIDs(got), []int64{ids[chat]}) {
			t.Errorf("SearchTranscript(%s, kiwi) = %v, %v; want [%d]", chat, hitIDs(got), err, ids[chat])
		}
	}
}
