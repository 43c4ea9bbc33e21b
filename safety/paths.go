package safety

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Errors returned by Confine, matched with errors.Is.
var (
	ErrOutsideWorkspace = errors.New("path is outside the workspace")
	ErrProtected        = errors.New("path is protected")
)

// maxLinks bounds how many symbolic links one resolution may follow.
const maxLinks = 40

// Confine resolves path (relative paths against workspace) the way the
// kernel would, following symbolic links element by element: the existing
// prefix is resolved, dangling links are followed to their target and the
// missing rest is taken literally. It returns the resolved path, or an error
// wrapping ErrOutsideWorkspace when it leaves workspace, or ErrProtected when
// it names one of the protected paths (or lies under one).
func Confine(workspace, path string, protected []string) (string, error) {
	if !filepath.IsAbs(workspace) {
		return "", fmt.Errorf("confine: workspace %q is not absolute", workspace)
	}
	if path == "" {
		return "", fmt.Errorf("confine: empty path")
	}
	ws, err := Resolve(workspace)
	if err != nil {
		return "", fmt.Errorf("confine: resolve workspace: %w", err)
	}
	full := path
	if !filepath.IsAbs(full) {
		full = ws + "/" + path
	}
	real, err := Resolve(full)
	if err != nil {
		return "", fmt.Errorf("confine %q: %w", path, err)
	}
	for _, pr := range protected {
		if pr == "" {
			continue
		}
		cands := []string{filepath.Clean(pr)}
		if r, err := Resolve(pr); err == nil {
			cands = append(cands, r)
		}
		for _, c := range cands {
			if within(real, c) || within(filepath.Clean(full), c) {
				return "", fmt.Errorf("confine %q: %w", path, ErrProtected)
			}
		}
	}
	if !within(real, ws) {
		return "", fmt.Errorf("confine %q: %w", path, ErrOutsideWorkspace)
	}
	return real, nil
}

// within reports whether p is dir or lies under it (both clean, absolute).
func within(p, dir string) bool {
	if dir == "/" {
		return true
	}
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// Resolve resolves symbolic links in an absolute path element by
// element, handling ".." after each resolved prefix as the kernel does.
// Elements that do not exist are kept as written.
func Resolve(p string) (string, error) {
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("resolve %q: not absolute", p)
	}
	parts := strings.Split(p, "/")
	resolved := "/"
	links := 0
	for i := 0; i < len(parts); i++ {
		part := parts[i]
		switch part {
		case "", ".":
			continue
		case "..":
			resolved = filepath.Dir(resolved)
			continue
		}
		next := filepath.Join(resolved, part)
		fi, err := os.Lstat(next)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
				return filepath.Join(append([]string{resolved}, parts[i:]...)...), nil
			}
			return "", fmt.Errorf("resolve %q: %w", p, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			resolved = next
			continue
		}
		links++
		if links > maxLinks {
			return "", fmt.Errorf("resolve %q: too many symbolic links", p)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", fmt.Errorf("resolve %q: %w", p, err)
		}
		if !filepath.IsAbs(target) {
			target = resolved + "/" + target
		}
		parts = append(strings.Split(target, "/"), parts[i+1:]...)
		resolved = "/"
		i = -1
	}
	return resolved, nil
}
