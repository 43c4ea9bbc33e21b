package memory

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/agent"
)

func texts(entries []HistoryEntry) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.Text
	}
	return out
}

func TestMemoryScopesAreIsolated(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	x, y := ChatScope("telegram:1"), ChatScope("telegram:2")
	for scope, doc := range map[string]string{GlobalScope: "owner: Ana", x: "x likes tea", y: "y likes coffee"} {
		if err := s.SetMemory(ctx, scope, doc); err != nil {
			t.Fatal(err)
		}
		if err := s.AppendHistory(ctx, scope, time.Time{}, "entry about "+doc); err != nil {
			t.Fatal(err)
		}
	}
	for scope, want := range map[string]string{GlobalScope: "owner: Ana", x: "x likes tea", y: "y likes coffee", ChatScope("telegram:3"): ""} {
		if doc, err := s.Memory(ctx, scope); err != nil || doc != want {
			t.Errorf("Memory(%q) = %q, %v; want %q", scope, doc, err, want)
		}
	}
	if got, err := s.SearchHistory(ctx, x, "coffee", 10); err != nil || len(got) != 0 {
		t.Errorf("SearchHistory(%q, coffee) = %q, %v; want nothing from another chat", x, texts(got), err)
	}
	if got, err := s.SearchHistory(ctx, GlobalScope, "likes", 10); err != nil || len(got) != 0 {
		t.Errorf("SearchHistory(global, likes) = %q, %v; want nothing from the chats", texts(got), err)
	}
	if got, err := s.History(ctx, y, 10); err != nil || len(got) != 1 || got[0].Text != "entry about y likes coffee" {
		t.Errorf("History(%q) = %q, %v", y, texts(got), err)
	}

	if err := s.SetMemory(ctx, x, "x now likes water"); err != nil {
		t.Fatal(err)
	}
	if doc, _ := s.Memory(ctx, y); doc != "y likes coffee" {
		t.Errorf("replacing one chat's memory changed another's to %q", doc)
	}
}

func TestScopeMustBeValid(t *testing.T) {
	s := newStore(t)
	for _, scope := range []string{"", "chat:", "Global", "user:1", "CHAT:x"} {
		if err := s.SetMemory(t.Context(), scope, "doc"); err == nil {
			t.Errorf("SetMemory(%q) succeeded, want an invalid-scope error", scope)
		}
		if err := s.AppendHistory(t.Context(), scope, time.Time{}, "e"); err == nil {
			t.Errorf("AppendHistory(%q) succeeded, want an invalid-scope error", scope)
		}
	}
}

