package session

import (
	"errors"
	"testing"
)

func TestStringAndParse(t *testing.T) {
	tests := []struct {
		s    Session
		text string
	}{
		{Chat("telegram", "123"), "telegram:123"},
		{Chat("telegram", "-1001234"), "telegram:-1001234"},
		{Chat("cli", "default"), "cli:default"},
		{Chat("cli", "a:b"), "cli:a:b"},
		{Job(5), "cron:5"},
		{Task(7), "subagent:7"},
		{Heartbeat, "heartbeat"},
	}
	for _, tt := range tests {
		if got := tt.s.String(); got != tt.text {
			t.Errorf("%#v.String() = %q, want %q", tt.s, got, tt.text)
		}
		got, err := Parse(tt.text)
		if err != nil || got != tt.s {
			t.Errorf("Parse(%q) = %#v, %v; want %#v", tt.text, got, err, tt.s)
		}
	}
}

func TestParseRejects(t *testing.T) {
	for _, text := range []string{"", "work", ":1", "telegram:", "cron:", "cron:x", "cron:05", "cron:+5", "subagent:1.5", "heartbeat:"} {
		if s, err := Parse(text); !errors.Is(err, ErrSyntax) {
			t.Errorf("Parse(%q) = %#v, %v; want ErrSyntax", text, s, err)
		}
	}
}

func TestZero(t *testing.T) {
	var s Session
	if !s.IsZero() || s.String() != "" {
		t.Errorf("zero Session: IsZero %v, String %q", s.IsZero(), s.String())
	}
	if Job(1).IsZero() {
		t.Error("Job(1).IsZero()")
	}
}

func FuzzParse(f *testing.F) {
	for _, seed := range []string{"telegram:123", "cli:default", "cron:5", "subagent:7", "heartbeat", "cron:-1", "x::", ""} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		s, err := Parse(text)
		if err != nil {
			return
		}
		if got := s.String(); got != text {
			t.Fatalf("Parse(%q).String() = %q", text, got)
		}
		again, err := Parse(s.String())
		if err != nil || again != s {
			t.Fatalf("Parse(%q) = %#v, %v; want %#v", s.String(), again, err, s)
		}
	})
}
