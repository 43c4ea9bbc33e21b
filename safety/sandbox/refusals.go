package sandbox

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/nanobot-go/nanobot/internal/lazyre"
)

// The kernel refuses quietly: a program sees EACCES or EPERM and prints
// its own message. Refusals reads those messages back, so that the model
// is told what the sandbox refused instead of guessing.

var (
	reHelperFailed = lazyre.New(`(?m)^nanobot sandbox: (.+)$`) // ^helperPrefix(.+)$
	// A path and then the error, as most tools print it:
	// "sh: 1: cannot create /x: Permission denied", "cat: /x: Permission denied",
	// "rm: cannot remove '/x': Operation not permitted".
	rePathDenied = lazyre.New(`(?m)([~/][^\s:'"‘’]*|\.\.?/[^\s:'"‘’]*)['"‘’]?\s*:\s*(?:Permission denied|Operation not permitted)`)
	// Python, Ruby and others: "PermissionError: [Errno 13] Permission denied: '/x'".
	reErrnoDenied = lazyre.New(`(?m)(?:Permission denied|Operation not permitted)(?: @ \w+)?\s*(?:-|:)\s*['"]?([~/][^'"\s]*)`)
	reWriteVerb   = lazyre.New(`(?i)cannot (?:create|remove|touch|make|move|overwrite|write|open .* for writing)|can't (?:create|remove|write|open .* for writing)|failed to (?:create|write|remove|unlink)|mkdir|unlink|rename|rmdir|truncate|Read-only|No space|\bwrite\b|\bcreate\b|\bremove\b|\bdelete\b`)
	reSignal      = lazyre.New(`(?m)kill:.*?(?:\((\d+)\) - )?Operation not permitted|kill\s+(\d+)\s+failed: operation not permitted`)
	reConnect     = lazyre.New(`(?im)(?:connect|connection|couldn't connect|failed to connect)[^\n]*(?:Permission denied|Operation not permitted)`)
	reFork        = lazyre.New(`(?i)can(?:'|no)t fork|fork: (?:retry: )?Resource temporarily unavailable|Resource temporarily unavailable.*fork|BlockingIOError|thread creation failed|pthread_create`)
	reMemory      = lazyre.New(`(?i)MemoryError|Cannot allocate memory|out of memory|bad_alloc|heap out of memory|failed to allocate|memory exhausted|Allowed memory size`)
	reFileSize    = lazyre.New(`(?i)file size limit exceeded|File too large`)
	reCPU         = lazyre.New(`(?i)CPU time limit exceeded`)
	// What the seccomp filter and the PID namespace refuse: another
	// process's limits, priority or memory, and sockets.
	reOtherProcess = lazyre.New(`(?im)^[^\n]*(?:prlimit|renice|taskset|ionice|ptrace|strace|gdb|attach)[^\n]*(?:Operation not permitted|No such process)`)
	reSocket       = lazyre.New(`(?im)(?:socket|connect)[^\n]*Permission denied|\[Errno 13\] Permission denied$`)
)

// Refusals names what the sandbox refused, judging by the output of a
// command run in dir: paths outside the allowed ones that a program could
// not open, signals to processes outside, connections the network rule
// forbids, limits reached, or the helper's own failure. It returns nothing
// for commands that ran unconfined.
func (s *Sandbox) Refusals(output, dir string) []string {
	if s.status.Mode == ModeOff || output == "" {
		return nil
	}
	var notes []string
	add := func(n string) {
		for _, x := range notes {
			if x == n {
				return
			}
		}
		if len(notes) < 6 {
			notes = append(notes, n)
		}
	}
	for _, m := range reHelperFailed.FindAllStringSubmatch(output, -1) {
		switch why, stopped := strings.CutPrefix(m[1], stoppedPrefix); {
		case stopped:
			add("the sandbox stopped the command: " + why)
		case strings.HasPrefix(m[1], notEnded):
			add("the sandbox: " + m[1])
		default:
			add("the sandbox could not be set up, so nothing ran: " + m[1])
		}
	}
	if s.status.Landlock {
		for _, line := range strings.Split(output, "\n") {
			for _, re := range []*lazyre.Regexp{rePathDenied, reErrnoDenied} {
				for _, m := range re.FindAllStringSubmatch(line, -1) {
					if n := s.pathRefusal(m[1], dir, line); n != "" {
						add(n)
					}
				}
			}
		}
		for _, m := range reSignal.FindAllStringSubmatch(output, -1) {
			n := "signal to a process outside the sandbox refused by the sandbox"
			if pid := m[1] + m[2]; pid != "" {
				n += ": pid " + pid
			}
			add(n)
		}
		if s.status.Network != NetworkAny && reConnect.MatchString(output) {
			add(fmt.Sprintf("network connection refused by the sandbox (tools.exec.network: %s)", s.status.Network))
		}
	}
	if f := s.status.Features; f.Seccomp || f.PIDNamespace {
		if reOtherProcess.MatchString(output) {
			add("other processes are out of a command's reach in the sandbox: their limits, priority, memory and signals")
		}
		if f.Seccomp && reSocket.MatchString(output) {
			add("socket refused by the sandbox: Unix domain sockets always, internet sockets with tools.exec.network: none")
		}
	}
	l := s.status.Limits
	if l.Processes > 0 && reFork.MatchString(output) {
		add(fmt.Sprintf("process limit reached: at most %d processes (tools.exec.limits.processes)", l.Processes))
	}
	if l.Memory > 0 && reMemory.MatchString(output) {
		add(fmt.Sprintf("memory limit reached: %s for the command (tools.exec.limits.memory)", formatSize(l.Memory)))
	}
	if l.FileSize > 0 && reFileSize.MatchString(output) {
		add("file size limit reached (tools.exec.limits.file_size)")
	}
	if l.CPUTime > 0 && reCPU.MatchString(output) {
		add("cpu time limit reached (tools.exec.limits.cpu_time)")
	}
	return notes
}

// pathRefusal describes a refused path, or returns "" when the sandbox
// allows it (the refusal came from file permissions).
func (s *Sandbox) pathRefusal(p, dir, line string) string {
	if strings.HasPrefix(p, "~") {
		p = s.home + p[1:]
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	p = filepath.Clean(p)
	if strings.HasPrefix(p, "/proc/") || strings.HasPrefix(p, "/dev/") && !strings.HasPrefix(p, "/dev/shm") {
		if strings.HasPrefix(p, "/proc/") {
			return "access to another process refused by the sandbox: " + p
		}
		return ""
	}
	hidden := false
	for _, h := range s.hide {
		hidden = hidden || within(p, h)
	}
	writable := false
	for _, w := range s.write {
		writable = writable || within(p, w)
	}
	if writable && !hidden {
		return "" // the sandbox allows it: file permissions refused it
	}
	readable := false
	for _, r := range s.read {
		readable = readable || within(p, r)
	}
	switch {
	case hidden:
		return "access to nanobot's own files refused by the sandbox: " + p
	case readable || reWriteVerb.MatchString(line):
		return "write outside the workspace refused by the sandbox: " + p
	}
	return "read outside the allowed paths refused by the sandbox: " + p
}
