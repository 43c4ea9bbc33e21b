package schedule

import (
	"strings"
	"testing"
	"time"
)

func mustZone(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func TestParse(t *testing.T) {
	berlin := mustZone(t, "Europe/Berlin")
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, berlin)
	tests := []struct {
		name     string
		in       Input
		wantNext time.Time
		wantErr  string
	}{
		{name: "daily cron", in: Input{CronExpr: "0 9 * * *"}, wantNext: time.Date(2026, 3, 2, 9, 0, 0, 0, berlin)},
		{name: "weekday cron in zone", in: Input{CronExpr: "30 8 * * 1-5", TZ: "America/New_York"},
			wantNext: time.Date(2026, 3, 2, 8, 30, 0, 0, mustZone(t, "America/New_York"))},
		{name: "descriptor", in: Input{CronExpr: "@daily"}, wantNext: time.Date(2026, 3, 2, 0, 0, 0, 0, berlin)},
		{name: "every", in: Input{EverySeconds: 3600}, wantNext: now.Add(time.Hour)},
		{name: "relative at", in: Input{At: "20m"}, wantNext: now.Add(20 * time.Minute)},
		{name: "relative at with hours", in: Input{At: "2h30m"}, wantNext: now.Add(150 * time.Minute)},
		{name: "relative at in days", in: Input{At: "1d"}, wantNext: now.Add(24 * time.Hour)},
		{name: "rfc3339 at", in: Input{At: "2026-03-01T12:00:00Z"}, wantNext: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)},
		{name: "local at in zone", in: Input{At: "2026-03-01 18:30", TZ: "Europe/Berlin"}, wantNext: time.Date(2026, 3, 1, 18, 30, 0, 0, berlin)},
		{name: "nothing", in: Input{}, wantErr: "give exactly one of cron_expr"},
		{name: "two at once", in: Input{CronExpr: "0 9 * * *", At: "20m"}, wantErr: "give only one of cron_expr, every_seconds or at, not cron_expr and at"},
		{name: "four fields", in: Input{CronExpr: "0 9 * *"}, wantErr: `cron_expr "0 9 * *" is not a valid 5-field cron expression`},
		{name: "hour out of range", in: Input{CronExpr: "0 25 * * *"}, wantErr: "not a valid 5-field cron expression"},
		{name: "never", in: Input{CronExpr: "0 0 30 2 *"}, wantErr: "never matches a date"},
		{name: "tz inside", in: Input{CronExpr: "CRON_TZ=UTC 0 9 * * *"}, wantErr: "give the zone in tz"},
		{name: "@every", in: Input{CronExpr: "@every 5m"}, wantErr: "use every_seconds"},
		{name: "every too short", in: Input{EverySeconds: 30}, wantErr: "every_seconds must be at least 60, not 30"},
		{name: "unknown zone", in: Input{CronExpr: "0 9 * * *", TZ: "Europe/Berln"}, wantErr: `tz "Europe/Berln" is not a known IANA time zone`},
		{name: "past", in: Input{At: "2026-02-28T09:00:00+01:00"}, wantErr: "is in the past (it is now Sun 2026-03-01 10:00 CET)"},
		{name: "not a time", in: Input{At: "tomorrow"}, wantErr: `at "tomorrow" is not a time`},
		{name: "negative", in: Input{At: "-5m"}, wantErr: "must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse(tt.in, now, berlin)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Parse(%+v) = %v, %v; want error containing %q", tt.in, s, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%+v): %v", tt.in, err)
			}
			if got := s.Next(now); !got.Equal(tt.wantNext) {
				t.Errorf("Parse(%+v).Next(now) = %v, want %v", tt.in, got, tt.wantNext)
			}
		})
	}
}

// TestDaylightSaving: a daily 09:00 job in Berlin runs at 09:00 local time
// on each day around both changes, 23 or 25 hours apart across them.
func TestDaylightSaving(t *testing.T) {
	berlin := mustZone(t, "Europe/Berlin")
	tests := []struct {
		name  string
		start time.Time
		gap   time.Duration // between the runs on either side of the change
	}{
		{name: "spring forward", start: time.Date(2026, 3, 27, 12, 0, 0, 0, berlin), gap: 23 * time.Hour},
		{name: "fall back", start: time.Date(2026, 10, 23, 12, 0, 0, 0, berlin), gap: 25 * time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse(Input{CronExpr: "0 9 * * *", TZ: "Europe/Berlin"}, tt.start, nil)
			if err != nil {
				t.Fatal(err)
			}
			var runs []time.Time
			for at := tt.start; len(runs) < 4; {
				at = s.Next(at)
				runs = append(runs, at)
			}
			for i, r := range runs {
				local := r.In(berlin)
				if local.Hour() != 9 || local.Minute() != 0 {
					t.Errorf("run %d at %s, want 09:00 local", i, local)
				}
				if want := tt.start.AddDate(0, 0, i+1).Day(); local.Day() != want {
					t.Errorf("run %d on day %d, want %d", i, local.Day(), want)
				}
			}
			if got := runs[1].Sub(runs[0]); got != tt.gap {
				t.Errorf("runs across the change %s apart, want %s (%s, %s)", got, tt.gap, runs[0], runs[1])
			}
		})
	}
}

