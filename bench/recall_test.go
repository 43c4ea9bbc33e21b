//go:build bench

package bench

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/memory"
)

const (
	recallChat    = "telegram:1"
	recallCorpus  = 100_000 // messages of the chat
	recallOthers  = 5_000   // messages of each of two other chats
	recallRepeats = 5       // timed searches per question
	recallSpan    = 2 * 365 * 24 * time.Hour
)

// measureRecall plants the needles in a chat of 100,000 made-up messages
// (two years of them, the needles in the oldest 80%), with two more chats
// holding the same facts, and asks each needle's question through
// SearchTranscript, as search_history does: recall@5 is how many needles
// come back among the first five, and every search is timed. A question
// becomes a query of any of its words (function words dropped), ranked by
// BM25 and age; see memory.Store.SearchTranscript.
func measureRecall(t *testing.T, br *benchRun) {
	ctx := t.Context()
	s, err := memory.Open(ctx, filepath.Join(t.TempDir(), "nanobot.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	start := time.Now()
	ids, others := seedRecall(t, s)
	seeded := time.Since(start)

	var lats []time.Duration
	var at1, at5 int
	var rr float64
	var misses []string
	leaks := 0
	for i, n := range needles {
		var got []memory.TranscriptHit
		for range recallRepeats {
			t0 := time.Now()
			got, err = s.SearchTranscript(ctx, recallChat, n.question, 5)
			lats = append(lats, time.Since(t0))
			if err != nil {
				t.Fatal(err)
			}
		}
		rank := slices.IndexFunc(got, func(h memory.TranscriptHit) bool { return h.ID == ids[i] })
		for _, h := range got {
			if others[h.ID] {
				leaks++
			}
		}
		switch {
		case rank < 0:
			first := "nothing"
			if len(got) > 0 {
				first = fmt.Sprintf("%q", got[0].Snippet)
			}
			misses = append(misses, fmt.Sprintf("- %q: not in the top 5 (first: %s)", n.question, first))
			continue
		case rank == 0:
			at1++
		}
		at5++
		rr += 1 / float64(rank+1)
	}
	if leaks > 0 {
		t.Errorf("%d hits came from other chats", leaks)
	}
	total := len(needles)
	corpus := fmt.Sprintf("%s messages in the chat, %s in two other chats", thousands(recallCorpus), thousands(2*recallOthers))
	br.rep.add("recall", row{
		figure: fmt.Sprintf("recall@5, %d planted facts asked about in other words", total),
		median: fmt.Sprintf("%d/%d (%.0f%%)", at5, total, 100*float64(at5)/float64(total)),
		runs:   fmt.Sprintf("%d questions", total),
		note: fmt.Sprintf("recall@1 %d/%d, MRR %.2f; %s; each fact in one message 0.4–2 years old, the other chats hold the same facts (%d of their messages found)",
			at1, total, rr/float64(total), corpus, leaks),
	})
	br.rep.add("recall", statRow("search of the past (SearchTranscript, top 5), 100,000 messages", lats, fmtDur,
		fmt.Sprintf("%d × %d searches", total, recallRepeats),
		fmt.Sprintf("p95 %s; any word of the question, BM25 re-ranked by age; corpus written and indexed in %s",
			fmtDur(percentile(lats, 0.95)), seeded.Round(100*time.Millisecond))))
	if len(misses) > 0 {
		br.rep.appendix("Recall: the questions whose fact was not among the first five:\n\n" + strings.Join(misses, "\n") + "\n")
	}
}

// seedRecall writes the corpus, archived as /new leaves a chat (the past,
// not the live window), and returns the id of each needle's message and the
// ids of the other chats' messages.
func seedRecall(t *testing.T, s *memory.Store) (ids []int64, others map[int64]bool) {
	t.Helper()
	ctx := t.Context()
	r := rand.New(rand.NewPCG(2026, 3))
	begin := time.Now().Add(-recallSpan)
	step := recallSpan / recallCorpus
	at := map[int]int{} // message position -> needle
	for i := range needles {
		at[(i*2+1)*recallCorpus*8/10/(2*len(needles))] = i
	}
	ids = make([]int64, len(needles))
	var batch []agent.Message
	for k := range recallCorpus {
		m := agent.Message{Role: agent.RoleUser, CreatedAt: begin.Add(time.Duration(k) * step)}
		if i, ok := at[k]; ok {
			m.Content = needles[i].fact
			ids[i] = int64(k + 1) // a fresh database numbers messages from 1
		} else {
			if k%2 == 1 {
				m.Role = agent.RoleAssistant
			}
			m.Content = filler(r, m.Role == agent.RoleAssistant)
		}
		batch = append(batch, m)
		if len(batch) == 1000 || k == recallCorpus-1 {
			if err := s.Append(ctx, recallChat, batch...); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	for i, id := range ids {
		got, err := s.ReadTranscript(ctx, recallChat, id, 0, 0)
		if err != nil || len(got) != 1 || got[0].Text != needles[i].fact {
			t.Fatalf("needle %d is not message %d: %v, %v", i, id, got, err)
		}
	}
	others = map[int64]bool{}
	next := int64(recallCorpus + 1)
	for _, chat := range []string{"telegram:2", "telegram:3"} {
		var msgs []agent.Message
		for k := range recallOthers {
			text := filler(r, k%2 == 1)
			if k < len(needles) {
				text = needles[k].fact
			}
			msgs = append(msgs, agent.Message{Role: agent.RoleUser, Content: text, CreatedAt: time.Now().Add(-time.Hour)})
			others[next] = true
			next++
		}
		if err := s.Append(ctx, chat, msgs...); err != nil {
			t.Fatal(err)
		}
	}
	for _, chat := range []string{recallChat, "telegram:2", "telegram:3"} {
		if err := s.ResetSession(ctx, chat); err != nil {
			t.Fatal(err)
		}
	}
	return ids, others
}
