// Package prompt reads the parts of the system prompt that the owner writes
// in the workspace: the prompt files (AGENTS.md, SOUL.md, USER.md, TOOLS.md,
// IDENTITY.md) and the skills (skills/<name>/SKILL.md), plus the skills
// built into the binary. A file is read again only when its modification
// time or size changes, checked when a turn starts; nothing polls.
package prompt

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/safety"
)

// FileNames are the workspace's prompt files, in the order the prompt
// includes them.
var FileNames = []string{"AGENTS.md", "SOUL.md", "USER.md", "TOOLS.md", "IDENTITY.md"}

// DefaultMaxChars caps each prompt file when no cap is configured.
const DefaultMaxChars = 4000

// BuiltinPrefix starts the read_file path of a built-in skill.
const BuiltinPrefix = "builtin:"

// maxSkillBytes bounds what is read of one SKILL.md.
const maxSkillBytes = 64 << 10

//go:embed builtin
var builtinFS embed.FS

// Builtin is the file system of the built-in skills: skills/<name>/SKILL.md.
func Builtin() fs.FS {
	sub, err := fs.Sub(builtinFS, "builtin")
	if err != nil {
		panic(err) // the directory is embedded at build time
	}
	return sub
}

// Source gives the loop the workspace's prompt files and skills. It is safe
// for concurrent use.
type Source struct {
	builtin   fs.FS
	lookPath  func(string) (string, error)
	getenv    func(string) string
	protected []string

	mu        sync.Mutex
	workspace string
	maxChars  int
	restrict  bool
	files     map[string]cached // by absolute path
}

type cached struct {
	mod  time.Time
	size int64
	max  int
	file agent.PromptFile
	sk   Skill
}

var _ agent.PromptSource = (*Source)(nil)

// Option configures a Source.
type Option func(*Source)

// WithEnv replaces the environment and PATH look-up that skill
// requirements are checked against.
func WithEnv(getenv func(string) string, lookPath func(string) (string, error)) Option {
	return func(s *Source) { s.getenv, s.lookPath = getenv, lookPath }
}

// WithProtected names files (nanobot's configuration and database) that
// are never read into the prompt, whatever link leads to them.
func WithProtected(paths ...string) Option {
	return func(s *Source) { s.protected = append([]string(nil), paths...) }
}

// WithBuiltin replaces the built-in skills.
func WithBuiltin(fsys fs.FS) Option { return func(s *Source) { s.builtin = fsys } }

// New returns a source over workspace. maxChars caps each prompt file
// (DefaultMaxChars when zero); restrict refuses files that symlinks take
// outside the workspace, as the file tools do.
func New(workspace string, maxChars int, restrict bool, opts ...Option) *Source {
	s := &Source{builtin: Builtin(), lookPath: exec.LookPath, getenv: os.Getenv, files: map[string]cached{}}
	for _, o := range opts {
		o(s)
	}
	s.Configure(workspace, maxChars, restrict)
	return s
}

// Configure applies a new workspace, cap and confinement from the next turn.
func (s *Source) Configure(workspace string, maxChars int, restrict bool) {
	if maxChars <= 0 {
		maxChars = DefaultMaxChars
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.workspace != workspace {
		s.files = map[string]cached{}
	}
	s.workspace, s.maxChars, s.restrict = workspace, maxChars, restrict
}

// PromptParts reads the prompt files and the usable skills.
func (s *Source) PromptParts(ctx context.Context) (agent.PromptParts, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var p agent.PromptParts
	var errs []error
	for _, name := range FileNames {
		if err := ctx.Err(); err != nil {
			return p, err
		}
		f, ok, err := s.promptFile(name)
		if err != nil {
			errs = append(errs, err)
		}
		if ok {
			p.Files = append(p.Files, f)
		}
	}
	for _, sk := range s.skills() {
		if sk.Usable() {
			p.Skills = append(p.Skills, agent.SkillEntry{Name: sk.Name, Description: sk.Description, Path: sk.Path, Always: sk.Always, Body: sk.Body})
		}
	}
	return p, errors.Join(errs...)
}

// Skills returns every skill, usable or not, sorted by name: the
// workspace's, then the built-in ones (overridden or not).
func (s *Source) Skills() []Skill {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.skills()
}

// promptFile reads one prompt file, from the cache when it has not changed.
func (s *Source) promptFile(name string) (agent.PromptFile, bool, error) {
	abs := filepath.Join(s.workspace, name)
	fi, err := os.Stat(abs)
	if err != nil {
		delete(s.files, abs)
		if errors.Is(err, fs.ErrNotExist) {
			return agent.PromptFile{}, false, nil
		}
		return agent.PromptFile{}, false, fmt.Errorf("prompt file %s: %w", name, err)
	}
	if c, ok := s.files[abs]; ok && c.mod.Equal(fi.ModTime()) && c.size == fi.Size() && c.max == s.maxChars {
		return c.file, true, nil
	}
	data, size, err := s.read(abs, int64(s.maxChars)*utf8.UTFMax+utf8.UTFMax)
	if err != nil {
		return agent.PromptFile{}, false, fmt.Errorf("prompt file %s: %w", name, err)
	}
	f := agent.PromptFile{Name: name, Text: strings.ToValidUTF8(string(data), "\uFFFD")}
	if n := utf8.RuneCountInString(f.Text); n > s.maxChars || size > int64(len(data)) {
		f.Text = f.Text[:runeOffset(f.Text, s.maxChars)] +
			fmt.Sprintf("\n… [cut: %s is longer than the %d characters of agent.prompt_file_max_chars; read the rest with read_file]", name, s.maxChars)
		f.Cut = true
	}
	s.files[abs] = cached{mod: fi.ModTime(), size: fi.Size(), max: s.maxChars, file: f}
	return f, true, nil
}

// read returns at most limit bytes of the regular file at abs and its
// size. It refuses anything but a regular file without waiting on it (a
// FIFO is opened non-blocking), nanobot's own files and folders, judged on
// the opened descriptors, and when restricted a file outside the workspace.
func (s *Source) read(abs string, limit int64) ([]byte, int64, error) {
	dir, base, err := s.folder(abs)
	if err != nil {
		return nil, 0, err
	}
	defer dir.Close()
	fh, err := dir.OpenFile(base, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, 0, err
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, 0, err
	}
	if !fi.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("not a regular file (%s)", fi.Mode().Type())
	}
	if err := s.guard(dir, fi); err != nil {
		return nil, 0, err
	}
	data, err := io.ReadAll(io.LimitReader(fh, limit))
	return data, fi.Size(), err
}

