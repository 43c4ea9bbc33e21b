package memory

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nanobot-go/nanobot/agent"
)

func revisionDocs(revs []MemoryRevision) []string {
	var out []string
	for _, r := range revs {
		out = append(out, r.Doc)
	}
	return out
}

// Every write of a MEMORY document, whichever method makes it, is a
// revision; a write of the same text is not.
func TestMemoryRevisionsRecordEveryWrite(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	scope := ChatScope("telegram:1")
	if err := s.Append(ctx, "telegram:1", agent.Message{Role: agent.RoleUser, Content: "hi"}); err != nil {
		t.Fatal(err)
	}
	consolidated := "from consolidation"
	writes := []struct {
		name  string
		write func() error
	}{
		{"set", func() error { return s.SetMemory(ctx, scope, "first") }},
		{"set the same text", func() error { return s.SetMemory(ctx, scope, "first") }},
		{"consolidate", func() error {
			return s.Consolidate(ctx, agent.Consolidation{Session: "telegram:1", Scope: scope, UpToID: 1, Memory: &consolidated})
		}},
		{"edit", func() error { return s.EditMemory(ctx, scope, consolidated, "edited") }},
		{"other scope", func() error { return s.SetMemory(ctx, GlobalScope, "global") }},
	}
	for _, w := range writes {
		if err := w.write(); err != nil {
			t.Fatalf("%s: %v", w.name, err)
		}
	}
	tests := []struct {
		scope string
		limit int
		want  []string
	}{
		{scope, 0, []string{"edited", "from consolidation", "first"}},
		{scope, 2, []string{"edited", "from consolidation"}},
		{GlobalScope, 0, []string{"global"}},
		{ChatScope("telegram:2"), 0, nil},
	}
	for _, tt := range tests {
		revs, err := s.MemoryRevisions(ctx, tt.scope, tt.limit)
		if err != nil {
			t.Fatal(err)
		}
		if got := revisionDocs(revs); !cmp.Equal(got, tt.want) {
			t.Errorf("MemoryRevisions(%q, %d) = %q, want %q", tt.scope, tt.limit, got, tt.want)
		}
		for i, r := range revs {
			if r.At.IsZero() || time.Since(r.At) > time.Minute || (i > 0 && r.ID >= revs[i-1].ID) {
				t.Errorf("revision %+v: want a recent time and ids newest first", r)
			}
		}
	}
}

