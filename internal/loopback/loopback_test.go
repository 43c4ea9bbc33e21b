package loopback

import "testing"

func TestOnlyAndDialable(t *testing.T) {
	for _, tc := range []struct {
		addr, dial string
		only       bool
	}{
		{"127.0.0.1:80", "127.0.0.1:80", true},
		{"127.1.2.3:80", "127.1.2.3:80", true},
		{"[::1]:80", "[::1]:80", true},
		{"localhost:80", "localhost:80", true},
		{"LOCALHOST:80", "LOCALHOST:80", true},
		{"0.0.0.0:80", "127.0.0.1:80", false},
		{":80", "127.0.0.1:80", false},
		{"[::]:80", "[::1]:80", false},
		{"192.168.1.5:80", "192.168.1.5:80", false},
		{"nanobot.example.com:80", "nanobot.example.com:80", false},
		{"localhost.evil.com:80", "localhost.evil.com:80", false},
		{"no port", "no port", false},
	} {
		if got := Only(tc.addr); got != tc.only {
			t.Errorf("Only(%q) = %v", tc.addr, got)
		}
		if got := Dialable(tc.addr); got != tc.dial {
			t.Errorf("Dialable(%q) = %q, want %q", tc.addr, got, tc.dial)
		}
	}
}
