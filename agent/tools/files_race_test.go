package tools

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/internal/swaptest"
)

// outsideMarker is the content of the file the swapped folder leads to. It
// holds what the edits look for, so that an edit that reaches it changes it.
const outsideMarker = "OUTSIDE-MARKER inside INSIDE"

// swapLayout is a workspace whose folder d another process keeps
// exchanging with d_swap, a symlink to a folder outside that holds x.
type swapLayout struct {
	ws, outside, target string
}

func newSwapLayout(t *testing.T) swapLayout {
	t.Helper()
	root := t.TempDir()
	s := swapLayout{ws: filepath.Join(root, "ws"), outside: filepath.Join(root, "outside")}
	s.target = filepath.Join(s.outside, "x")
	mkdir(t, filepath.Join(s.ws, "d"), s.outside)
	writeFile(t, filepath.Join(s.ws, "d", "x"), "inside")
	writeFile(t, s.target, outsideMarker)
	writeFile(t, filepath.Join(s.outside, "only-outside"), "")
	symlink(t, s.outside, filepath.Join(s.ws, "d_swap"))
	return s
}

// swap exchanges d and d_swap in a tight loop until the returned function
// is called, which waits for it and reports how many exchanges it made.
func (s swapLayout) swap(t *testing.T) (stop func() int) {
	t.Helper()
	return swaptest.Exchange(t, filepath.Join(s.ws, "d"), filepath.Join(s.ws, "d_swap"))
}

// breach describes what the tools did outside the workspace, or "".
func (s swapLayout) breach(t *testing.T, results ...string) string {
	t.Helper()
	for _, r := range results {
		if strings.Contains(r, outsideMarker) {
			return "read the outside file: " + r
		}
		if strings.Contains(r, "only-outside") {
			return "listed the outside folder: " + r
		}
	}
	if got := readString(t, s.target); got != outsideMarker {
		return "wrote the outside file: " + got
	}
	entries, err := os.ReadDir(s.outside)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"only-outside", "x"}) {
		return "created files outside: " + strings.Join(names, ", ")
	}
	return ""
}

// TestFileToolsUnderSwap runs each file tool on d/x while d keeps turning
// into a symlink to a folder outside the workspace and back. Whatever the
// timing, no tool may read, list, write or create anything outside: the
// folder must be resolved and opened in one step.
func TestFileToolsUnderSwap(t *testing.T) {
	const calls = 1000
	modes := []struct {
		name  string
		files func(s swapLayout) Files
	}{
		{"restricted", func(s swapLayout) Files { return Files{Workspace: s.ws, Restrict: true} }},
		{"unrestricted protected", func(s swapLayout) Files { return Files{Workspace: s.ws, Protected: []string{s.target}} }},
	}
	tools := []struct {
		name string
		run  func(t *testing.T, f Files, i int) (string, error)
	}{
		{"write_file", func(t *testing.T, f Files, _ int) (string, error) {
			return call(t, WriteFile{f}, map[string]string{"path": "d/x", "content": "written"})
		}},
		{"read_file", func(t *testing.T, f Files, _ int) (string, error) {
			return call(t, ReadFile{f}, map[string]string{"path": "d/x"})
		}},
		{"edit_file", func(t *testing.T, f Files, ok int) (string, error) {
			// Successful edits turn the inside file's text back and forth.
			from, to := "inside", "INSIDE"
			if ok%2 == 1 {
				from, to = to, from
			}
			return call(t, EditFile{f}, map[string]string{"path": "d/x", "old_text": from, "new_text": to})
		}},
		{"list_dir", func(t *testing.T, f Files, _ int) (string, error) {
			return call(t, ListDir{f}, map[string]string{"path": "d"})
		}},
	}
	for _, mode := range modes {
		for _, tool := range tools {
			t.Run(mode.name+"/"+tool.name, func(t *testing.T) {
				s := newSwapLayout(t)
				f := mode.files(s)
				stop := s.swap(t)
				var ok, breachAt int
				var what string
				for i := range calls {
					out, err := tool.run(t, f, ok)
					if err != nil {
						out = err.Error()
					} else {
						ok++
					}
					if !f.Restrict && !strings.Contains(out, outsideMarker) {
						// Unrestricted, the folder outside may be listed;
						// only the protected file in it must stay untouched.
						out = ""
					}
					if what = s.breach(t, out); what != "" {
						breachAt = i + 1
						break
					}
				}
				swaps := stop()
				if what != "" {
					t.Fatalf("%s broke out after %d calls (%d exchanges): %s", tool.name, breachAt, swaps, what)
				}
				if swaps == 0 || ok == 0 {
					t.Fatalf("%d exchanges, %d successful calls: the race was not exercised", swaps, ok)
				}
				t.Logf("%d calls, %d successful, %d exchanges: nothing outside touched", calls, ok, swaps)
			})
		}
	}
}
