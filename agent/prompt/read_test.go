package prompt

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/agent"

	"github.com/nanobot-go/nanobot/internal/swaptest"
)

// TestPromptFilesRefuseSpecialFiles: a prompt file or SKILL.md that is a
// FIFO is refused at once instead of blocking every turn.
func TestPromptFilesRefuseSpecialFiles(t *testing.T) {
	for _, restrict := range []bool{true, false} {
		ws := t.TempDir()
		write(t, filepath.Join(ws, "USER.md"), "I am Ada.")
		mkdir := filepath.Join(ws, "skills", "piped")
		if err := os.MkdirAll(mkdir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{filepath.Join(ws, "AGENTS.md"), filepath.Join(mkdir, "SKILL.md")} {
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Skipf("mkfifo is not available: %v", err)
			}
		}
		src := New(ws, 0, restrict, WithBuiltin(os.DirFS(t.TempDir())))
		done := make(chan struct{})
		var skills []Skill
		var files int
		var err error
		go func() {
			defer close(done)
			var p agent.PromptParts
			p, err = src.PromptParts(t.Context())
			files, skills = len(p.Files), src.Skills()
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			// Let the reader go, so that the test ends.
			for _, p := range []string{filepath.Join(ws, "AGENTS.md"), filepath.Join(mkdir, "SKILL.md")} {
				if fd, err := syscall.Open(p, syscall.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					_ = syscall.Close(fd)
				}
			}
			<-done
			t.Fatalf("restrict %v: reading the prompt has not returned after 5s", restrict)
		}
		if err == nil || !strings.Contains(err.Error(), "AGENTS.md: not a regular file") || files != 1 {
			t.Errorf("restrict %v: PromptParts() = %d files, %v; want USER.md and AGENTS.md refused", restrict, files, err)
		}
		if len(skills) != 1 || skills[0].Problem == nil || !strings.Contains(skills[0].Problem.Msg, "not a regular file") {
			t.Errorf("restrict %v: Skills() = %+v, want the piped skill with a problem", restrict, skills)
		}
	}
}

// TestPromptFileLinkToProtected: unrestricted, a prompt file that links to
// nanobot's configuration (or a hard link to it) is not read into the
// prompt.
func TestPromptFileLinkToProtected(t *testing.T) {
	ws, etc := t.TempDir(), t.TempDir()
	cfg := filepath.Join(etc, "config.yaml")
	write(t, cfg, "api_key: sk-live")
	if err := os.Symlink(cfg, filepath.Join(ws, "SOUL.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(cfg, filepath.Join(ws, "USER.md")); err != nil {
		t.Fatal(err)
	}
	parts, err := New(ws, 0, false, WithProtected(cfg)).PromptParts(t.Context())
	if len(parts.Files) != 0 || err == nil || !strings.Contains(err.Error(), "nanobot's own configuration") {
		t.Errorf("PromptParts() = %+v, %v; want both links refused", parts.Files, err)
	}
}

// TestPromptFileInProtectedFolder: nor is a prompt file that links into a
// protected folder (the database backups).
func TestPromptFileInProtectedFolder(t *testing.T) {
	ws, backups := t.TempDir(), t.TempDir()
	write(t, filepath.Join(backups, "nanobot.db.1"), "SQLite format 3")
	if err := os.Symlink(filepath.Join(backups, "nanobot.db.1"), filepath.Join(ws, "SOUL.md")); err != nil {
		t.Fatal(err)
	}
	parts, err := New(ws, 0, false, WithProtected(backups)).PromptParts(t.Context())
	if len(parts.Files) != 0 || err == nil || !strings.Contains(err.Error(), "nanobot's own configuration") {
		t.Errorf("PromptParts() = %+v, %v; want the link refused", parts.Files, err)
	}
}

// TestSkillsUnderSwap reads the skills while another process keeps
// exchanging a skill folder with a symlink to a folder outside the
// workspace: restricted, the outside SKILL.md is never read.
func TestSkillsUnderSwap(t *testing.T) {
	const marker = "OUTSIDE-MARKER"
	ws, outside := t.TempDir(), t.TempDir()
	write(t, filepath.Join(ws, "skills", "s", "SKILL.md"), "---\nname: s\ndescription: inside\n---\ninside")
	write(t, filepath.Join(outside, "SKILL.md"), "---\nname: s\ndescription: "+marker+"\n---\n"+marker)
	d, swap := filepath.Join(ws, "skills", "s"), filepath.Join(ws, "skills", "s_swap")
	if err := os.Symlink(outside, swap); err != nil {
		t.Fatal(err)
	}
	defer swaptest.Exchange(t, d, swap)()
	for i := range 2000 {
		// A new source each time: nothing comes from the cache.
		src := New(ws, 0, true, WithBuiltin(os.DirFS(outside+"/none")))
		for _, sk := range src.Skills() {
			if strings.Contains(sk.Body, marker) || strings.Contains(sk.Description, marker) {
				t.Fatalf("after %d reads: the skill outside the workspace was read: %+v", i+1, sk)
			}
		}
	}
}
