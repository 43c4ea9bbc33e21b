package memory

import (
	"testing"
	"time"
)

func TestNotices(t *testing.T) {
	ctx := t.Context()
	path := t.TempDir() + "/nanobot.db"
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	claim := func(s *Store, key string, period time.Duration) bool {
		t.Helper()
		ok, err := s.ClaimNotice(ctx, key, period)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !claim(s, "stranger:7", time.Hour) || claim(s, "stranger:7", time.Hour) {
		t.Error("a notice was not given exactly once within its period")
	}
	if !claim(s, "stranger:8", time.Hour) {
		t.Error("another key's notice was refused")
	}
	if !claim(s, "memory:a", 0) || claim(s, "memory:a", 0) {
		t.Error("a notice without a period was not given exactly once")
	}
	// A restart remembers them.
	s.Close()
	if s, err = Open(ctx, path); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if claim(s, "stranger:7", time.Hour) || claim(s, "memory:a", 0) {
		t.Error("a restart forgot a notice")
	}
	if !claim(s, "stranger:7", time.Nanosecond) {
		t.Error("a notice past its period was refused")
	}
	if err := s.ForgetNotice(ctx, "memory:a"); err != nil {
		t.Fatal(err)
	}
	if !claim(s, "memory:a", 0) {
		t.Error("a forgotten notice was refused")
	}
}