func TestHistoryNewestFirstAndLimits(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	base := time.Date(2025, 1, 1, 9, 0, 0, 0, time.UTC)
	for i := range 150 {
		if err := s.AppendHistory(ctx, GlobalScope, base.Add(time.Duration(i)*time.Hour), fmt.Sprintf("note %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct{ limit, want int }{{0, 10}, {-1, 10}, {3, 3}, {100, 100}, {1000, 100}}
	for _, tt := range tests {
		got, err := s.History(ctx, GlobalScope, tt.limit)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != tt.want {
			t.Errorf("History(limit %d) = %d entries, want %d", tt.limit, len(got), tt.want)
		}
		if got[0].Text != "note 149" || !got[0].At.Equal(base.Add(149*time.Hour)) {
			t.Errorf("History(limit %d)[0] = %+v, want note 149 at %v", tt.limit, got[0], base.Add(149*time.Hour))
		}
		searched, err := s.SearchHistory(ctx, GlobalScope, "note", tt.limit)
		if err != nil {
			t.Fatal(err)
		}
		if len(searched) != tt.want || searched[0].Text != "note 149" || searched[len(searched)-1].Text != fmt.Sprintf("note %d", 150-tt.want) {
			t.Errorf("SearchHistory(note, limit %d) = %d entries from %q, want %d newest first", tt.limit, len(searched), searched[0].Text, tt.want)
		}
	}
}

var hostileQueries = []string{
	`"`, `""`, `"unbalanced`, `foo AND`, `AND`, `OR OR`, `NOT`, `NEAR(`, `NEAR(a b, 2)`, `*`, `tea*`,
	`^tea`, `a:b`, `entry:tea`, `(`, `)`, `(tea OR`, `-x`, `+x`, `{entry}: tea`, `'`, `\`, `%`, `_`,
	"😀", "tea 😀", "\x00", "te\x00a", "\t\n", "", "   ", `col:"x" AND NOT`, `a OR b NOT c`,
	`"tea" "leaves"`, strings.Repeat("(", 200), strings.Repeat("tea ", 100), `:`, `'tea'`, `tea;DROP TABLE history`,
	"\xff\xfe", "日本語", "çà", "tea.", "tea,leaves", "NEAR/2", "AND OR NOT NEAR",
}

func TestSearchHistory(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  options
	}{{"fts5", options{}}, {"fts4", options{forceFTS4: true}}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			s := openAt(t, dbPath(t), tc.opt)
			var haveFTS5 bool
			if err := s.db.QueryRow(`SELECT sqlite_compileoption_used('ENABLE_FTS5')`).Scan(&haveFTS5); err != nil {
				t.Fatal(err)
			}
			if tc.name == "fts5" && !haveFTS5 {
				t.Skip("SQLite built without FTS5 (no -tags sqlite_fts5): the store falls back to FTS4")
			}
			if s.fts5 != (tc.name == "fts5") {
				t.Fatalf("history index is fts5=%v, want %s", s.fts5, tc.name)
			}
			entries := []string{
				"[2025-01-01 10:00] Ana prefers green tea with leaves; she dislikes coffee.",
				"[2025-01-02 10:00] Talked about the dentist appointment on Friday.",
				"[2025-01-03 10:00] Planned a trip to São Paulo and Kyōto (日本語 notes).",
				"[2025-01-04 10:00] Set up the entry:tea tracker; a:b testing AND NOT NEAR operators.",
			}
			for _, e := range entries {
				if err := s.AppendHistory(ctx, GlobalScope, time.Time{}, e); err != nil {
					t.Fatal(err)
				}
			}
			// Another scope's entries never show up in a global search.
			other := ChatScope("telegram:-100")
			if err := s.AppendHistory(ctx, other, time.Time{}, "[2025-01-05 10:00] green tea, dentist, kyoto"); err != nil {
				t.Fatal(err)
			}
			if got, err := s.SearchHistory(ctx, other, "tea", 10); err != nil || len(got) != 1 {
				t.Errorf("SearchHistory(%q, tea) = %q, %v; want its one entry", other, texts(got), err)
			}
			for _, q := range hostileQueries {
				if _, err := s.SearchHistory(ctx, GlobalScope, q, 5); err != nil {
					t.Errorf("SearchHistory(%q): %v", q, err)
				}
			}

			finds := []struct {
				query string
				want  []string // entry prefixes, newest first
			}{
				{"tea", []string{"[2025-01-04", "[2025-01-01"}},
				{"TEA", []string{"[2025-01-04", "[2025-01-01"}},
				{"dentist", []string{"[2025-01-02"}},
				{"dentist?", []string{"[2025-01-02"}},
				{`"dentist`, []string{"[2025-01-02"}},
				{"green coffee", []string{"[2025-01-01"}},
				{"green dentist", nil},
				{"sao paulo", []string{"[2025-01-03"}},
				{"kyoto", []string{"[2025-01-03"}},
				{"日本語", []string{"[2025-01-03"}},
				{"entry:tea", []string{"[2025-01-04"}},
				{"a:b", []string{"[2025-01-04"}},
				{"foo AND", nil},
				{"NEAR(", []string{"[2025-01-04"}},
				{"*", nil},
				{"(", nil},
				{"😀", nil},
				{"tea 😀", []string{"[2025-01-04", "[2025-01-01"}},
			}
			for _, f := range finds {
				got, err := s.SearchHistory(ctx, GlobalScope, f.query, 10)
				if err != nil {
					t.Errorf("SearchHistory(%q): %v", f.query, err)
					continue
				}
				var prefixes []string
				for _, e := range got {
					prefixes = append(prefixes, e.Text[:len("[2025-01-01")])
				}
				if fmt.Sprint(prefixes) != fmt.Sprint(f.want) {
					t.Errorf("SearchHistory(%q) = %v, want %v", f.query, prefixes, f.want)
				}
			}
		})
	}
}

