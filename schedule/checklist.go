package schedule

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Item is one entry of a heartbeat checklist: a Markdown list item, with
// an optional schedule in brackets at its start ("- [every 2h] check the
// mail", "- [daily 08:30] ...", "- [mon 09:00] ..."). An item without one
// needs the model's judgement.
type Item struct {
	Text string // the item without its bullet and schedule
	// Every, or Weekday and Clock, give a scheduled item's times.
	Scheduled bool
	Every     time.Duration
	Daily     bool
	Weekday   time.Weekday
	At        TimeOfDay // daily and weekly: the local time of day
	// Bracket is what the brackets held when they are not a schedule; the
	// item then needs judgement like an unscheduled one.
	Bracket string
	// Key identifies the item across edits of other lines: its line as
	// written, hashed.
	Key string
}

// TimeOfDay is a local time of day.
type TimeOfDay struct{ Hour, Minute int }

func (c TimeOfDay) String() string { return fmt.Sprintf("%02d:%02d", c.Hour, c.Minute) }

// ParseTimeOfDay reads "HH:MM".
func ParseTimeOfDay(s string) (TimeOfDay, error) {
	h, m, ok := strings.Cut(strings.TrimSpace(s), ":")
	hh, err1 := strconv.Atoi(h)
	mm, err2 := strconv.Atoi(m)
	if !ok || err1 != nil || err2 != nil || len(m) != 2 || hh < 0 || hh > 23 || mm < 0 || mm > 59 {
		return TimeOfDay{}, fmt.Errorf("%q is not a time of day such as 08:30", s)
	}
	return TimeOfDay{hh, mm}, nil
}

var (
	bullet   = regexp.MustCompile(`^\s*(?:[-*+]|\d+[.)])\s+`)
	bracket  = regexp.MustCompile(`^\[([^\]]*)\]\s*`)
	comments = regexp.MustCompile(`(?s)<!--.*?-->`)
	weekdays = map[string]time.Weekday{
		"sun": time.Sunday, "mon": time.Monday, "tue": time.Tuesday, "wed": time.Wednesday,
		"thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday,
	}
)

// ParseChecklist reads the items of a checklist document. Headings, prose,
// HTML comments, done checkboxes ("- [x] ...") and empty items are left out;
// an indented line continues the item above it.
func ParseChecklist(doc string) []Item {
	doc = comments.ReplaceAllString(doc, "")
	var items []Item
	inItem, kept := false, false // the last line belongs to a list item; that item is kept
	for line := range strings.Lines(doc) {
		line = strings.TrimRight(line, " \t\r\n")
		if strings.TrimSpace(line) == "" {
			continue
		}
		if inItem && (line[0] == ' ' || line[0] == '\t') {
			if kept {
				items[len(items)-1].Text += " " + strings.TrimSpace(bullet.ReplaceAllString(line, ""))
			}
			continue
		}
		loc := bullet.FindStringIndex(line)
		if loc == nil {
			inItem = false // a heading or prose
			continue
		}
		it, ok := parseItem(line[loc[1]:])
		inItem, kept = true, ok
		if ok {
			it.Key = itemKey(line)
			items = append(items, it)
		}
	}
	return items
}

func parseItem(s string) (Item, bool) {
	var it Item
	if m := bracket.FindStringSubmatch(s); m != nil {
		inner := strings.TrimSpace(strings.ToLower(m[1]))
		s = s[len(m[0]):]
		switch inner {
		case "":
			// An open checkbox: an item like any other.
		case "x":
			return Item{}, false // done
		default:
			if !it.schedule(inner) {
				it.Bracket = m[1]
			}
		}
	}
	it.Text = strings.TrimSpace(s)
	return it, it.Text != ""
}

// schedule reads "every 2h", "daily 08:30" or "mon 09:00" into it.
func (it *Item) schedule(s string) bool {
	word, rest, _ := strings.Cut(s, " ")
	rest = strings.TrimSpace(rest)
	switch {
	case word == "every":
		d, err := parseDuration(strings.ReplaceAll(rest, " ", ""))
		if err != nil || d < time.Minute {
			return false
		}
		it.Scheduled, it.Every = true, d
		return true
	case word == "daily":
		c, err := ParseTimeOfDay(rest)
		if err != nil {
			return false
		}
		it.Scheduled, it.Daily, it.At = true, true, c
		return true
	}
	if len(word) < 3 {
		return false
	}
	day, ok := weekdays[word[:3]]
	if !ok || !strings.HasPrefix(strings.ToLower(day.String()), word) {
		return false
	}
	c, err := ParseTimeOfDay(rest)
	if err != nil {
		return false
	}
	it.Scheduled, it.Weekday, it.At = true, day, c
	return true
}

