package backup

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/memory"
)

// fakeClock moves forward by exactly the wait whenever the schedule waits.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	ch := make(chan time.Time, 1)
	ch <- c.now
	return ch
}

func openStore(t *testing.T) *memory.Store {
	t.Helper()
	s, err := memory.Open(t.Context(), filepath.Join(t.TempDir(), "nanobot.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

type attempt struct {
	info memory.BackupInfo
	err  error
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

func TestScheduleKeepsTheNewest(t *testing.T) {
	dir := t.TempDir()
	// Not the schedule's: never removed.
	for _, name := range []string{"notes.txt", "nanobot-manual.db", "other-20200101T000000Z.db"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := &fakeClock{now: t0}
	attempts := make(chan attempt, 10)
	s, err := New(Config{Dir: dir, Every: 24 * time.Hour, Keep: 2, Name: "nanobot", Clock: clock,
		Observe: func(info memory.BackupInfo, err error) { attempts <- attempt{info, err} }}, openStore(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if st := s.Status(); !st.LastSuccess.IsZero() {
		t.Errorf("Status before any backup = %+v", st)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	var got []attempt
	for range 3 {
		got = append(got, <-attempts)
	}
	cancel()
	<-done
	for i, a := range got {
		if a.err != nil {
			t.Fatalf("backup %d: %v", i, a.err)
		}
	}
	want := []string{"nanobot-20250103T030405Z.db", "nanobot-20250104T030405Z.db", "nanobot-manual.db", "notes.txt", "other-20200101T000000Z.db"}
	if have := names(t, dir); !slices.Equal(have, want) {
		t.Errorf("directory holds %q, want %q (the first copy at once, then daily, two kept)", have, want)
	}
	st := s.Status()
	if !st.LastSuccess.Equal(t0.Add(48*time.Hour)) || st.LastPath != filepath.Join(dir, "nanobot-20250104T030405Z.db") || st.LastBytes == 0 {
		t.Errorf("Status = %+v", st)
	}

	// A restarted gateway picks up the rhythm from the newest copy.
	clock.now = t0.Add(50 * time.Hour)
	s2, err := New(Config{Dir: dir, Every: 24 * time.Hour, Keep: 2, Name: "nanobot", Clock: clock}, openStore(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if st := s2.Status(); !st.LastSuccess.Equal(t0.Add(48 * time.Hour)) {
		t.Errorf("restarted Status = %+v, want the newest copy's time", st)
	}
	if next := s2.next(); !next.Equal(t0.Add(72 * time.Hour)) {
		t.Errorf("restarted next = %v, want %v", next, t0.Add(72*time.Hour))
	}
}

type failingSource struct{ n int }

func (f *failingSource) Backup(context.Context, string) (memory.BackupInfo, error) {
	f.n++
	return memory.BackupInfo{}, errors.New("disk full")
}

func TestScheduleRetriesAFailure(t *testing.T) {
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := &fakeClock{now: t0}
	s, err := New(Config{Dir: t.TempDir(), Every: 24 * time.Hour, Keep: 1, Name: "nanobot", Clock: clock}, &failingSource{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Once(t.Context()); err == nil {
		t.Fatal("Once succeeded with a failing source")
	}
	st := s.Status()
	if st.LastError != "disk full" || !st.LastErrorAt.Equal(t0) || !st.LastSuccess.IsZero() {
		t.Errorf("Status = %+v", st)
	}
	if next := s.next(); !next.Equal(t0.Add(time.Hour)) {
		t.Errorf("next after a failure = %v, want an hour later", next)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, cfg := range []Config{{}, {Dir: "x", Every: time.Hour, Name: "n"}, {Dir: "x", Keep: 1, Name: "n"}} {
		if _, err := New(cfg, &failingSource{}, nil); err == nil {
			t.Errorf("New(%+v) succeeded", cfg)
		}
	}
}
