package memory

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/agent"
)

func benchStore(b *testing.B) *Store {
	b.Helper()
	s, err := Open(b.Context(), dbPath(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

func BenchmarkAppend(b *testing.B) {
	s := benchStore(b)
	ctx := b.Context()
	m := agent.Message{Role: agent.RoleAssistant, Content: strings.Repeat("word ", 60),
		Usage: agent.Usage{PromptTokens: 1200, CompletionTokens: 60}}
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Append(ctx, "telegram:1", m); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRecent10k(b *testing.B) {
	s := benchStore(b)
	ctx := b.Context()
	turn := []agent.Message{user("what is in the folder?"), call("c1"), result("c1"),
		assistant(strings.Repeat("the folder holds ", 20))}
	batch := make([]agent.Message, 0, 1000)
	for len(batch) < cap(batch) {
		batch = append(batch, turn...)
	}
	for range 10 {
		if err := s.Append(ctx, "telegram:1", batch...); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		msgs, err := s.Recent(ctx, "telegram:1", 50)
		if err != nil || len(msgs) != 48 {
			b.Fatalf("Recent = %d messages, %v", len(msgs), err)
		}
	}
}

// seedHistory fills a scope with n entries of Zipf-distributed words in one
// transaction. word(0) is in nearly every entry, word(3000) in few.
func seedHistory(b *testing.B, s *Store, n int) {
	b.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	zipf := rand.NewZipf(rng, 1.1, 1, 4999)
	start := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	err := s.write(b.Context(), func(tx *sql.Tx) error {
		stmt, err := tx.Prepare(`INSERT INTO history (scope, at, entry) VALUES (?, ?, ?)`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		var sb strings.Builder
		for i := range n {
			at := start.Add(time.Duration(i) * 10 * time.Minute)
			sb.Reset()
			sb.WriteString(at.Format("[2006-01-02 15:04] "))
			for j := range 30 {
				if j > 0 {
					sb.WriteByte(' ')
				}
				sb.WriteString(word(int(zipf.Uint64())))
			}
			if _, err := stmt.Exec(GlobalScope, at.UnixMilli(), sb.String()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

func word(i int) string { return fmt.Sprintf("w%d", i) }

func BenchmarkSearchHistory100k(b *testing.B) {
	s := benchStore(b)
	seedHistory(b, s, 100_000)
	queries := []struct{ name, q string }{
		{"common", word(0)},
		{"rare", word(3000)},
		{"two_words", word(1) + " " + word(40)},
		{"phrase", `"` + word(0) + ":" + word(1) + `"`},
		{"no_match", "zebra"},
		{"hostile", `NEAR( "foo AND* -x`},
	}
	for _, q := range queries {
		b.Run(q.name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.SearchHistory(ctx, GlobalScope, q.q, 10); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// The worst case: a chat with a few entries of its own, next to the
	// 100,000 of another scope that match the word too.
	for i := range 20 {
		if err := s.AppendHistory(b.Context(), ChatScope("small"), time.Time{}, fmt.Sprintf("%s entry %d", word(0), i)); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.AppendHistory(b.Context(), ChatScope("small"), time.Time{}, "the oldest"); err != nil {
		b.Fatal(err)
	}
	b.Run("small_scope", func(b *testing.B) {
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			if got, err := s.SearchHistory(ctx, ChatScope("small"), word(0)+" "+word(1), 10); err != nil || len(got) != 0 {
				b.Fatalf("SearchHistory = %d entries, %v", len(got), err)
			}
		}
	})
}

func BenchmarkPing(b *testing.B) {
	s := benchStore(b)
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Ping(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkConsolidate(b *testing.B) {
	s := benchStore(b)
	ctx := b.Context()
	turn := []agent.Message{user("hello"), call("c1"), result("c1"), assistant("hi there")}
	var window []agent.Message
	for range 10 {
		window = append(window, turn...)
	}
	doc := strings.Repeat("- a durable fact about the owner\n", 200) // about 6,600 characters
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		if err := s.Append(ctx, "telegram:1", window...); err != nil {
			b.Fatal(err)
		}
		live, err := s.LiveMessages(ctx, "telegram:1", 0)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		err = s.Consolidate(ctx, agent.Consolidation{
			Session: "telegram:1", Scope: GlobalScope, UpToID: live[len(live)-1].ID,
			HistoryEntry: "[2025-01-01 10:00] The owner said hello; the assistant listed a folder.",
			Memory:       &doc,
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}
