package tools

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/internal/swaptest"
)

// hangLimit is how long a file tool may take on a special file before the
// test calls it hung.
const hangLimit = 5 * time.Second

// runPromptly runs fn and fails the test when it has not returned within
// hangLimit; then it opens the FIFOs in unblock for writing, which lets a
// reader stuck on one go, so that the test ends either way.
func runPromptly(t *testing.T, unblock []string, fn func() (string, error)) (string, error) {
	t.Helper()
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := fn()
		done <- result{out, err}
	}()
	select {
	case r := <-done:
		return r.out, r.err
	case <-time.After(hangLimit):
		t.Errorf("the call has not returned after %v", hangLimit)
		for _, p := range unblock {
			if fd, err := syscall.Open(p, syscall.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				_ = syscall.Close(fd)
			}
		}
		r := <-done
		return r.out, r.err
	}
}

func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Skipf("mkfifo is not available: %v", err)
	}
}

// TestFileToolsRefuseSpecialFiles: a FIFO, a socket or a device is neither
// read nor written, and refusing it does not wait (a FIFO's open blocks
// until a writer comes).
func TestFileToolsRefuseSpecialFiles(t *testing.T) {
	ws := t.TempDir()
	fifo := filepath.Join(ws, "p")
	mkfifo(t, fifo)
	symlink(t, "p", filepath.Join(ws, "plink"))
	sock := filepath.Join(ws, "s")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Skipf("unix sockets are not available: %v", err)
	}
	defer l.Close()

	tests := []struct {
		name, path, want string
		restrict         bool
	}{
		{"fifo", "p", "p is not a regular file (p", true},
		{"symlink to a fifo", "plink", "plink is not a regular file (p", true},
		{"socket", "s", "s is not a regular file (S", true},
		{"device", "/dev/zero", "/dev/zero is not a regular file (D", false},
	}
	for _, tt := range tests {
		f := Files{Workspace: ws, Restrict: tt.restrict}
		for _, tool := range []struct {
			name string
			run  func() (string, error)
			want string
		}{
			{"read_file", func() (string, error) { return call(t, ReadFile{f}, map[string]string{"path": tt.path}) }, tt.want},
			{"edit_file", func() (string, error) {
				return call(t, EditFile{f}, map[string]string{"path": tt.path, "old_text": "a", "new_text": "b"})
			}, tt.want},
			{"write_file", func() (string, error) {
				return call(t, WriteFile{f}, map[string]string{"path": tt.path, "content": "x"})
			}, "is not a regular file"},
			{"list_dir", func() (string, error) { return call(t, ListDir{f}, map[string]string{"path": tt.path}) }, "is not a directory"},
		} {
			t.Run(tt.name+"/"+tool.name, func(t *testing.T) {
				out, err := runPromptly(t, []string{fifo}, tool.run)
				if err == nil || !strings.Contains(err.Error(), tool.want) {
					t.Errorf("%s(%s) = %q, %v; want an error containing %q", tool.name, tt.path, out, err, tool.want)
				}
			})
		}
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was replaced: %v, %v", fi, err)
	}
}

// TestReadFileFIFOSwap: a regular file that another process keeps
// exchanging with a FIFO never makes read_file wait, even when the FIFO
// arrives between the look and the open.
func TestReadFileFIFOSwap(t *testing.T) {
	ws := t.TempDir()
	file, fifo := filepath.Join(ws, "f"), filepath.Join(ws, "f_fifo")
	writeFile(t, file, "text")
	mkfifo(t, fifo)
	defer swaptest.Exchange(t, file, fifo)()
	tool := ReadFile{Files{Workspace: ws, Restrict: true}}
	var read, refused int
	for range 1000 {
		out, err := runPromptly(t, []string{file, fifo}, func() (string, error) {
			return call(t, tool, map[string]string{"path": "f"})
		})
		switch {
		case err == nil && out == "text":
			read++
		case err != nil && strings.Contains(err.Error(), "is not a regular file"):
			refused++
		case err != nil && strings.Contains(err.Error(), "does not exist"):
		default:
			t.Fatalf("read_file(f) = %q, %v", out, err)
		}
		if t.Failed() {
			break
		}
	}
	t.Logf("%d reads, %d refusals", read, refused)
}
