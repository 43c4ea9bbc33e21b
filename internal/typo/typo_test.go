package typo

import "testing"

func TestDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"agent", "agent", 0},
		{"agnet", "agent", 1}, // a swap
		{"gateway", "gatway", 1},
		{"bakup", "backup", 1},
		{"kitten", "sitting", 3},
		{"ca", "abc", 3}, // optimal string alignment: no edit of a swapped pair
		{"", "cron", 4},
		{"max_iteration", "max_iterations", 1},
		{"stauts", "status", 1},
		{"backpu", "backup", 1},
		{"fly", "help", 3},
	} {
		if got := Distance(tt.a, tt.b); got != tt.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := Distance(tt.b, tt.a); got != tt.want {
			t.Errorf("Distance(%q, %q) = %d, want %d (symmetric)", tt.b, tt.a, got, tt.want)
		}
	}
	long := string(make([]byte, 1000))
	if got := Distance(long, "agent"); got != 1000 {
		t.Errorf("Distance(1000 bytes, agent) = %d, want 1000 without the work", got)
	}
}

func FuzzDistance(f *testing.F) {
	f.Add("agnet", "agent")
	f.Fuzz(func(t *testing.T, a, b string) {
		d := Distance(a, b)
		if d < 0 || d > max(len(a), len(b)) || (d == 0) != (a == b) && len(a) <= maxLen && len(b) <= maxLen {
			t.Fatalf("Distance(%q, %q) = %d", a, b, d)
		}
	})
}
