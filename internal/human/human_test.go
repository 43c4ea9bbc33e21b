package human

import "testing"

func TestBytes(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{{0, "0 bytes"}, {1023, "1023 bytes"}, {1024, "1.0 kB"}, {1536, "1.5 kB"}, {3 << 20, "3.0 MB"}}
	for _, tt := range tests {
		if got := Bytes(tt.n); got != tt.want {
			t.Errorf("Bytes(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

func TestShare(t *testing.T) {
	tests := []struct {
		part, whole int
		want        string
	}{
		{0, 0, "-"},
		{5, 0, "-"},
		{0, 200, "0%"},
		{896, 2100, "43%"}, // 42.67
		{4, 1000, "0%"},
		{5, 1000, "1%"}, // half rounds up
		{1024, 1024, "100%"},
	}
	for _, tt := range tests {
		if got := Share(tt.part, tt.whole); got != tt.want {
			t.Errorf("Share(%d, %d) = %q, want %q", tt.part, tt.whole, got, tt.want)
		}
	}
	if got, want := Cached(300, 1000), "300 of 1000 prompt tokens (30%)"; got != want {
		t.Errorf("Cached = %q, want %q", got, want)
	}
}
