package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/config"
	"github.com/nanobot-go/nanobot/daemon"
	"github.com/nanobot-go/nanobot/memory"
)

const memoryUsage = "usage: nanobot memory show|history|edit|export DIR|import DIR [--chat ID]"

// memory is `nanobot memory ...`.
func (a *app) memory(ctx context.Context, cfgPath string, args []string) error {
	if len(args) == 0 {
		return usageError{memoryUsage}
	}
	sub := args[0]
	fs := newFlags("memory "+sub, a.stderr)
	chat := fs.String("chat", "", "chat id (or session) whose memory to use, under memory.scope: chat")
	search := fs.String("search", "", "history: only entries matching this text")
	limit := fs.Int("limit", 20, "history: at most this many entries")
	pos, err := parseInterspersed(fs, args[1:])
	if err != nil {
		return err
	}
	open := a.openStore
	if sub == "show" || sub == "history" || sub == "export" {
		open = a.openReader
	}
	cfg, st, err := open(ctx, cfgPath)
	if err != nil {
		return err
	}
	defer st.Close()
	scope, err := memoryScope(cfg, *chat)
	if err != nil {
		return err
	}
	needDir := func() (string, error) {
		if len(pos) != 1 {
			return "", usageError{fmt.Sprintf("usage: nanobot memory %s DIR [--chat ID]", sub)}
		}
		return pos[0], nil
	}
	switch sub {
	case "show":
		return a.showMemory(ctx, st, scope)
	case "history":
		return a.showHistory(ctx, st, scope, *search, *limit)
	case "edit":
		return a.editMemory(ctx, st, scope)
	case "export":
		dir, err := needDir()
		if err != nil {
			return err
		}
		return exportMemory(ctx, st, scope, dir, a)
	case "import":
		dir, err := needDir()
		if err != nil {
			return err
		}
		return importMemory(ctx, st, scope, dir, a)
	default:
		return usageError{memoryUsage}
	}
}

// showMemory prints the MEMORY document of scope.
func (a *app) showMemory(ctx context.Context, st *memory.Store, scope string) error {
	doc, err := st.Memory(ctx, scope)
	if err != nil {
		return err
	}
	if strings.TrimSpace(doc) == "" {
		fmt.Fprintln(a.stderr, "MEMORY is empty.")
		return nil
	}
	fmt.Fprintln(a.stdout, strings.TrimRight(doc, "\n"))
	return nil
}

// showHistory prints the newest HISTORY entries of scope, or those
// matching search.
func (a *app) showHistory(ctx context.Context, st *memory.Store, scope, search string, limit int) error {
	var entries []memory.HistoryEntry
	var err error
	if search != "" {
		entries, err = st.SearchHistory(ctx, scope, search, limit)
	} else {
		entries, err = st.History(ctx, scope, limit)
	}
	if err != nil {
		return err
	}
	if len(entries) == 0 {
		what := ""
		if search != "" {
			what = fmt.Sprintf("matching %q", search)
		}
		fmt.Fprintln(a.stdout, emptyList("HISTORY entries", what))
		return nil
	}
	for _, e := range entries {
		fmt.Fprintln(a.stdout, historyLine(e))
	}
	return nil
}

func memoryScope(cfg *config.Config, chat string) (string, error) {
	switch chatScope := cfg.Memory.Scope == config.ScopeChat; {
	case !chatScope && chat != "":
		return "", usageError{"--chat only applies with memory.scope: chat (the memory is global)"}
	case chatScope && chat == "":
		return "", usageError{"memory.scope is chat: pass --chat ID to choose whose memory"}
	}
	return daemon.ScopeOf(cfg, sessionOf(chat)), nil
}

var stamp = regexp.MustCompile(`^\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2})\]\s*`)

// historyLine renders an entry in HISTORY.md's format.
func historyLine(e memory.HistoryEntry) string {
	if stamp.MatchString(e.Text) {
		return e.Text
	}
	return "[" + e.At.Local().Format("2006-01-02 15:04") + "] " + e.Text
}