func TestFTS4DatabaseStaysFTS4(t *testing.T) {
	path := dbPath(t)
	old := openAt(t, path, options{forceFTS4: true})
	if err := old.AppendHistory(t.Context(), GlobalScope, time.Time{}, "kept in fts4"); err != nil {
		t.Fatal(err)
	}
	s := openAt(t, path, options{})
	if s.fts5 {
		t.Error("reopening turned an fts4 index into fts5")
	}
	if got, err := s.SearchHistory(t.Context(), GlobalScope, "kept", 10); err != nil || len(got) != 1 {
		t.Errorf("SearchHistory = %q, %v; want the entry", texts(got), err)
	}
}

func TestSearchPhrases(t *testing.T) {
	tests := []struct{ in, want string }{
		{"tea", `"tea"`},
		{"green tea", `"green" "tea"`},
		{`say "hi"`, `"say" "hi"`},
		{"a:b", `"a b"`},
		{"2025-01-02", `"2025 01 02"`},
		{"NEAR(", `"NEAR"`},
		{"foo AND", `"foo" "AND"`},
		{"* ( ) -", ""},
		{"😀", ""},
		{"São", `"São"`},
	}
	for _, tt := range tests {
		if got := strings.Join(searchPhrases(tt.in), " "); got != tt.want {
			t.Errorf("searchPhrases(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func FuzzSearchHistory(f *testing.F) {
	for _, q := range hostileQueries {
		f.Add(q)
	}
	s, err := Open(f.Context(), filepath.Join(f.TempDir(), "nanobot.db"))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	if err := s.AppendHistory(f.Context(), GlobalScope, time.Time{}, "green tea (NEAR the \"door\") a:b *"); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, q string) {
		// Nothing but quoted runs of words: no operator can survive.
		for _, p := range searchPhrases(q) {
			if len(p) < 3 || p[0] != '"' || p[len(p)-1] != '"' || strings.Contains(p[1:len(p)-1], `"`) {
				t.Fatalf("searchPhrases(%q) yields %q, want one quoted phrase", q, p)
			}
		}
		if _, err := s.SearchHistory(t.Context(), GlobalScope, q, 5); err != nil {
			t.Fatalf("SearchHistory(%q): %v", q, err)
		}
	})
}

func TestConsolidate(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	if err := s.Append(ctx, "a", user("1"), assistant("1"), user("2"), assistant("2"), user("3")); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "b", user("b1"), assistant("b1")); err != nil {
		t.Fatal(err)
	}
	live, err := s.LiveMessages(ctx, "a", 4)
	if err != nil {
		t.Fatal(err)
	}
	doc := "# Facts\n- Ana likes tea"
	at := time.Date(2025, 5, 6, 7, 8, 0, 0, time.UTC)
	err = s.Consolidate(ctx, agent.Consolidation{
		Session: "a", Scope: GlobalScope, UpToID: live[3].ID,
		HistoryEntry: "[2025-05-06 07:08] Talked about tea.", Memory: &doc, At: at,
	})
	if err != nil {
		t.Fatalf("Consolidate: %v", err)
	}
	if got, _ := s.Recent(ctx, "a", 50); brief(got) != "u:3" {
		t.Errorf("Recent after Consolidate = %q, want %q", brief(got), "u:3")
	}
	if got, _ := s.Recent(ctx, "b", 50); brief(got) != "u:b1 a:b1" {
		t.Errorf("another session after Consolidate = %q, want untouched", brief(got))
	}
	if got, _ := s.Memory(ctx, GlobalScope); got != doc {
		t.Errorf("Memory after Consolidate = %q, want %q", got, doc)
	}
	if got, _ := s.History(ctx, GlobalScope, 10); len(got) != 1 || !got[0].At.Equal(at) {
		t.Errorf("History after Consolidate = %+v, want one entry at %v", got, at)
	}
	var consolidated int
	if err := s.db.QueryRow(`SELECT count(*) FROM messages WHERE session = 'a' AND state = 'consolidated'`).Scan(&consolidated); err != nil || consolidated != 4 {
		t.Errorf("consolidated messages = %d, %v; want 4 kept in the database", consolidated, err)
	}

	// Without an entry or a document only the messages are marked.
	if err := s.Consolidate(ctx, agent.Consolidation{Session: "a", Scope: GlobalScope, UpToID: live[3].ID + 100}); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.SessionStats(ctx, "a"); st.Live != 0 {
		t.Errorf("live messages = %d, want 0", st.Live)
	}
	if got, _ := s.History(ctx, GlobalScope, 10); len(got) != 1 {
		t.Errorf("History = %d entries, want still 1", len(got))
	}
	if got, _ := s.Memory(ctx, GlobalScope); got != doc {
		t.Errorf("a nil Memory changed the document to %q", got)
	}
}

