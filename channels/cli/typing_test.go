package cli

import (
	"slices"
	"testing"
)

// A running turn takes what was typed before a /new, never after it; the
// rest comes out as the next messages, the /new alone.
func TestTypingHoldsNew(t *testing.T) {
	tests := []struct {
		name  string
		typed []string
		taken string   // what the running turn takes
		next  []string // the next messages, then "" for the end
	}{
		{"texts", []string{"a", "b"}, "a\nb", []string{""}},
		{"new first", []string{"/new", "a"}, "", []string{"/new", "a", ""}},
		{"new between", []string{"a", "/new please", "b", "c"}, "a", []string{"/new please", "b\nc", ""}},
		{"two news", []string{"/new", "a", "/NEW", "b"}, "", []string{"/new", "a", "/NEW", "b", ""}},
		{"a path", []string{"/etc/hosts", "b"}, "/etc/hosts\nb", []string{""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ty typing
			for _, text := range tt.typed {
				ty.add(text, false)
			}
			var taken string
			if steer := ty.take(); steer != nil {
				taken = steer[0].Message.Content
			}
			if taken != tt.taken {
				t.Errorf("typed %q: the turn took %q, want %q", tt.typed, taken, tt.taken)
			}
			var next []string
			for range len(tt.next) {
				text, _ := ty.next()
				next = append(next, text)
			}
			if !slices.Equal(next, tt.next) {
				t.Errorf("typed %q: next messages %q, want %q", tt.typed, next, tt.next)
			}
		})
	}
}