func itemKey(line string) string {
	sum := sha256.Sum256([]byte(strings.Join(strings.Fields(line), " ")))
	return hex.EncodeToString(sum[:8])
}

// Schedule describes a scheduled item's times ("every 2h", "daily 08:30",
// "Monday 09:00"; "" for an unscheduled one).
func (it Item) Schedule() string {
	switch {
	case !it.Scheduled:
		return ""
	case it.Every > 0:
		return "every " + shortDuration(it.Every)
	case it.Daily:
		return "daily " + it.At.String()
	}
	return it.Weekday.String() + " " + it.At.String()
}

// Slot returns the latest time at or before now when a scheduled item was
// to run, given its last run (or, never run, when it was first seen): it is
// due when that slot is after last. For an interval that is last plus the
// interval; for a daily or weekly item, the latest matching local time.
func (it Item) Slot(last, now time.Time, zone *time.Location) time.Time {
	switch {
	case !it.Scheduled:
		return time.Time{}
	case it.Every > 0:
		return last.Add(it.Every)
	}
	local := now.In(zone)
	t := time.Date(local.Year(), local.Month(), local.Day(), it.At.Hour, it.At.Minute, 0, 0, zone)
	for step := 0; t.After(now) || (!it.Daily && t.Weekday() != it.Weekday); step++ {
		if step > 8 {
			return time.Time{}
		}
		d := t.AddDate(0, 0, -1)
		t = time.Date(d.Year(), d.Month(), d.Day(), it.At.Hour, it.At.Minute, 0, 0, zone)
	}
	return t
}

// Due reports whether a scheduled item's slot has come since last.
func (it Item) Due(last, now time.Time, zone *time.Location) bool {
	slot := it.Slot(last, now, zone)
	return !slot.IsZero() && slot.After(last) && !slot.After(now)
}

// NextSlot is the first time after now when a scheduled item becomes due,
// given its last run.
func (it Item) NextSlot(last, now time.Time, zone *time.Location) time.Time {
	switch {
	case !it.Scheduled:
		return time.Time{}
	case it.Every > 0:
		if next := last.Add(it.Every); next.After(now) {
			return next
		}
		return now
	}
	local := now.In(zone)
	for day := range 8 {
		d := time.Date(local.Year(), local.Month(), local.Day()+day, it.At.Hour, it.At.Minute, 0, 0, zone)
		if d.After(now) && (it.Daily || d.Weekday() == it.Weekday) {
			return d
		}
	}
	return time.Time{}
}

// QuietHours is a daily span of local time ("22:00-07:00") in which results
// wait. The zero value is never quiet.
type QuietHours struct {
	From, To TimeOfDay
	set      bool
}

// ParseQuietHours reads "HH:MM-HH:MM"; empty is none.
func ParseQuietHours(s string) (QuietHours, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return QuietHours{}, nil
	}
	a, b, ok := strings.Cut(s, "-")
	from, err1 := ParseTimeOfDay(a)
	to, err2 := ParseTimeOfDay(b)
	if !ok || err1 != nil || err2 != nil || from == to {
		return QuietHours{}, fmt.Errorf("quiet hours %q: use two different times as HH:MM-HH:MM, e.g. 22:00-07:00", s)
	}
	return QuietHours{From: from, To: to, set: true}, nil
}

// IsSet reports whether there are quiet hours.
func (q QuietHours) IsSet() bool { return q.set }

func (q QuietHours) String() string {
	if !q.set {
		return ""
	}
	return q.From.String() + "-" + q.To.String()
}

// In reports whether t falls in the quiet hours, read in zone.
func (q QuietHours) In(t time.Time, zone *time.Location) bool {
	if !q.set {
		return false
	}
	l := t.In(zone)
	m := l.Hour()*60 + l.Minute()
	from, to := q.From.Hour*60+q.From.Minute, q.To.Hour*60+q.To.Minute
	if from < to {
		return m >= from && m < to
	}
	return m >= from || m < to
}

// End returns when the quiet hours that t is in end (t itself when it is
// not in them).
func (q QuietHours) End(t time.Time, zone *time.Location) time.Time {
	if !q.In(t, zone) {
		return t
	}
	l := t.In(zone)
	end := time.Date(l.Year(), l.Month(), l.Day(), q.To.Hour, q.To.Minute, 0, 0, zone)
	if !end.After(t) {
		end = time.Date(l.Year(), l.Month(), l.Day()+1, q.To.Hour, q.To.Minute, 0, 0, zone)
	}
	return end
}