func TestConsolidateIsAtomic(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	if err := s.Append(ctx, "a", user("1"), assistant("1"), user("2")); err != nil {
		t.Fatal(err)
	}
	if err := s.SetMemory(ctx, ChatScope("a"), "old"); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendHistory(ctx, ChatScope("a"), time.Time{}, "old entry"); err != nil {
		t.Fatal(err)
	}
	live, err := s.LiveMessages(ctx, "a", 0)
	if err != nil {
		t.Fatal(err)
	}
	newDoc := "new"
	canceled, cancel := context.WithCancel(ctx)
	cancel()

	tests := []struct {
		name    string
		ctx     context.Context
		c       agent.Consolidation
		wantErr string // proves how far the transaction got
	}{
		// The messages are marked first; the invalid scope fails the
		// history insert after that, inside the same transaction.
		{"invalid scope after marking", ctx, agent.Consolidation{Session: "a", Scope: "chat:", UpToID: live[2].ID,
			HistoryEntry: "new entry", Memory: &newDoc}, "append history: CHECK constraint failed"},
		// Marked, then the memory write fails.
		{"invalid scope for memory", ctx, agent.Consolidation{Session: "a", Scope: "bogus", UpToID: live[2].ID,
			Memory: &newDoc}, "save memory: CHECK constraint failed"},
		{"canceled", canceled, agent.Consolidation{Session: "a", Scope: ChatScope("a"), UpToID: live[2].ID,
			HistoryEntry: "new entry", Memory: &newDoc}, "context canceled"},
		{"no session", ctx, agent.Consolidation{Scope: ChatScope("a"), UpToID: live[2].ID, HistoryEntry: "new entry"},
			"session and scope are required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Consolidate(tt.ctx, tt.c)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Consolidate = %v, want an error containing %q", err, tt.wantErr)
			}
			if got, _ := s.Recent(ctx, "a", 10); brief(got) != "u:1 a:1 u:2" {
				t.Errorf("messages after a failed Consolidate = %q, want all still live", brief(got))
			}
			if got, _ := s.Memory(ctx, ChatScope("a")); got != "old" {
				t.Errorf("Memory after a failed Consolidate = %q, want %q", got, "old")
			}
			if got, _ := s.History(ctx, ChatScope("a"), 10); len(got) != 1 || got[0].Text != "old entry" {
				t.Errorf("History after a failed Consolidate = %q, want only the old entry", texts(got))
			}
		})
	}
	// The store is still usable and the same consolidation now succeeds.
	c := tests[0].c
	c.Scope = ChatScope("a")
	if err := s.Consolidate(ctx, c); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Memory(ctx, ChatScope("a")); got != "new" {
		t.Errorf("Memory = %q, want %q", got, "new")
	}
}
