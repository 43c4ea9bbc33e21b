package prompt

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

//go:embed starter
var starterFS embed.FS

// StarterNames are the files WriteStarters writes.
var StarterNames = []string{"AGENTS.md", "USER.md", "HEARTBEAT.md"}

// WriteStarters writes short starter versions of the workspace's AGENTS.md,
// USER.md and HEARTBEAT.md, never replacing a file that exists. It returns
// the names of the files it wrote.
func WriteStarters(workspace string) ([]string, error) {
	var written []string
	for _, name := range StarterNames {
		data, err := fs.ReadFile(starterFS, "starter/"+name)
		if err != nil {
			return written, err
		}
		f, err := os.OpenFile(filepath.Join(workspace, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return written, fmt.Errorf("write %s: %w", name, err)
		}
		_, err = f.Write(data)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return written, fmt.Errorf("write %s: %w", name, err)
		}
		written = append(written, name)
	}
	return written, nil
}
