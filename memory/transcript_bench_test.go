package memory

import (
	"database/sql"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// seedTranscript fills chat's transcript with n archived messages of 5 to
// 40 Zipf-distributed words, in one transaction, oldest first over the
// last two years. word(0) is in nearly every message, word(3000) in few.
func seedTranscript(b *testing.B, s *Store, chat string, n int) {
	b.Helper()
	rng := rand.New(rand.NewPCG(3, 4))
	zipf := rand.NewZipf(rng, 1.1, 1, 4999)
	start := time.Now().Add(-2 * 365 * 24 * time.Hour)
	step := 2 * 365 * 24 * time.Hour / time.Duration(n)
	channel, id, _ := strings.Cut(chat, ":")
	err := s.write(b.Context(), func(tx *sql.Tx) error {
		stmt, err := tx.Prepare(`INSERT INTO messages (session, channel, chat, role, content, created_at, state)
			VALUES (?, ?, ?, ?, ?, ?, 'archived')`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		var sb strings.Builder
		for i := range n {
			sb.Reset()
			for j := range 5 + rng.IntN(36) {
				if j > 0 {
					sb.WriteByte(' ')
				}
				sb.WriteString(word(int(zipf.Uint64())))
			}
			role := [2]string{"user", "assistant"}[i%2]
			if _, err := stmt.Exec(chat, channel, id, role, sb.String(), millis(start.Add(time.Duration(i)*step))); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

func BenchmarkSearchTranscript100k(b *testing.B) {
	s := benchStore(b)
	if !s.fts5 {
		b.Skip("ranked search needs FTS5 (-tags sqlite_fts5)")
	}
	seedTranscript(b, s, "telegram:1", 100_000)
	seedTranscript(b, s, "telegram:2", 10_000)
	queries := []struct{ name, q string }{
		{"common", word(0)},
		{"rare", word(3000)},
		{"question", "what was the " + word(2) + " " + word(700) + " " + word(2500) + " again?"},
		{"no_match", "zebra"},
		{"hostile", `NEAR( "foo AND* -x`},
	}
	for _, q := range queries {
		b.Run(q.name, func(b *testing.B) {
			ctx := b.Context()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.SearchTranscript(ctx, "telegram:1", q.q, 5); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("small_chat", func(b *testing.B) {
		ctx := b.Context()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.SearchTranscript(ctx, "telegram:2", word(0)+" "+word(1), 5); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkReadTranscript100k(b *testing.B) {
	s := benchStore(b)
	seedTranscript(b, s, "telegram:1", 100_000)
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		if msgs, err := s.ReadTranscript(ctx, "telegram:1", 50_000, 10, 10); err != nil || len(msgs) != 21 {
			b.Fatalf("ReadTranscript = %d messages, %v", len(msgs), err)
		}
	}
}
