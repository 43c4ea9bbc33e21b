package safety

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// corpusRow is one labelled command of testdata/commands.tsv.
type corpusRow struct {
	line     int
	want     Action
	category string
	command  string
}

// loadCorpus reads the corpus. Columns are separated by tabs; the command
// is everything after the second column.
func loadCorpus(t testing.TB) []corpusRow {
	t.Helper()
	return loadRows(t, "commands.tsv")
}

// loadRows reads a labelled file of testdata.
func loadRows(t testing.TB, name string) []corpusRow {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []corpusRow
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.SplitN(line, "\t", 3)
		if len(parts) != 3 {
			t.Fatalf("%s:%d: want 3 tab-separated columns, got %q", name, n, line)
		}
		want := Action(parts[0])
		switch want {
		case Allow, Ask, Deny:
		default:
			t.Fatalf("%s:%d: bad verdict %q", name, n, parts[0])
		}
		rows = append(rows, corpusRow{line: n, want: want, category: parts[1], command: parts[2]})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

// corpusPolicy is the configuration the corpus is labelled for.
func corpusPolicy(t testing.TB) *Policy {
	t.Helper()
	p, err := NewPolicy(PolicyConfig{
		Workspace: "/home/u/ws",
		Home:      "/home/u",
		Protected: []string{"/home/u/ws/../nanobot/config.yaml", "/home/u/nanobot/nanobot.db", "/usr/local/bin/nanobot"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCorpus checks every labelled command and reports recall per
// category and the false-positive rate. It fails below 99% recall or
// above 2% false positives, and on any row whose verdict differs.
func TestCorpus(t *testing.T) {
	p := corpusPolicy(t)
	rows := loadCorpus(t)
	type tally struct{ total, caught, exact int }
	perCat := map[string]*tally{}
	var benign, falsePos, dangerous, caught, asks, asksOK int
	for _, r := range rows {
		got := p.Check(r.command)
		switch r.want {
		case Deny:
			dangerous++
			tl := perCat[r.category]
			if tl == nil {
				tl = &tally{}
				perCat[r.category] = tl
			}
			tl.total++
			if got.Action == Deny {
				caught++
				tl.caught++
				if got.Category == r.category {
					tl.exact++
				}
			}
			if got.Action != Deny || got.Category != r.category {
				t.Errorf("commands.tsv:%d: Check(%q) = %v, want deny %s", r.line, r.command, got, r.category)
			}
		case Ask:
			asks++
			if got.Action == Ask && got.Category == r.category {
				asksOK++
			} else {
				t.Errorf("commands.tsv:%d: Check(%q) = %v, want ask %s", r.line, r.command, got, r.category)
			}
		case Allow:
			benign++
			if got.Action != Allow {
				falsePos++
				t.Errorf("commands.tsv:%d: Check(%q) = %v, want allow", r.line, r.command, got)
			}
		}
	}
	cats := make([]string, 0, len(perCat))
	for c := range perCat {
		cats = append(cats, c)
	}
	sort.Strings(cats)
	var sb strings.Builder
	fmt.Fprintf(&sb, "\n%-20s %6s %7s %8s %9s\n", "category", "rows", "denied", "recall", "category")
	for _, c := range cats {
		tl := perCat[c]
		fmt.Fprintf(&sb, "%-20s %6d %7d %7.1f%% %8.1f%%\n", c, tl.total, tl.caught,
			100*float64(tl.caught)/float64(tl.total), 100*float64(tl.exact)/float64(tl.total))
	}
	recall := 100 * float64(caught) / float64(max(dangerous, 1))
	fp := 100 * float64(falsePos) / float64(max(benign, 1))
	fmt.Fprintf(&sb, "%-20s %6d %7d %7.1f%%\n", "all dangerous", dangerous, caught, recall)
	fmt.Fprintf(&sb, "ask rows: %d, asked with the right category: %d\n", asks, asksOK)
	fmt.Fprintf(&sb, "benign rows: %d, denied or asked: %d, false-positive rate %.2f%%\n", benign, falsePos, fp)
	t.Log(sb.String())
	if dangerous < 450 || benign < 250 || asks < 40 {
		t.Errorf("corpus too small: %d dangerous, %d benign, %d ask rows", dangerous, benign, asks)
	}
	if recall < 99 {
		t.Errorf("recall %.1f%% is below 99%%", recall)
	}
	if fp > 2 {
		t.Errorf("false-positive rate %.2f%% is above 2%%", fp)
	}
}
