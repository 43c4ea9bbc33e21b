package memory

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nanobot-go/nanobot/session"
)

// A chat's transcript is what its user and the assistant said to each other
// in the chat's own session: user and assistant messages with text, in every
// state (live, consolidated, archived). Tool results, system messages and
// the working sessions of jobs and tasks are not part of it (see
// migrations/0010_transcript_search.sql). A transcript belongs to one chat
// whatever memory.scope says: MEMORY may be shared, what a chat said is not.

// TranscriptHit is one message of a transcript found by a search.
type TranscriptHit struct {
	ID      int64
	Role    string // "user" or "assistant"
	At      time.Time
	Snippet string // the matching part of the message, at most MaxSnippetChars
	Score   float64
}

// TranscriptMessage is one message of a transcript.
type TranscriptMessage struct {
	ID   int64
	Role string
	At   time.Time
	Text string
}

// ErrNotInTranscript is returned by ReadTranscript for a message id that is
// not part of the chat's transcript (another chat's, or none at all).
var ErrNotInTranscript = errors.New("no such message in this chat")

const (
	// MaxSnippetChars bounds TranscriptHit.Snippet, in characters.
	MaxSnippetChars = 200
	// MaxTranscriptPage bounds the messages ReadTranscript returns.
	MaxTranscriptPage = 50

	defaultTranscriptLimit = 5
	maxTranscriptLimit     = 50
	// rerankPool is how many of the best BM25 matches are re-ranked with
	// their age.
	rerankPool = 100
	// recencyHalfLife and recencyWeight shape the age factor (see
	// SearchTranscript).
	recencyHalfLife = 90 * 24 * time.Hour
	recencyWeight   = 0.2
)

// SearchTranscript finds messages of chat's transcript (chat is the chat's
// session, "telegram:123") that are no longer live, that is past the
// conversation the model is shown: the past, not what it already sees. Any
// text is a valid query, as for SearchHistory. limit defaults to 5 when <= 0
// and is at most 50.
//
// With FTS5 words are stemmed (English, the porter tokenizer: "owe" finds
// "owes"), and a message matches when it holds any word of the query (common
// function words are dropped when the query has other words; see
// anyWords), and the
// matches are ranked by relevance and age: the best rerankPool by BM25 are
// re-ranked by
//
//	score = -bm25 × (1 − w + w × 2^(−age / halfLife)),  w = 0.2, halfLife = 90 days
//
// so relevance decides and age only tips the balance: an old message that
// matches the question well still beats a new one that matches it weakly,
// and between equally good matches the newer wins. Matching any word rather
// than every word is what lets a question in other words than the message
// find it; BM25 is what keeps that from drowning in common words.
//
// With FTS4 there is no BM25: a message matches when it holds every word of
// the query, newest first, as for SearchHistory.
func (s *Store) SearchTranscript(ctx context.Context, chat, query string, limit int) ([]TranscriptHit, error) {
	key, err := transcriptKey(chat)
	if err != nil {
		return nil, fmt.Errorf("search transcript: %w", err)
	}
	limit = boundLimit(limit, defaultTranscriptLimit, maxTranscriptLimit)
	phrases := searchPhrases(query)
	if len(phrases) == 0 {
		return nil, nil
	}
	var hits []TranscriptHit
	if s.fts5 {
		hits, err = s.searchTranscriptFTS5(ctx, chat, key, anyWords(phrases), limit)
	} else {
		hits, err = s.searchTranscriptFTS4(ctx, chat, key, phrases, limit)
	}
	if err != nil {
		return nil, fmt.Errorf("search transcript: %w", err)
	}
	for i := range hits {
		hits[i].Snippet = clipAround(hits[i].Snippet, MaxSnippetChars)
	}
	return hits[:min(limit, len(hits))], nil
}

