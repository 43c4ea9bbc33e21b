package human

import (
	"testing"
	"time"
)

func TestArgs(t *testing.T) {
	tests := []struct {
		name, args string
		limit      int
		want       string
	}{
		{"url without scheme", `{"url":"https://example.com/page","max_bytes":100}`, 40, "example.com/page"},
		{"command before others", `{"timeout":5,"working_dir":"/tmp","command":"ls  -la\n| head"}`, 40, "ls -la | head"},
		{"first text value", `{"zeta":"b","alpha":"a"}`, 40, "b"},
		{"no text value", `{"days": 3, "all": true}`, 40, `{"days":3,"all":true}`},
		{"empty object", `{}`, 40, ""},
		{"not JSON", "plain words", 40, "plain words"},
		{"cut", `{"path":"a/very/long/path/to/some/file.txt"}`, 10, "a/very/lo…"},
		{"markup kept for the caller to escape", `{"query":"<script>alert(1)</script>"}`, 40, "<script>alert(1)</script>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Args(tt.args, tt.limit); got != tt.want {
				t.Errorf("Args(%q, %d) = %q, want %q", tt.args, tt.limit, got, tt.want)
			}
		})
	}
}

func TestCut(t *testing.T) {
	tests := []struct {
		s     string
		limit int
		want  string
	}{{"short", 10, "short"}, {"exactly10!", 10, "exactly10!"}, {"héllo wörld", 6, "héllo…"}, {"ab cd", 4, "ab…"}, {"x", 0, "x"}}
	for _, tt := range tests {
		if got := Cut(tt.s, tt.limit); got != tt.want {
			t.Errorf("Cut(%q, %d) = %q, want %q", tt.s, tt.limit, got, tt.want)
		}
	}
}

func TestClockAndDuration(t *testing.T) {
	clocks := []struct {
		d    time.Duration
		want string
	}{{0, "0:00"}, {42 * time.Second, "0:42"}, {12*time.Minute + 5*time.Second, "12:05"}, {time.Hour + 2*time.Minute + 3*time.Second, "1:02:03"}}
	for _, tt := range clocks {
		if got := Clock(tt.d); got != tt.want {
			t.Errorf("Clock(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
	durations := []struct {
		d    time.Duration
		want string
	}{{300 * time.Millisecond, "0.3s"}, {12 * time.Second, "12s"}, {125 * time.Second, "2m05s"}}
	for _, tt := range durations {
		if got := Duration(tt.d); got != tt.want {
			t.Errorf("Duration(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}
