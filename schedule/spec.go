package schedule

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Kind is how a job's times are given.
type Kind string

// The kinds of schedule.
const (
	KindCron  Kind = "cron"  // a 5-field cron expression in a time zone
	KindEvery Kind = "every" // a fixed interval from the time the job was made
	KindAt    Kind = "at"    // once
)

// MinEvery is the shortest interval a repeating job may have.
const MinEvery = time.Minute

// Spec is when a job runs. The zero Spec never runs.
type Spec struct {
	Kind Kind
	// Expr is the cron expression as written (KindCron).
	Expr string
	// Every is the interval (KindEvery); runs fall on Anchor + n*Every.
	Every  time.Duration
	Anchor time.Time
	// At is the one run of a KindAt job.
	At time.Time
	// Zone is the zone cron fields and shown times are read in.
	Zone *time.Location

	cron *cron.SpecSchedule
}

// Input is a schedule as a person or a model writes it: exactly one of
// CronExpr, EverySeconds or At, and optionally a zone.
type Input struct {
	CronExpr     string
	EverySeconds int
	// At is an RFC 3339 time ("2026-03-01T09:00:00+01:00"), a local time in
	// the zone ("2026-03-01 09:00"), or a duration from now ("20m", "2h30m",
	// "1d").
	At string
	// TZ is an IANA zone name; empty means the default zone.
	TZ string
}

// cronParser reads the classic five fields and the @daily style names.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Parse checks in and returns its Spec. now anchors intervals and relative
// times; def is the zone when in.TZ is empty. Errors are sentences that tell
// the writer what to change.
func Parse(in Input, now time.Time, def *time.Location) (Spec, error) {
	zone, err := Zone(in.TZ, def)
	if err != nil {
		return Spec{}, err
	}
	in.CronExpr, in.At = strings.TrimSpace(in.CronExpr), strings.TrimSpace(in.At)
	var given []string
	if in.CronExpr != "" {
		given = append(given, "cron_expr")
	}
	if in.EverySeconds != 0 {
		given = append(given, "every_seconds")
	}
	if in.At != "" {
		given = append(given, "at")
	}
	switch len(given) {
	case 0:
		return Spec{}, errors.New("give exactly one of cron_expr (e.g. \"0 9 * * *\"), every_seconds (at least 60) or at (e.g. \"20m\" or \"2026-03-01T09:00:00+01:00\")")
	case 1:
	default:
		return Spec{}, fmt.Errorf("give only one of cron_expr, every_seconds or at, not %s", strings.Join(given, " and "))
	}
	var s Spec
	switch {
	case in.CronExpr != "":
		s, err = parseCron(in.CronExpr, zone)
	case in.EverySeconds != 0:
		if in.EverySeconds < int(MinEvery/time.Second) {
			return Spec{}, fmt.Errorf("every_seconds must be at least %d, not %d", int(MinEvery/time.Second), in.EverySeconds)
		}
		s = Spec{Kind: KindEvery, Every: time.Duration(in.EverySeconds) * time.Second, Anchor: now.Truncate(time.Second), Zone: zone}
	default:
		var at time.Time
		at, err = parseAt(in.At, now, zone)
		if err == nil && !at.After(now) {
			err = fmt.Errorf("at %s is in the past (it is now %s); give a future time or a duration such as 20m",
				at.In(zone).Format(ShowFormat), now.In(zone).Format(ShowFormat))
		}
		s = Spec{Kind: KindAt, At: at, Zone: zone}
	}
	if err != nil {
		return Spec{}, err
	}
	if s.Next(now).IsZero() {
		return Spec{}, fmt.Errorf("cron_expr %q never matches a date in the next five years", in.CronExpr)
	}
	return s, nil
}

// ShowFormat is how times are shown to people and the model.
const ShowFormat = "Mon 2006-01-02 15:04 MST"

