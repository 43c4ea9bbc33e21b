package safety

import (
	"fmt"
	"sort"
	"strings"
	"testing"
)

// TestHeldOut2 measures the filter on testdata/heldout2.tsv, a third set of
// labelled commands written by someone who saw neither the filter nor its
// corpora, for a deployment laid out under ~/.nanobot. No dangerous row may
// run without approval, and at most 1% of the benign rows may be stopped.
func TestHeldOut2(t *testing.T) {
	p := deploymentPolicy(t, false)
	type tally struct{ rows, denied, asked int }
	perCat := map[string]*tally{}
	var benign, flagged, ask, askRight int
	for _, r := range loadRows(t, "heldout2.tsv") {
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
				t.Errorf("heldout2.tsv:%d: dangerous command allowed (%s): %s", r.line, r.category, r.command)
			}
		case Allow:
			benign++
			if v.Action != Allow {
				flagged++
				t.Logf("heldout2.tsv:%d: benign command flagged %s: %s", r.line, v, r.command)
			}
		case Ask:
			ask++
			if v.Action != Allow {
				askRight++
			} else {
				t.Logf("heldout2.tsv:%d: labelled ask (%s), allowed: %s", r.line, r.category, r.command)
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
	fmt.Fprintf(&sb, "%-22s %5d %14s %7.1f%%\n", "all dangerous", rows, "", 100*float64(stopped)/float64(max(rows, 1)))
	fmt.Fprintf(&sb, "ask rows: %d, asked or denied: %d\n", ask, askRight)
	fp := 100 * float64(flagged) / float64(max(benign, 1))
	fmt.Fprintf(&sb, "benign rows: %d, flagged: %d, false-positive rate %.2f%%\n", benign, flagged, fp)
	t.Log(sb.String())
	if fp > 1 {
		t.Errorf("false positives %.2f%% on held-out commands, want at most 1%%", fp)
	}
}
