package safety

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// fileID is a file's identity: its device and inode.
type fileID struct{ dev, ino uint64 }

// entryID is a directory entry's identity: its directory and name.
type entryID struct {
	dir  fileID
	name string
}

func idOf(fi fs.FileInfo) (fileID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)}, true
}

// Guard knows protected files (nanobot's configuration and database, with
// the database's -wal, -shm and -journal) by identity, so that what an
// operation actually opened, or is about to replace, can be compared with
// them whatever path led there, hard links included. Paths are only looked
// at when the guard is made; the answers come from the descriptors and
// directories the caller holds open.
type Guard struct {
	files   map[fileID]bool
	entries map[entryID]bool // names that must not be created or replaced
	dirs    map[fileID]bool  // protected directories: nothing beneath them
}

// NewGuard takes the identities of the protected files as they are now,
// both as named and with symlinks resolved, and of the directory entries
// that hold them or would hold their journals.
func NewGuard(protected []string) Guard {
	g := Guard{files: map[fileID]bool{}, entries: map[entryID]bool{}, dirs: map[fileID]bool{}}
	for _, p := range protected {
		if p == "" {
			continue
		}
		cands := []string{filepath.Clean(p)}
		if abs, err := filepath.Abs(p); err == nil {
			if r, err := Resolve(abs); err == nil {
				cands = append(cands, r)
			}
		}
		for _, c := range cands {
			dir, dirErr := os.Stat(filepath.Dir(c))
			for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
				if fi, err := os.Stat(c + suffix); err == nil {
					if id, ok := idOf(fi); ok && fi.IsDir() {
						g.dirs[id] = true
					} else if ok {
						g.files[id] = true
					}
				}
				if dirErr == nil {
					if id, ok := idOf(dir); ok {
						g.entries[entryID{dir: id, name: filepath.Base(c) + suffix}] = true
					}
				}
			}
		}
	}
	return g
}

// Holds reports whether fi, taken from an open descriptor (or through a
// directory held open), is one of the protected files. A file whose
// identity cannot be told counts as protected.
func (g Guard) Holds(fi fs.FileInfo) bool {
	id, ok := idOf(fi)
	return !ok || g.files[id]
}

// Names reports whether the entry name of the directory dir (its FileInfo
// taken from the directory held open) is where a protected file lives or
// would live, so that it must not be created or replaced.
func (g Guard) Names(dir fs.FileInfo, name string) bool {
	id, ok := idOf(dir)
	return !ok || g.entries[entryID{dir: id, name: name}]
}

// maxAncestors bounds the walk up from a directory to the file system's root.
const maxAncestors = 4096

// Covers reports whether the directory dir, held open, is one of the
// protected directories (a backup folder) or lies beneath one. It walks up
// from the descriptor through "..", so the answer is about the directory
// dir is, not about a path that named it.
func (g Guard) Covers(dir *os.File) (bool, error) {
	if len(g.dirs) == 0 {
		return false, nil
	}
	cur := dir
	defer func() {
		if cur != dir {
			_ = cur.Close()
		}
	}()
	for range maxAncestors {
		fi, err := cur.Stat()
		if err != nil {
			return false, err
		}
		id, ok := idOf(fi)
		if !ok || g.dirs[id] {
			return true, nil
		}
		parent, err := openParent(cur)
		if err != nil {
			return false, err
		}
		pi, err := parent.Stat()
		if err != nil {
			_ = parent.Close()
			return false, err
		}
		if os.SameFile(fi, pi) { // the root: its parent is itself
			_ = parent.Close()
			return false, nil
		}
		if cur != dir {
			_ = cur.Close()
		}
		cur = parent
	}
	return true, nil // deeper than any real tree: refuse
}

// openParent opens the parent of the directory dir.
func openParent(dir *os.File) (*os.File, error) {
	conn, err := dir.SyscallConn()
	if err != nil {
		return nil, err
	}
	fd, opErr := -1, error(nil)
	if err := conn.Control(func(d uintptr) {
		fd, opErr = syscall.Openat(int(d), "..", syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	}); err != nil {
		return nil, err
	}
	if opErr != nil {
		return nil, &fs.PathError{Op: "openat", Path: "..", Err: opErr}
	}
	return os.NewFile(uintptr(fd), ".."), nil
}
