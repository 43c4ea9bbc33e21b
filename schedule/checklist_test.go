package schedule

import (
	"strings"
	"testing"
	"time"
)

func TestParseChecklist(t *testing.T) {
	doc := `# Heartbeat

Things to look at now and then.
<!-- - [every 1h] a commented-out item -->

- [every 2h] Check the inbox for mail from the bank
- [daily 08:30] Send me the weather for today
- [mon 09:00] Remind me of the weekly report
  due at noon
- [x] Renew the passport
- [ ] Ask about the dentist
* Water the plants when it has been hot
- [evry 2h] a typo in the schedule
- [monday 07:15] Full day name
-
`
	items := ParseChecklist(doc)
	var got []string
	for _, it := range items {
		s := it.Schedule()
		if s == "" {
			s = "judge"
		}
		if it.Bracket != "" {
			s += " (bracket " + it.Bracket + ")"
		}
		got = append(got, s+": "+it.Text)
	}
	want := []string{
		"every 2h: Check the inbox for mail from the bank",
		"daily 08:30: Send me the weather for today",
		"Monday 09:00: Remind me of the weekly report due at noon",
		"judge: Ask about the dentist",
		"judge: Water the plants when it has been hot",
		"judge (bracket evry 2h): a typo in the schedule",
		"Monday 07:15: Full day name",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("ParseChecklist =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if items[0].Key == items[1].Key || items[0].Key != ParseChecklist("-   [every 2h]  Check the inbox for mail from the bank")[0].Key {
		t.Error("item keys must differ between items and ignore spacing")
	}
	for _, empty := range []string{"", "# Heartbeat\n\nNothing yet.\n", "<!--\n- [every 2h] later\n-->\n"} {
		if items := ParseChecklist(empty); len(items) != 0 {
			t.Errorf("ParseChecklist(%q) = %+v, want no items", empty, items)
		}
	}
}

func TestItemDue(t *testing.T) {
	berlin := mustZone(t, "Europe/Berlin")
	at := func(day, h, m int) time.Time { return time.Date(2026, 3, day, h, m, 0, 0, berlin) }
	every := ParseChecklist("- [every 2h] x")[0]
	daily := ParseChecklist("- [daily 08:30] x")[0]
	monday := ParseChecklist("- [mon 09:00] x")[0] // 2026-03-02 is a Monday
	tests := []struct {
		name      string
		it        Item
		last, now time.Time
		due       bool
		next      time.Time
	}{
		{"interval not yet", every, at(2, 8, 0), at(2, 9, 59), false, at(2, 10, 0)},
		{"interval due", every, at(2, 8, 0), at(2, 10, 0), true, at(2, 10, 0)},
		{"daily before its time", daily, at(1, 8, 30), at(2, 8, 29), false, at(2, 8, 30)},
		{"daily at its time", daily, at(1, 8, 30), at(2, 8, 30), true, at(3, 8, 30)},
		{"daily ran today", daily, at(2, 8, 31), at(2, 23, 0), false, at(3, 8, 30)},
		{"daily, days missed", daily, at(1, 9, 0), at(4, 7, 0), true, at(4, 8, 30)},
		{"weekly on another day", monday, at(2, 9, 5), at(5, 12, 0), false, at(9, 9, 0)},
		{"weekly on its day", monday, at(2, 9, 5), at(9, 9, 0), true, at(16, 9, 0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.it.Due(tt.last, tt.now, berlin); got != tt.due {
				t.Errorf("Due(%s, %s) = %v, want %v", tt.last, tt.now, got, tt.due)
			}
			if got := tt.it.NextSlot(tt.last, tt.now, berlin); !got.Equal(tt.next) && !(tt.due && tt.it.Every > 0) {
				t.Errorf("NextSlot(%s, %s) = %s, want %s", tt.last, tt.now, got, tt.next)
			}
		})
	}
}

func TestQuietHours(t *testing.T) {
	berlin := mustZone(t, "Europe/Berlin")
	q, err := ParseQuietHours("22:00-07:00")
	if err != nil {
		t.Fatal(err)
	}
	at := func(h, m int) time.Time { return time.Date(2026, 3, 2, h, m, 0, 0, berlin) }
	for _, tt := range []struct {
		t     time.Time
		quiet bool
		end   time.Time
	}{
		{at(21, 59), false, at(21, 59)},
		{at(22, 0), true, time.Date(2026, 3, 3, 7, 0, 0, 0, berlin)},
		{at(3, 0), true, at(7, 0)},
		{at(7, 0), false, at(7, 0)},
	} {
		if got := q.In(tt.t, berlin); got != tt.quiet {
			t.Errorf("In(%s) = %v, want %v", tt.t, got, tt.quiet)
		}
		if got := q.End(tt.t, berlin); !got.Equal(tt.end) {
			t.Errorf("End(%s) = %s, want %s", tt.t, got, tt.end)
		}
	}
	day, _ := ParseQuietHours("12:00-13:00")
	if !day.In(at(12, 30), berlin) || day.In(at(13, 0), berlin) {
		t.Error("a span within one day")
	}
	for _, bad := range []string{"22-7", "22:00-22:00", "25:00-07:00", "22:00"} {
		if _, err := ParseQuietHours(bad); err == nil {
			t.Errorf("ParseQuietHours(%q) accepted", bad)
		}
	}
}

func FuzzParseChecklist(f *testing.F) {
	f.Add("- [every 2h] a\n- [daily 08:30] b\n  more\n- [x] c\n- [mon 09:00] d\n<!-- e -->")
	f.Add("* [ ] \n1. [every 0s] x\n\t- [sun 24:00] y")
	now := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, doc string) {
		for _, it := range ParseChecklist(doc) {
			if strings.TrimSpace(it.Text) == "" {
				t.Fatalf("empty item from %q", doc)
			}
			if it.Scheduled {
				last := now.Add(-48 * time.Hour)
				if next := it.NextSlot(last, now, time.UTC); next.IsZero() {
					t.Fatalf("scheduled item %+v has no next slot", it)
				}
				_ = it.Due(last, now, time.UTC)
			}
		}
	})
}
