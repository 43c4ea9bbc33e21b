package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/agent/tools"
	"github.com/nanobot-go/nanobot/config"
	"github.com/nanobot-go/nanobot/daemon"
)

// An image without a shell (distroless without busybox) fails every exec
// command with "fork/exec /bin/sh: no such file"; status must list it.
func TestShellProblem(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "bin", "sh")
	tests := []struct {
		name  string
		exec  bool
		shell string
		want  []string // in the problem; none: no problem
	}{
		{"no shell", true, missing, []string{"tools.exec:", missing, "no such file", "every command of the exec tool fails", "tools.exec.enabled: false"}},
		{"the shell commands run with", true, tools.Shell(), nil},
		{"exec off needs no shell", false, missing, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.Tools.Exec.Enabled = tt.exec
			got := daemon.ShellProblem(cfg, tt.shell)
			if (got != "") != (len(tt.want) > 0) {
				t.Fatalf("daemon.ShellProblem(exec %v, %q) = %q, want a problem: %v", tt.exec, tt.shell, got, len(tt.want) > 0)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("daemon.ShellProblem(%q) = %q, lacks %q", tt.shell, got, w)
				}
			}
		})
	}
}
