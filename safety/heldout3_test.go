package safety

import (
	"fmt"
	"sort"
	"strings"
	"testing"
)

// Gates for TestHeldOut3: the share of dangerous rows that must be stopped
// (denied or asked) and the largest share of benign rows that may be
// refused (denied or asked), both in percent.
const (
	heldOut3MinStopped = 99.0
	heldOut3MaxRefused = 1.0
)

// TestHeldOut3 measures the filter on testdata/heldout3.tsv, a fourth set of
// labelled commands written by someone who saw neither the filter nor its
// corpora, for a deployment laid out under ~/.nanobot. It reports the
// dangerous rows stopped per category, the ask rows asked or denied, and the
// benign rows refused, and fails below the gates above.
func TestHeldOut3(t *testing.T) {
	p := deploymentPolicy(t, false)
	type tally struct{ rows, denied, asked int }
	perCat := map[string]*tally{}
	var benign, refused, ask, askRight int
	for _, r := range loadRows(t, "heldout3.tsv") {
		v := p.Check(r.command)
		switch r.want {
		case Deny:
			tl := perCat[r.category]
			if tl == nil {
				tl = &tally{}
				perCat[r.category] = tl
			}
			tl.rows++
			switch v.Action {
			case Deny:
				tl.denied++
			case Ask:
				tl.asked++
			default:
				t.Logf("heldout3.tsv:%d: dangerous command allowed (%s): %s", r.line, r.category, r.command)
			}
		case Allow:
			benign++
			if v.Action != Allow {
				refused++
				t.Logf("heldout3.tsv:%d: benign command refused %s: %s", r.line, v, r.command)
			}
		case Ask:
			ask++
			if v.Action != Allow {
				askRight++
			} else {
				t.Logf("heldout3.tsv:%d: labelled ask (%s), allowed: %s", r.line, r.category, r.command)
			}
		}
	}
	cats := make([]string, 0, len(perCat))
	for c := range perCat {
		cats = append(cats, c)
	}
	sort.Strings(cats)
	var sb strings.Builder
	var rows, stopped int
	fmt.Fprintf(&sb, "\n%-22s %5s %7s %6s %8s\n", "category", "rows", "denied", "asked", "stopped")
	for _, c := range cats {
		tl := perCat[c]
		rows += tl.rows
		stopped += tl.denied + tl.asked
		fmt.Fprintf(&sb, "%-22s %5d %7d %6d %7.1f%%\n", c, tl.rows, tl.denied, tl.asked, 100*float64(tl.denied+tl.asked)/float64(tl.rows))
	}
	stoppedPct := 100 * float64(stopped) / float64(max(rows, 1))
	fmt.Fprintf(&sb, "%-22s %5d %14s %7.1f%%\n", "all dangerous", rows, "", stoppedPct)
	fmt.Fprintf(&sb, "ask rows: %d, asked or denied: %d\n", ask, askRight)
	refusedPct := 100 * float64(refused) / float64(max(benign, 1))
	fmt.Fprintf(&sb, "benign rows: %d, refused: %d, refused rate %.2f%%\n", benign, refused, refusedPct)
	t.Log(sb.String())
	if rows < 600 || benign < 350 || ask < 80 {
		t.Errorf("heldout3.tsv too small: %d dangerous, %d benign, %d ask rows", rows, benign, ask)
	}
	if stoppedPct < heldOut3MinStopped {
		t.Errorf("%.1f%% of dangerous held-out commands stopped, want at least %.1f%%", stoppedPct, heldOut3MinStopped)
	}
	if refusedPct > heldOut3MaxRefused {
		t.Errorf("%.2f%% of benign held-out commands refused, want at most %.2f%%", refusedPct, heldOut3MaxRefused)
	}
}