func TestMemoryRevisionsKeepTheNewest50(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	for i := range 60 {
		if err := s.SetMemory(ctx, GlobalScope, fmt.Sprint("doc ", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetMemory(ctx, ChatScope("telegram:1"), "other"); err != nil {
		t.Fatal(err)
	}
	revs, err := s.MemoryRevisions(ctx, GlobalScope, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(revs) != 50 || revs[0].Doc != "doc 59" || revs[49].Doc != "doc 10" {
		t.Errorf("kept %d revisions, %q … %q; want 50, doc 59 … doc 10", len(revs), revs[0].Doc, revs[len(revs)-1].Doc)
	}
	if revs, _ := s.MemoryRevisions(ctx, ChatScope("telegram:1"), 0); len(revs) != 1 {
		t.Errorf("the other scope kept %d revisions, want 1", len(revs))
	}
}

// A database from before revisions has its current documents as their
// first revisions.
func TestMemoryRevisionsSeededByMigration(t *testing.T) {
	ctx := t.Context()
	ms, err := loadMigrations(migrationData{FTS5: libraryFTS5(t)})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(ms, func(m migration) bool { return strings.HasSuffix(m.name, "_web.sql") })
	if i < 0 {
		t.Fatal("no migration adds memory revisions")
	}
	path := dbPath(t)
	raw := rawDB(t, path)
	for _, m := range ms[:i] {
		if _, err := raw.Exec(m.sql); err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
	}
	if _, err := raw.Exec(fmt.Sprintf(`PRAGMA user_version = %d;
		INSERT INTO memory (scope, doc, updated_at) VALUES ('global', 'owner: Ana', 1000), ('chat:telegram:1', 'likes tea', 2000)`,
		ms[i-1].version)); err != nil {
		t.Fatal(err)
	}
	raw.Close()

	s := openAt(t, path, options{})
	for scope, want := range map[string]MemoryRevision{
		GlobalScope:                {At: fromMillis(1000), Doc: "owner: Ana"},
		ChatScope("telegram:1"):    {At: fromMillis(2000), Doc: "likes tea"},
		ChatScope("telegram:none"): {},
	} {
		revs, err := s.MemoryRevisions(ctx, scope, 0)
		if err != nil {
			t.Fatal(err)
		}
		if want.Doc == "" {
			if len(revs) != 0 {
				t.Errorf("MemoryRevisions(%q) = %+v, want none", scope, revs)
			}
			continue
		}
		if len(revs) != 1 || revs[0].Doc != want.Doc || !revs[0].At.Equal(want.At) {
			t.Errorf("MemoryRevisions(%q) = %+v, want one: %+v", scope, revs, want)
		}
	}
}

func TestEditMemory(t *testing.T) {
	tests := []struct {
		name      string
		current   *string // nil: no document yet
		base, doc string
		want      string
		changed   bool
	}{
		{name: "first document", base: "", doc: "new", want: "new"},
		{name: "from the current text", current: ptr("old"), base: "old", doc: "new", want: "new"},
		{name: "to empty", current: ptr("old"), base: "old", doc: "", want: ""},
		{name: "changed meanwhile", current: ptr("consolidated"), base: "old", doc: "new", want: "consolidated", changed: true},
		{name: "created meanwhile", current: ptr("someone's"), base: "", doc: "new", want: "someone's", changed: true},
		{name: "base of a missing document", base: "old", doc: "new", want: "", changed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			s := newStore(t)
			if tt.current != nil {
				if err := s.SetMemory(ctx, GlobalScope, *tt.current); err != nil {
					t.Fatal(err)
				}
			}
			err := s.EditMemory(ctx, GlobalScope, tt.base, tt.doc)
			if tt.changed != errors.Is(err, ErrMemoryChanged) || (!tt.changed && err != nil) {
				t.Errorf("EditMemory(%q, %q) = %v, want ErrMemoryChanged: %v", tt.base, tt.doc, err, tt.changed)
			}
			if doc, _ := s.Memory(ctx, GlobalScope); doc != tt.want {
				t.Errorf("after EditMemory: %q, want %q", doc, tt.want)
			}
		})
	}
}

func TestMemoryScopes(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	if got, err := s.MemoryScopes(ctx); err != nil || len(got) != 0 {
		t.Errorf("MemoryScopes of an empty store = %+v, %v", got, err)
	}
	for _, w := range [][2]string{
		{ChatScope("telegram:2"), "two"}, {GlobalScope, "all"}, {ChatScope("api:x"), "api"}, {ChatScope("telegram:1"), "one"},
	} {
		if err := s.SetMemory(ctx, w[0], w[1]); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.MemoryScopes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var scopes []string
	for _, d := range got {
		scopes = append(scopes, d.Scope+"="+d.Doc)
		if d.Updated.IsZero() {
			t.Errorf("%s has no update time", d.Scope)
		}
	}
	want := []string{"global=all", "chat:api:x=api", "chat:telegram:1=one", "chat:telegram:2=two"}
	if !cmp.Equal(scopes, want) {
		t.Errorf("MemoryScopes = %q, want %q", scopes, want)
	}
}

func ptr[T any](v T) *T { return &v }

// Of edits racing from one base, one wins; the others see the change.
func TestEditMemoryRace(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	if err := s.SetMemory(ctx, GlobalScope, "base"); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() { errs <- s.EditMemory(ctx, GlobalScope, "base", fmt.Sprint("edit ", i)) })
	}
	wg.Wait()
	close(errs)
	won := 0
	for err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, ErrMemoryChanged):
			t.Errorf("EditMemory: %v", err)
		}
	}
	if revs, _ := s.MemoryRevisions(ctx, GlobalScope, 0); won != 1 || len(revs) != 2 {
		t.Errorf("%d edits won, %d revisions; want 1 and 2", won, len(revs))
	}
}