// Zone resolves an IANA zone name; empty is def (the host's zone when def
// is nil).
func Zone(name string, def *time.Location) (*time.Location, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		if def == nil {
			return time.Local, nil
		}
		return def, nil
	}
	if strings.EqualFold(name, "local") {
		return nil, fmt.Errorf("tz %q is not an IANA time zone name; use one such as Europe/Berlin, America/New_York or UTC", name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("tz %q is not a known IANA time zone; use one such as Europe/Berlin, America/New_York or UTC", name)
	}
	return loc, nil
}

func parseCron(expr string, zone *time.Location) (Spec, error) {
	switch {
	case strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ="):
		return Spec{}, fmt.Errorf("cron_expr %q: give the zone in tz, not inside the expression", expr)
	case strings.HasPrefix(expr, "@every"):
		return Spec{}, fmt.Errorf("cron_expr %q: for a fixed interval use every_seconds instead", expr)
	}
	sched, err := cronParser.Parse(expr)
	if err != nil {
		return Spec{}, fmt.Errorf("cron_expr %q is not a valid 5-field cron expression (minute hour day-of-month month day-of-week, e.g. \"30 8 * * 1-5\"): %v", expr, err)
	}
	spec, ok := sched.(*cron.SpecSchedule)
	if !ok {
		return Spec{}, fmt.Errorf("cron_expr %q: use five fields, e.g. \"0 9 * * *\"", expr)
	}
	return Spec{Kind: KindCron, Expr: expr, Zone: zone, cron: spec}, nil
}

var localLayouts = []string{"2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02 15:04"}

func parseAt(s string, now time.Time, zone *time.Location) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	for _, layout := range localLayouts {
		if t, err := time.ParseInLocation(layout, s, zone); err == nil {
			return t, nil
		}
	}
	if d, err := parseDuration(strings.TrimPrefix(s, "+")); err == nil {
		if d <= 0 {
			return time.Time{}, fmt.Errorf("at %q: a duration from now must be positive", s)
		}
		return now.Add(d).Truncate(time.Second), nil
	}
	return time.Time{}, fmt.Errorf("at %q is not a time: use RFC 3339 such as 2026-03-01T09:00:00+01:00, a local time such as 2026-03-01 09:00, or a duration from now such as 20m or 2h30m", s)
}

// parseDuration is time.ParseDuration that also takes whole days ("1d",
// "2d12h").
func parseDuration(s string) (time.Duration, error) {
	days, rest, ok := strings.Cut(s, "d")
	if !ok {
		return time.ParseDuration(s)
	}
	n, err := strconv.Atoi(days)
	if err != nil || n < 0 || n > 3650 {
		return 0, errors.New("bad day count")
	}
	d := time.Duration(n) * 24 * time.Hour
	if rest == "" {
		return d, nil
	}
	r, err := time.ParseDuration(rest)
	if err != nil {
		return 0, err
	}
	return d + r, nil
}

// Next returns the first run strictly after after, or the zero time when
// there is none (a one-shot job that has run).
func (s Spec) Next(after time.Time) time.Time {
	switch s.Kind {
	case KindAt:
		if s.At.After(after) {
			return s.At
		}
		return time.Time{}
	case KindEvery:
		if s.Every <= 0 {
			return time.Time{}
		}
		if after.Before(s.Anchor) {
			return s.Anchor.Add(s.Every)
		}
		n := after.Sub(s.Anchor)/s.Every + 1
		return s.Anchor.Add(n * s.Every)
	case KindCron:
		if s.cron == nil {
			return time.Time{}
		}
		return nextWallClock(s.cron, s.zone(), after)
	}
	return time.Time{}
}

func (s Spec) zone() *time.Location {
	if s.Zone == nil {
		return time.Local
	}
	return s.Zone
}

// starBit marks a cron field written as "*" (robfig/cron's convention).
const starBit = 1 << 63

