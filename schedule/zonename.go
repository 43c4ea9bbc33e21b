package schedule

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
)

// ShownZone is the name of the spec's zone as people should read it: the
// IANA name, also for the host's zone, which Go calls "Local" (see
// LocalName). ZoneName stays the name stored with a job.
func (s Spec) ShownZone() string {
	if z := s.zone(); z != time.Local {
		return z.String()
	}
	return LocalName()
}

// LocalName names the host's zone, which Go calls "Local": its IANA name
// from TZ or the /etc/localtime link, else its abbreviation and offset now
// ("UTC", "CET, UTC+01:00").
func LocalName() string {
	if name := localIANA(); name != "" {
		return name
	}
	return offsetName(time.Now().In(time.Local))
}

// localIANA is the host zone's IANA name, found once: the process's zone
// does not change while it runs, and finding it loads a zone file.
var localIANA = sync.OnceValue(func() string { return ianaName(os.Getenv("TZ"), os.Readlink) })

func localName(tz string, readlink func(string) (string, error), now time.Time) string {
	if name := ianaName(tz, readlink); name != "" {
		return name
	}
	return offsetName(now)
}

// ianaName is the zone's IANA name from TZ or the /etc/localtime link; ""
// when neither names one.
func ianaName(tz string, readlink func(string) (string, error)) string {
	if tz = strings.TrimPrefix(tz, ":"); tz != "" && !strings.HasPrefix(tz, "/") {
		if _, err := time.LoadLocation(tz); err == nil {
			return tz
		}
	}
	if target, err := readlink("/etc/localtime"); err == nil {
		if _, name, ok := strings.Cut(target, "zoneinfo/"); ok && name != "" {
			if _, err := time.LoadLocation(name); err == nil {
				return strings.TrimPrefix(name, "posix/")
			}
		}
	}
	return ""
}

// offsetName names a zone without an IANA name by its abbreviation and
// offset at now.
func offsetName(now time.Time) string {
	abbr, offset := now.Zone()
	if offset == 0 && (abbr == "UTC" || abbr == "") {
		return "UTC"
	}
	sign := '+'
	if offset < 0 {
		sign, offset = '-', -offset
	}
	utc := fmt.Sprintf("UTC%c%02d:%02d", sign, offset/3600, offset%3600/60)
	if abbr == "" || strings.ContainsAny(abbr, "+-") {
		return utc
	}
	return abbr + ", " + utc
}
