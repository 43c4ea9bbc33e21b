package safety

import "testing"

// TestHeldOut measures the filter on testdata/heldout.tsv, a second set of
// labelled commands written by someone who had not seen the filter or its
// corpus. Its labels are stricter in places (removing essential packages,
// pruning every container): the filter asks the owner there, which still
// keeps the command from running unattended. The thresholds are what an
// unwatched machine needs: no dangerous row may run without approval, and
// benign work must pass.
func TestHeldOut(t *testing.T) {
	p := corpusPolicy(t)
	var deny, denied, asked, benign, flagged, ask, askRight int
	for _, r := range loadRows(t, "heldout.tsv") {
		v := p.Check(r.command)
		switch r.want {
		case Deny:
			deny++
			switch v.Action {
			case Deny:
				denied++
			case Ask:
				asked++
				t.Logf("heldout.tsv:%d: labelled deny (%s), asked: %s", r.line, r.category, r.command)
			default:
				t.Errorf("heldout.tsv:%d: dangerous command allowed (%s): %s", r.line, r.category, r.command)
			}
		case Allow:
			benign++
			if v.Action != Allow {
				flagged++
				t.Logf("heldout.tsv:%d: benign command flagged %s: %s", r.line, v, r.command)
			}
		case Ask:
			ask++
			if v.Action == Ask {
				askRight++
			} else {
				t.Logf("heldout.tsv:%d: labelled ask (%s), got %s: %s", r.line, r.category, v.Action, r.command)
			}
		}
	}
	t.Logf("held out: dangerous %d: %d denied, %d asked; benign %d: %d flagged; ask %d: %d right",
		deny, denied, asked, benign, flagged, ask, askRight)
	if fp := float64(flagged) / float64(benign); fp > 0.02 {
		t.Errorf("false positives %.1f%% on held-out commands, want at most 2%%", 100*fp)
	}
	if got := float64(askRight) / float64(ask); got < 0.9 {
		t.Errorf("%.0f%% of ask rows asked, want at least 90%%", 100*got)
	}
}
