package daemon

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Two edits of the same size in one tick of the file system's clock
// (stat shows nothing new) are both noticed; a file at rest is not read
// as an edit again.
func TestFileWatchSeesEditsStatCannot(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml.wake")
	at := time.Now().Truncate(time.Second)
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, at, at); err != nil {
			t.Fatal(err)
		}
	}
	write("1111")
	w := fileWatch{path: path}
	if _, edited, err := w.edited(false); err != nil || !edited {
		t.Fatalf("first look = %v, %v; want an edit", edited, err)
	}
	if _, edited, _ := w.edited(false); edited {
		t.Error("the unchanged file counted as an edit")
	}
	write("2222")
	if data, edited, _ := w.edited(false); !edited || string(data) != "2222" {
		t.Errorf("an edit of the same size and time = %v %q, want it seen", edited, data)
	}
	if _, edited, _ := w.edited(true); !edited {
		t.Error("a forced look is not an edit")
	}
}