// TestTransitionHours: a local time that does not exist runs an hour late
// that day; one that happens twice runs once.
func TestTransitionHours(t *testing.T) {
	berlin := mustZone(t, "Europe/Berlin")
	s, err := Parse(Input{CronExpr: "30 2 * * *", TZ: "Europe/Berlin"}, time.Date(2026, 3, 28, 12, 0, 0, 0, berlin), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := s.Next(time.Date(2026, 3, 28, 12, 0, 0, 0, berlin))
	if want := time.Date(2026, 3, 29, 3, 30, 0, 0, berlin); !got.Equal(want) {
		t.Errorf("spring forward: next = %s, want %s", got, want)
	}
	first := s.Next(time.Date(2026, 10, 24, 12, 0, 0, 0, berlin))
	second := s.Next(first)
	if first.In(berlin).Day() != 25 || second.In(berlin).Day() != 26 {
		t.Errorf("fall back: runs at %s and %s, want one on the 25th and one on the 26th", first.In(berlin), second.In(berlin))
	}
}

func TestEveryKeepsPhase(t *testing.T) {
	anchor := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := Spec{Kind: KindEvery, Every: 2 * time.Hour, Anchor: anchor, Zone: time.UTC}
	tests := []struct{ after, want time.Time }{
		{anchor, anchor.Add(2 * time.Hour)},
		{anchor.Add(2 * time.Hour), anchor.Add(4 * time.Hour)},
		{anchor.Add(5*time.Hour + time.Minute), anchor.Add(6 * time.Hour)},
		{anchor.Add(-time.Hour), anchor.Add(2 * time.Hour)},
	}
	for _, tt := range tests {
		if got := s.Next(tt.after); !got.Equal(tt.want) {
			t.Errorf("Next(%s) = %s, want %s", tt.after, got, tt.want)
		}
	}
}

func TestAtRunsOnce(t *testing.T) {
	at := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	s := Spec{Kind: KindAt, At: at, Zone: time.UTC}
	if got := s.Next(at.Add(-time.Second)); !got.Equal(at) {
		t.Errorf("Next before = %s, want %s", got, at)
	}
	if got := s.Next(at); !got.IsZero() {
		t.Errorf("Next at = %s, want none", got)
	}
}

func TestEncodeDecode(t *testing.T) {
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	for _, in := range []Input{{CronExpr: "15 7 * * 1", TZ: "Asia/Tokyo"}, {EverySeconds: 5400}, {At: "3h", TZ: "America/Chicago"}} {
		s, err := Parse(in, now, time.UTC)
		if err != nil {
			t.Fatal(err)
		}
		kind, text := s.Encode()
		back, err := Decode(kind, text, s.ZoneName(), now)
		if err != nil {
			t.Fatalf("Decode(%q, %q): %v", kind, text, err)
		}
		for _, after := range []time.Time{now, now.Add(50 * time.Hour)} {
			if a, b := s.Next(after), back.Next(after); !a.Equal(b) {
				t.Errorf("%+v: Next(%s) = %s before storage, %s after", in, after, a, b)
			}
		}
		if s.Describe() != back.Describe() {
			t.Errorf("Describe = %q before storage, %q after", s.Describe(), back.Describe())
		}
	}
}

func TestDescribe(t *testing.T) {
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		in   Input
		want string
	}{
		{Input{CronExpr: "0 9 * * *"}, `cron "0 9 * * *"`},
		{Input{EverySeconds: 7200}, "every 2h"},
		{Input{EverySeconds: 90}, "every 1m30s"},
		{Input{At: "2026-03-02 09:00", TZ: "Europe/Berlin"}, "once at Mon 2026-03-02 09:00 CET"},
	}
	for _, tt := range tests {
		s, err := Parse(tt.in, now, time.UTC)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Describe(); got != tt.want {
			t.Errorf("Describe(%+v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"0 9 * * *", "*/5 * * * 1-5", "@weekly", "0 0 29 2 *", "61 * * * *", "a b c d e"} {
		f.Add(s, "", "")
	}
	f.Add("", "20m", "Europe/Berlin")
	f.Add("", "2026-03-01T09:00:00+01:00", "")
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, expr, at, tz string) {
		s, err := Parse(Input{CronExpr: expr, At: at, TZ: tz}, now, time.UTC)
		if err != nil {
			return
		}
		next := s.Next(now)
		if !next.After(now) {
			t.Fatalf("Parse(%q, %q, %q) accepted a schedule whose next run %s is not after now", expr, at, tz, next)
		}
		if again := s.Next(next); !again.IsZero() && !again.After(next) {
			t.Fatalf("Next(%s) = %s, not after it", next, again)
		}
	})
}

func BenchmarkNextCron(b *testing.B) {
	s, err := Parse(Input{CronExpr: "30 8 * * 1-5", TZ: "Europe/Berlin"}, time.Now(), nil)
	if err != nil {
		b.Fatal(err)
	}
	at := time.Date(2026, 3, 27, 12, 0, 0, 0, time.UTC)
	b.ReportAllocs()
	for b.Loop() {
		at = s.Next(at)
	}
}
