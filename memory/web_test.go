package memory

import (
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestTakeWebLogin(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Millisecond)
	tests := []struct {
		name    string
		expires time.Time
		hash    string // taken; "" is the stored one
		at      time.Time
		want    bool
	}{
		{name: "valid", expires: now.Add(10 * time.Minute), at: now, want: true},
		{name: "expired", expires: now.Add(10 * time.Minute), at: now.Add(10 * time.Minute)},
		{name: "unknown", expires: now.Add(10 * time.Minute), hash: "ffff", at: now},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			s := newStore(t)
			if err := s.AddWebLogin(ctx, "abcd", tt.expires); err != nil {
				t.Fatal(err)
			}
			hash := tt.hash
			if hash == "" {
				hash = "abcd"
			}
			if ok, err := s.TakeWebLogin(ctx, hash, tt.at); err != nil || ok != tt.want {
				t.Errorf("TakeWebLogin(%q) = %v, %v; want %v", hash, ok, err, tt.want)
			}
			// Whatever came of it, a token is good once at most.
			if ok, err := s.TakeWebLogin(ctx, hash, tt.at); err != nil || ok {
				t.Errorf("TakeWebLogin(%q) again = %v, %v; want false", hash, ok, err)
			}
		})
	}
}

func TestAddWebLoginDropsExpired(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	now := time.Now()
	if err := s.AddWebLogin(ctx, "old", now.Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := s.AddWebLogin(ctx, "new", now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM web_logins`).Scan(&n); err != nil || n != 1 {
		t.Errorf("%d logins kept (%v), want only the unexpired one", n, err)
	}
}

func TestTakeWebLoginOnceUnderRace(t *testing.T) {
	ctx := t.Context()
	path := dbPath(t)
	a, b := openAt(t, path, options{}), openAt(t, path, options{})
	if err := a.AddWebLogin(ctx, "abcd", time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	results := make(chan bool, 16)
	for i := range 16 {
		s := a
		if i%2 == 1 {
			s = b // another process's store
		}
		wg.Go(func() {
			ok, err := s.TakeWebLogin(ctx, "abcd", time.Now())
			if err != nil {
				t.Errorf("TakeWebLogin: %v", err)
			}
			results <- ok
		})
	}
	wg.Wait()
	close(results)
	won := 0
	for ok := range results {
		if ok {
			won++
		}
	}
	if won != 1 {
		t.Errorf("%d of 16 racing callers got the token, want 1", won)
	}
}

func TestWebSessions(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	// Ahead of the clock, so adding a session (which drops the expired
	// ones by the clock) keeps them all.
	t0 := time.Now().UTC().Truncate(time.Millisecond).Add(time.Hour)
	far := t0.Add(30 * 24 * time.Hour)
	sessions := []struct {
		ws   WebSession
		hash string
	}{
		{WebSession{ID: "s1", Agent: "Firefox", Created: t0, Expires: far}, "h1"},
		{WebSession{ID: "s2", Agent: "Safari", Created: t0.Add(time.Hour), Expires: far}, "h2"},
		{WebSession{ID: "s3", Agent: "old", Created: t0.Add(2 * time.Hour), Expires: t0.Add(3 * time.Hour)}, "h3"},
	}
	for _, e := range sessions {
		if err := s.AddWebSession(ctx, e.ws, e.hash); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AddWebSession(ctx, WebSession{ID: "s1", Expires: far}, "h4"); err == nil {
		t.Error("AddWebSession with a taken id succeeded")
	}
	now := t0.Add(150 * time.Minute) // s3 is still valid
	tests := []struct {
		name string
		hash string
		at   time.Time
		want WebSession
		ok   bool
	}{
		{"found", "h1", now, WebSession{ID: "s1", Agent: "Firefox", Created: t0, LastSeen: now, Expires: far}, true},
		{"unknown hash", "h9", now, WebSession{}, false},
		{"expired", "h3", t0.Add(3 * time.Hour), WebSession{}, false},
		{"last seen kept within a minute", "h1", now.Add(59 * time.Second),
			WebSession{ID: "s1", Agent: "Firefox", Created: t0, LastSeen: now, Expires: far}, true},
		{"last seen moves after a minute", "h1", now.Add(time.Minute),
			WebSession{ID: "s1", Agent: "Firefox", Created: t0, LastSeen: now.Add(time.Minute), Expires: far}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, err := s.WebSessionByHash(ctx, tt.hash, tt.at)
			if err != nil || ok != tt.ok {
				t.Fatalf("WebSessionByHash(%q) = %v, %v; want %v", tt.hash, ok, err, tt.ok)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("WebSessionByHash(%q) (-want +got):\n%s", tt.hash, diff)
			}
		})
	}

	list, err := s.WebSessions(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	if got := webSessionIDs(list); !cmp.Equal(got, []string{"s3", "s2", "s1"}) {
		t.Errorf("WebSessions = %v, want newest first", got)
	}
	if list, _ := s.WebSessions(ctx, t0.Add(3*time.Hour)); !cmp.Equal(webSessionIDs(list), []string{"s2", "s1"}) {
		t.Errorf("WebSessions after s3 expired = %v", webSessionIDs(list))
	}

	for _, tt := range []struct {
		id   string
		want bool
	}{{"s2", true}, {"s2", false}, {"nope", false}} {
		if ok, err := s.RevokeWebSession(ctx, tt.id); err != nil || ok != tt.want {
			t.Errorf("RevokeWebSession(%q) = %v, %v; want %v", tt.id, ok, err, tt.want)
		}
	}
	if _, ok, _ := s.WebSessionByHash(ctx, "h2", now); ok {
		t.Error("a revoked session is still found")
	}
}

func webSessionIDs(list []WebSession) []string {
	var ids []string
	for _, ws := range list {
		ids = append(ids, ws.ID)
	}
	return ids
}