// nextWallClock walks the calendar in the zone: each matching local date,
// hour and minute is one run, so a daily job runs once a day at its local
// time on both sides of a daylight-saving change. A local time skipped when
// clocks go forward runs at the same instant plus the jump (02:30 becomes
// 03:30); a local time that happens twice when clocks go back runs once.
func nextWallClock(c *cron.SpecSchedule, zone *time.Location, after time.Time) time.Time {
	local := after.In(zone)
	// Noon is never inside a transition, so stepping it by whole days
	// keeps the calendar date right.
	day := time.Date(local.Year(), local.Month(), local.Day(), 12, 0, 0, 0, zone)
	for range 5*366 + 1 {
		y, m, d := day.Date()
		if c.Month&(1<<uint(m)) != 0 && dayMatches(c, d, day.Weekday()) {
			for h := range 24 {
				if c.Hour&(1<<uint(h)) == 0 {
					continue
				}
				for min := range 60 {
					if c.Minute&(1<<uint(min)) == 0 {
						continue
					}
					if t := time.Date(y, m, d, h, min, 0, 0, zone); t.After(after) {
						return t
					}
				}
			}
		}
		day = day.AddDate(0, 0, 1)
	}
	return time.Time{}
}

// dayMatches follows cron: when both day fields are restricted, either may
// match; otherwise both must.
func dayMatches(c *cron.SpecSchedule, dom int, dow time.Weekday) bool {
	domOK := c.Dom&(1<<uint(dom)) != 0
	dowOK := c.Dow&(1<<uint(dow)) != 0
	if c.Dom&starBit != 0 || c.Dow&starBit != 0 {
		return domOK && dowOK
	}
	return domOK || dowOK
}

// Describe says when the job runs, for lists: `cron "0 9 * * *"`,
// "every 2h", "once at Mon 2026-03-02 09:00 CET".
func (s Spec) Describe() string {
	switch s.Kind {
	case KindCron:
		return fmt.Sprintf("cron %q", s.Expr)
	case KindEvery:
		return "every " + shortDuration(s.Every)
	case KindAt:
		return "once at " + s.At.In(s.zone()).Format(ShowFormat)
	}
	return "never"
}

// ZoneName is the name of the spec's zone ("Local" for the host's).
func (s Spec) ZoneName() string { return s.zone().String() }

func shortDuration(d time.Duration) string {
	out := d.String()
	for _, suffix := range []string{"m0s", "h0m"} {
		if strings.HasSuffix(out, suffix) {
			out = strings.TrimSuffix(out, "0s")
			out = strings.TrimSuffix(out, "0m")
		}
	}
	return out
}

// Encode returns the spec's kind and text for storage; Decode reverses it.
func (s Spec) Encode() (kind Kind, text string) {
	switch s.Kind {
	case KindCron:
		return KindCron, s.Expr
	case KindEvery:
		return KindEvery, strconv.FormatInt(int64(s.Every/time.Second), 10)
	case KindAt:
		return KindAt, s.At.UTC().Format(time.RFC3339)
	}
	return s.Kind, ""
}

// Decode rebuilds a stored spec. anchor is when the job was made (the
// phase of an interval).
func Decode(kind Kind, text, zone string, anchor time.Time) (Spec, error) {
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return Spec{}, fmt.Errorf("zone %q: %w", zone, err)
	}
	switch kind {
	case KindCron:
		return parseCron(text, loc)
	case KindEvery:
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil || n <= 0 {
			return Spec{}, fmt.Errorf("interval %q is not a number of seconds", text)
		}
		return Spec{Kind: KindEvery, Every: time.Duration(n) * time.Second, Anchor: anchor.Truncate(time.Second), Zone: loc}, nil
	case KindAt:
		at, err := time.Parse(time.RFC3339, text)
		if err != nil {
			return Spec{}, fmt.Errorf("time %q: %w", text, err)
		}
		return Spec{Kind: KindAt, At: at, Zone: loc}, nil
	}
	return Spec{}, fmt.Errorf("unknown schedule kind %q", kind)
}