func (a *app) editMemory(ctx context.Context, st *memory.Store, scope string) error {
	doc, err := st.Memory(ctx, scope)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp("", "MEMORY-*.md")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.WriteString(doc); err != nil {
		f.Close()
		return err
	}
	f.Close()
	editor := a.getenv("VISUAL")
	if editor == "" {
		editor = a.getenv("EDITOR")
	}
	if editor == "" {
		editor = "vi"
	}
	// The editor setting may carry arguments ("code --wait").
	cmd := exec.CommandContext(ctx, "sh", "-c", editor+` "$1"`, "editor", f.Name())
	cmd.Stdin, cmd.Stdout, cmd.Stderr = a.stdin, a.stdout, a.stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("editor %q: %w", editor, err)
	}
	edited, err := os.ReadFile(f.Name())
	if err != nil {
		return err
	}
	if string(edited) == doc {
		fmt.Fprintln(a.stdout, "MEMORY unchanged.")
		return nil
	}
	if err := st.SetMemory(ctx, scope, string(edited)); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "MEMORY saved (%d characters).\n", len([]rune(string(edited))))
	return nil
}

// exportMemory writes MEMORY.md and HISTORY.md in nanobot's format.
func exportMemory(ctx context.Context, st *memory.Store, scope, dir string, a *app) error {
	doc, err := st.Memory(ctx, scope)
	if err != nil {
		return err
	}
	entries, err := allHistory(ctx, st, scope)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var hist strings.Builder
	for _, e := range entries {
		hist.WriteString(historyLine(e) + "\n\n")
	}
	if err := os.WriteFile(filepath.Join(dir, "MEMORY.md"), []byte(doc), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "HISTORY.md"), []byte(hist.String()), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "Wrote %s (%d characters) and %s (%d entries).\n",
		filepath.Join(dir, "MEMORY.md"), len([]rune(doc)), filepath.Join(dir, "HISTORY.md"), len(entries))
	return nil
}

// allHistory returns every entry, oldest first.
func allHistory(ctx context.Context, st *memory.Store, scope string) ([]memory.HistoryEntry, error) {
	entries, err := st.History(ctx, scope, 1<<30)
	if err != nil {
		return nil, err
	}
	slices.Reverse(entries)
	return entries, nil
}

// importMemory reads a nanobot workspace (DIR/memory/MEMORY.md and
// HISTORY.md) or a directory holding the two files. HISTORY entries already
// present are skipped, so importing twice adds nothing.
func importMemory(ctx context.Context, st *memory.Store, scope, dir string, a *app) error {
	src := dir
	if _, err := os.Stat(filepath.Join(dir, "memory", "MEMORY.md")); err == nil {
		src = filepath.Join(dir, "memory")
	} else if _, err := os.Stat(filepath.Join(dir, "memory", "HISTORY.md")); err == nil {
		src = filepath.Join(dir, "memory")
	}
	doc, errDoc := os.ReadFile(filepath.Join(src, "MEMORY.md"))
	hist, errHist := os.ReadFile(filepath.Join(src, "HISTORY.md"))
	if errDoc != nil && errHist != nil {
		return fmt.Errorf("no MEMORY.md or HISTORY.md in %s or %s", dir, filepath.Join(dir, "memory"))
	}
	if errDoc == nil && strings.TrimSpace(string(doc)) != "" {
		if err := st.SetMemory(ctx, scope, string(doc)); err != nil {
			return err
		}
	}
	existing, err := allHistory(ctx, st, scope)
	if err != nil {
		return err
	}
	have := make(map[string]bool, len(existing))
	for _, e := range existing {
		have[historyLine(e)] = true
	}
	added := 0
	for _, entry := range splitHistory(string(hist)) {
		if have[entry] {
			continue
		}
		at := time.Now()
		if m := stamp.FindStringSubmatch(entry); m != nil {
			if t, err := time.ParseInLocation("2006-01-02 15:04", m[1], time.Local); err == nil {
				at = t
			}
		}
		if err := st.AppendHistory(ctx, scope, at, entry); err != nil {
			return err
		}
		have[entry] = true
		added++
	}
	fmt.Fprintf(a.stdout, "Imported MEMORY (%d characters) and %d HISTORY entries from %s.\n", len([]rune(string(doc))), added, src)
	return nil
}

// splitHistory splits HISTORY.md into entries: each starts with a
// "[YYYY-MM-DD HH:MM]" stamp; text without one joins the entry before it.
func splitHistory(text string) []string {
	var out []string
	var cur []string
	flush := func() {
		if e := strings.TrimSpace(strings.Join(cur, "\n")); e != "" {
			out = append(out, e)
		}
		cur = nil
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if stamp.MatchString(line) || (strings.TrimSpace(line) == "" && len(cur) > 0 && !stamp.MatchString(cur[0])) {
			flush()
		}
		if strings.TrimSpace(line) == "" {
			if len(cur) > 0 {
				cur = append(cur, "")
			}
			continue
		}
		cur = append(cur, line)
	}
	flush()
	return out
}