// folder opens the folder the file at abs is in, with symlinks resolved,
// and returns the file's name in it. When restricted the folder is opened
// beneath the workspace held open, so that a folder swapped for a symlink
// after the check cannot take the read outside.
func (s *Source) folder(abs string) (*os.Root, string, error) {
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, "", err
	}
	if !s.restrict {
		dir, err := os.OpenRoot(filepath.Dir(real))
		return dir, filepath.Base(real), err
	}
	ws, err := filepath.EvalSymlinks(s.workspace)
	if err != nil {
		return nil, "", err
	}
	rel, err := filepath.Rel(ws, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil, "", errors.New("it is a link to outside the workspace, which file tools cannot reach")
	}
	root, err := os.OpenRoot(ws)
	if err != nil {
		return nil, "", err
	}
	defer root.Close()
	dir, err := root.OpenRoot(filepath.Dir(rel)) // its errors name rel, not the host path
	return dir, filepath.Base(rel), err
}

// guard refuses the file fi, opened in dir, when it is one of nanobot's
// own files or lies in one of its folders.
func (s *Source) guard(dir *os.Root, fi fs.FileInfo) error {
	refused := errors.New("it is nanobot's own configuration or database, which file tools cannot reach")
	g := safety.NewGuard(s.protected)
	if g.Holds(fi) {
		return refused
	}
	df, err := dir.Open(".")
	if err != nil {
		return err
	}
	defer df.Close()
	covered, err := g.Covers(df)
	if err != nil {
		return err
	}
	if covered {
		return refused
	}
	return nil
}

// skills scans the workspace's skills and merges the built-in ones. The
// caller holds s.mu.
func (s *Source) skills() []Skill {
	var out []Skill
	seen := map[string]bool{}
	dir := filepath.Join(s.workspace, "skills")
	entries, _ := os.ReadDir(dir) // no skills folder: no workspace skills
	for _, e := range entries {
		if !e.IsDir() && e.Type()&fs.ModeSymlink == 0 || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		sk, ok := s.workspaceSkill(dir, e.Name())
		if !ok {
			continue
		}
		if seen[sk.Name] && sk.Problem == nil {
			sk.Problem = &Problem{File: sk.File, Msg: fmt.Sprintf("another folder of skills/ holds a skill named %q", sk.Name)}
		}
		seen[sk.Name] = true
		out = append(out, sk)
	}
	builtins, _ := fs.ReadDir(s.builtin, "skills")
	for _, e := range builtins {
		p := path.Join("skills", e.Name(), "SKILL.md")
		data, err := fs.ReadFile(s.builtin, p)
		if err != nil {
			continue
		}
		sk := parseSkill(data, e.Name(), BuiltinPrefix+p)
		sk.Path, sk.Builtin = BuiltinPrefix+p, true
		sk.Overridden = seen[sk.Name]
		out = append(out, sk)
	}
	found := map[string]error{} // one PATH search per binary and turn
	lookPath := func(bin string) (string, error) {
		err, ok := found[bin]
		if !ok {
			_, err = s.lookPath(bin)
			found[bin] = err
		}
		return bin, err
	}
	for i := range out {
		if out[i].Problem == nil {
			out[i].check(lookPath, s.getenv)
		}
	}
	slices.SortStableFunc(out, func(a, b Skill) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// workspaceSkill reads skills/<name>/SKILL.md, from the cache when it has
// not changed. ok is false when the folder holds no SKILL.md.
func (s *Source) workspaceSkill(dir, name string) (Skill, bool) {
	abs := filepath.Join(dir, name, "SKILL.md")
	rel := path.Join("skills", name, "SKILL.md")
	fi, err := os.Stat(abs)
	if errors.Is(err, fs.ErrNotExist) {
		delete(s.files, abs)
		return Skill{}, false
	}
	if err == nil {
		if c, ok := s.files[abs]; ok && c.mod.Equal(fi.ModTime()) && c.size == fi.Size() {
			return c.sk, true
		}
	}
	var sk Skill
	data, size, err := s.read(abs, maxSkillBytes+1)
	switch {
	case err != nil:
		sk = Skill{Name: name, File: rel, Problem: &Problem{File: rel, Msg: err.Error()}}
	case size > maxSkillBytes:
		sk = Skill{Name: name, File: rel, Problem: &Problem{File: rel, Msg: fmt.Sprintf("larger than %d KB", maxSkillBytes>>10)}}
	default:
		sk = parseSkill(data, name, rel)
	}
	sk.Path = rel
	if fi != nil {
		s.files[abs] = cached{mod: fi.ModTime(), size: fi.Size(), sk: sk}
	}
	return sk, true
}

// runeOffset is the byte offset of the i-th character of s.
func runeOffset(s string, i int) int {
	for off := range s {
		if i == 0 {
			return off
		}
		i--
	}
	return len(s)
}
