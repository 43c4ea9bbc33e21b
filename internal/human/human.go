// Package human words figures for people: sizes, shares, durations and
// the gist of a tool call.
package human

import "fmt"

// Bytes words a size: "512 bytes", "3.2 kB", "14.1 MB".
func Bytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f kB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// Share is part of whole in whole percent, rounded; "-" when whole is not
// positive.
func Share(part, whole int) string {
	if whole <= 0 {
		return "-"
	}
	return fmt.Sprintf("%d%%", (part*100+whole/2)/whole)
}

// Cached says how many of the prompt tokens were cached, and their share:
// "300 of 1000 prompt tokens (30%)".
func Cached(cached, prompt int) string {
	return fmt.Sprintf("%d of %d prompt tokens (%s)", cached, prompt, Share(cached, prompt))
}