// searchTranscriptFTS5 returns the best limit matches: the best
// rerankPool by BM25, with -bm25 as their score, re-ranked with their age;
// their snippets are made for those limit only. The chat's key weighs
// nothing in BM25: every message of the chat holds it.
func (s *Store) searchTranscriptFTS5(ctx context.Context, chat, key string, phrases []string, limit int) ([]TranscriptHit, error) {
	expr := `transcript_key : "` + key + `" AND content : (` + strings.Join(phrases, " OR ") + `)`
	// The pool is taken inside the index, before a message row is read,
	// and CROSS JOIN keeps the index the outer loop: the planner would
	// rather walk the chat's messages by session and probe the index for
	// each, 100,000 probes for a word that matches nothing. The key already confines the matches to
	// the chat; the session test is a second lock, the state test leaves
	// out the live window (so the pool may be a few short of rerankPool).
	rows, err := s.db.QueryContext(ctx, `SELECT m.id, m.role, m.created_at, '', f.score
		FROM (SELECT rowid, -bm25(transcript_fts, 1.0, 0.0) AS score FROM transcript_fts
			WHERE transcript_fts MATCH ? ORDER BY bm25(transcript_fts, 1.0, 0.0) LIMIT ?) AS f
		CROSS JOIN messages AS m ON m.id = f.rowid
		WHERE m.session = ? AND m.state <> 'live'`, expr, rerankPool, chat)
	if err != nil {
		return nil, err
	}
	hits, err := scanHits(rows)
	if err != nil || len(hits) == 0 {
		return nil, err
	}
	rerank(hits, time.Now())
	hits = hits[:min(limit, len(hits))]
	ids := make([]any, len(hits))
	for i, h := range hits {
		ids[i] = h.ID
	}
	rows, err = s.db.QueryContext(ctx, `SELECT rowid, snippet(transcript_fts, 0, char(2), char(3), '…', 24)
		FROM transcript_fts WHERE transcript_fts MATCH ? AND rowid IN (`+placeholders(len(ids))+`)`,
		append([]any{expr}, ids...)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	snippets := map[int64]string{}
	for rows.Next() {
		var id int64
		var snippet string
		if err := rows.Scan(&id, &snippet); err != nil {
			return nil, err
		}
		snippets[id] = snippet
	}
	for i := range hits {
		hits[i].Snippet = snippets[hits[i].ID]
	}
	return hits, rows.Err()
}

// searchTranscriptFTS4 returns the newest messages that hold every phrase.
func (s *Store) searchTranscriptFTS4(ctx context.Context, chat, key string, phrases []string, limit int) ([]TranscriptHit, error) {
	expr := "transcript_key:" + key + " " + strings.Join(phrases, " ")
	rows, err := s.db.QueryContext(ctx, `SELECT m.id, m.role, m.created_at,
			snippet(transcript_fts, char(2), char(3), '…', 0, 24), 0.0
		FROM transcript_fts CROSS JOIN messages AS m ON m.id = transcript_fts.docid
		WHERE transcript_fts MATCH ? AND m.session = ? AND m.state <> 'live'
		ORDER BY transcript_fts.docid DESC LIMIT ?`, expr, chat, limit)
	if err != nil {
		return nil, err
	}
	return scanHits(rows)
}

// rerank orders hits by their score times their age factor, best first,
// newer first between equals; Score becomes that product.
func rerank(hits []TranscriptHit, now time.Time) {
	for i := range hits {
		age := max(now.Sub(hits[i].At), 0)
		decay := math.Exp2(-float64(age) / float64(recencyHalfLife))
		hits[i].Score *= 1 - recencyWeight + recencyWeight*decay
	}
	slices.SortStableFunc(hits, func(a, b TranscriptHit) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
}

// ReadTranscript returns a page of chat's transcript around the message id:
// up to before messages older than it, the message itself when it is part
// of the transcript, and up to after newer ones, oldest first; at most
// MaxTranscriptPage in all (what the older side leaves of it goes to the
// newer). An id that is no message of chat's session is
// ErrNotInTranscript.
func (s *Store) ReadTranscript(ctx context.Context, chat string, id int64, before, after int) ([]TranscriptMessage, error) {
	if _, err := transcriptKey(chat); err != nil {
		return nil, fmt.Errorf("read transcript: %w", err)
	}
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM messages WHERE id = ? AND session = ?`, id, chat).Scan(&n)
	if err != nil {
		return nil, fmt.Errorf("read transcript: %w", err)
	}
	if n == 0 {
		return nil, fmt.Errorf("read transcript: message %d: %w", id, ErrNotInTranscript)
	}
	before = min(max(before, 0), MaxTranscriptPage-1)
	const cols = `SELECT id, role, created_at, content FROM messages
		WHERE session = ? AND transcript_key IS NOT NULL AND `
	older, err := s.queryTranscript(ctx, cols+`id <= ? ORDER BY id DESC LIMIT ?`, chat, id, before+1)
	if err != nil {
		return nil, fmt.Errorf("read transcript: %w", err)
	}
	if len(older) > 0 && older[0].ID != id && len(older) > before {
		older = older[:before] // the anchor itself is not in the transcript
	}
	slices.Reverse(older)
	after = min(max(after, 0), MaxTranscriptPage-len(older))
	newer, err := s.queryTranscript(ctx, cols+`id > ? ORDER BY id LIMIT ?`, chat, id, after)
	if err != nil {
		return nil, fmt.Errorf("read transcript: %w", err)
	}
	return append(older, newer...), nil
}

func (s *Store) queryTranscript(ctx context.Context, query string, args ...any) ([]TranscriptMessage, error) {
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var msgs []TranscriptMessage
	for rows.Next() {
		var m TranscriptMessage
		var at int64
		if err := rows.Scan(&m.ID, &m.Role, &at, &m.Text); err != nil {
			return nil, err
		}
		m.At = fromMillis(at)
		msgs = append(msgs, m)
	}
	return msgs, rows.Err()
}

func scanHits(rows *sql.Rows) ([]TranscriptHit, error) {
	defer rows.Close()
	var hits []TranscriptHit
	for rows.Next() {
		var h TranscriptHit
		var at int64
		if err := rows.Scan(&h.ID, &h.Role, &at, &h.Snippet, &h.Score); err != nil {
			return nil, err
		}
		h.At = fromMillis(at)
		hits = append(hits, h)
	}
	return hits, rows.Err()
}

// transcriptKey is the full-text token of chat's transcript (=
// messages.transcript_key); chat must name a chat's session.
func transcriptKey(chat string) (string, error) {
	s, err := session.Parse(chat)
	if err != nil {
		return "", err
	}
	if s.Kind != session.KindChat {
		return "", fmt.Errorf("%s is not a chat", chat)
	}
	return "c" + hex.EncodeToString([]byte(chat)) + "0", nil
}

// stopWords are words too common in questions to say what they are about.
// They only leave a query that has other words.
var stopWords = map[string]bool{
	"a": true, "an": true, "and": true, "are": true, "at": true, "be": true, "did": true, "do": true,
	"does": true, "for": true, "from": true, "had": true, "has": true, "have": true, "how": true,
	"i": true, "in": true, "is": true, "it": true, "me": true, "my": true, "of": true, "on": true,
	"or": true, "s": true, "t": true, "that": true, "the": true, "this": true, "to": true, "was": true,
	"we": true, "were": true, "what": true, "when": true, "where": true, "which": true, "who": true,
	"why": true, "with": true, "you": true, "your": true,
}

// anyWords turns the phrases of searchPhrases into the terms of an any-word
// query: each word on its own ("Pedro's" is "pedro" and "s": the message
// may say "Pedro"), lowercased, once, without stop words unless nothing
// else would be left; and a phrase of several words as well, when one of
// them is no stop word ("pedro s"), so that the very form asked about
// ranks higher. Each term is quoted, so none is syntax.
func anyWords(phrases []string) []string {
	var terms, stops []string
	add := func(list *[]string, term string) {
		if q := `"` + term + `"`; !slices.Contains(*list, q) {
			*list = append(*list, q)
		}
	}
	for _, p := range phrases {
		words := strings.Fields(strings.ToLower(strings.Trim(p, `"`)))
		content := false
		for _, w := range words {
			if stopWords[w] {
				add(&stops, w)
			} else {
				add(&terms, w)
				content = true
			}
		}
		if len(words) > 1 && content {
			add(&terms, strings.Join(words, " "))
		}
	}
	if len(terms) == 0 {
		return stops
	}
	return terms
}

// The snippets mark the matched words with these; clipAround removes them.
const (
	matchStart = "\x02"
	matchEnd   = "\x03"
)

// clipAround shortens a snippet to at most n characters, keeping its first
// marked match in view, marking a cut with "…", and drops the marks.
func clipAround(snippet string, n int) string {
	snippet = strings.Join(strings.Fields(snippet), " ")
	unmark := strings.NewReplacer(matchStart, "", matchEnd, "")
	plain := []rune(unmark.Replace(snippet))
	if len(plain) <= n {
		return string(plain)
	}
	at := 0 // where the first match starts, in characters of plain
	if i := strings.Index(snippet, matchStart); i >= 0 {
		at = utf8.RuneCountInString(unmark.Replace(snippet[:i]))
	}
	start := max(0, min(at-n/3, len(plain)-n))
	end := start + n
	out := slices.Clone(plain[start:end])
	if start > 0 {
		out[0] = '…'
	}
	if end < len(plain) {
		out[len(out)-1] = '…'
	}
	return string(out)
}

func boundLimit(limit, def, most int) int {
	if limit <= 0 {
		return def
	}
	return min(limit, most)
}
