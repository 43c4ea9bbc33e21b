package safety

import (
	"fmt"
	"sort"
	"strings"
	"testing"
)

// heldOut is what one blind set of labelled commands measured.
type heldOut struct {
	rows, stopped          int // dangerous rows, and those denied or asked
	benign, refused        int // benign rows, and those not allowed
	ask, askRight          int // ask rows, and those asked or denied
	table                  string
	stoppedPct, refusedPct float64
}

// measureHeldOut runs the deployment policy over a blind set. allowed is
// told of each dangerous row the policy let run; benign rows refused and
// ask rows allowed are logged.
func measureHeldOut(t *testing.T, name string, allowed func(r corpusRow)) heldOut {
	t.Helper()
	p := deploymentPolicy(t, false)
	type tally struct{ rows, denied, asked int }
	perCat := map[string]*tally{}
	var h heldOut
	for _, r := range loadRows(t, name) {
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
				allowed(r)
			}
		case Allow:
			h.benign++
			if v.Action != Allow {
				h.refused++
				t.Logf("%s:%d: benign command refused %s: %s", name, r.line, v, r.command)
			}
		case Ask:
			h.ask++
			if v.Action != Allow {
				h.askRight++
			} else {
				t.Logf("%s:%d: labelled ask (%s), allowed: %s", name, r.line, r.category, r.command)
			}
		}
	}
	cats := make([]string, 0, len(perCat))
	for c := range perCat {
		cats = append(cats, c)
	}
	sort.Strings(cats)
	var sb strings.Builder
	fmt.Fprintf(&sb, "\n%-22s %5s %7s %6s %8s\n", "category", "rows", "denied", "asked", "stopped")
	for _, c := range cats {
		tl := perCat[c]
		h.rows += tl.rows
		h.stopped += tl.denied + tl.asked
		fmt.Fprintf(&sb, "%-22s %5d %7d %6d %7.1f%%\n", c, tl.rows, tl.denied, tl.asked, 100*float64(tl.denied+tl.asked)/float64(tl.rows))
	}
	h.stoppedPct = 100 * float64(h.stopped) / float64(max(h.rows, 1))
	h.refusedPct = 100 * float64(h.refused) / float64(max(h.benign, 1))
	fmt.Fprintf(&sb, "%-22s %5d %14s %7.1f%%\n", "all dangerous", h.rows, "", h.stoppedPct)
	fmt.Fprintf(&sb, "ask rows: %d, asked or denied: %d\n", h.ask, h.askRight)
	fmt.Fprintf(&sb, "benign rows: %d, refused: %d, refused rate %.2f%%\n", h.benign, h.refused, h.refusedPct)
	h.table = sb.String()
	return h
}

// TestHeldOut2 measures the filter on testdata/heldout2.tsv, a third set of
// labelled commands written by someone who saw neither the filter nor its
// corpora, for a deployment laid out under ~/.nanobot. No dangerous row may
// run without approval, and at most 1% of the benign rows may be stopped.
func TestHeldOut2(t *testing.T) {
	h := measureHeldOut(t, "heldout2.tsv", func(r corpusRow) {
		t.Errorf("heldout2.tsv:%d: dangerous command allowed (%s): %s", r.line, r.category, r.command)
	})
	t.Log(h.table)
	if h.refusedPct > 1 {
		t.Errorf("false positives %.2f%% on held-out commands, want at most 1%%", h.refusedPct)
	}
}
