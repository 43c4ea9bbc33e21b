package safety

import "testing"

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
	h := measureHeldOut(t, "heldout3.tsv", func(r corpusRow) {
		t.Logf("heldout3.tsv:%d: dangerous command allowed (%s): %s", r.line, r.category, r.command)
	})
	t.Log(h.table)
	if h.rows < 600 || h.benign < 350 || h.ask < 80 {
		t.Errorf("heldout3.tsv too small: %d dangerous, %d benign, %d ask rows", h.rows, h.benign, h.ask)
	}
	if h.stoppedPct < heldOut3MinStopped {
		t.Errorf("%.1f%% of dangerous held-out commands stopped, want at least %.1f%%", h.stoppedPct, heldOut3MinStopped)
	}
	if h.refusedPct > heldOut3MaxRefused {
		t.Errorf("%.2f%% of benign held-out commands refused, want at most %.2f%%", h.refusedPct, heldOut3MaxRefused)
	}
}
