// Package sandbox confines the shell commands of the exec tool with the
// kernel's Landlock security module and resource limits, underneath the
// command filter: a filter reads text and can be phrased around, the
// kernel cannot.
//
// The daemon itself is never restricted. At the first command it starts
// its own binary again as a helper (see RunHelper), which applies the
// limits, restricts itself with Landlock and then starts the commands the
// daemon sends it: each command and everything it starts inherit the
// restrictions and cannot leave them. Starting the helper once, rather
// than once per command, keeps the cost of a confined command close to
// that of a plain one.
package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/nanobot-go/nanobot/safety"
)

// Mode is tools.exec.sandbox.
type Mode string

// The modes of the sandbox.
const (
	ModeAuto     Mode = "auto"     // Landlock when the kernel offers it, else the filter alone
	ModeLandlock Mode = "landlock" // Landlock or nothing: New fails without it
	ModeOff      Mode = "off"      // the filter alone
)

// Network is tools.exec.network.
type Network string

// What commands may connect to, where the kernel can tell (Landlock ABI 4).
const (
	NetworkAny  Network = "any"  // everything (the filter judges destinations)
	NetworkWeb  Network = "web"  // TCP ports 80 and 443 only
	NetworkNone Network = "none" // nothing
)

// Limits are the resource limits of a command and what it starts; zero
// means unlimited.
type Limits struct {
	// Memory bounds the private memory of a command's processes together,
	// and the data (RLIMIT_DATA) of each.
	Memory int64 `json:"memory,omitempty"`
	// Processes bounds the processes a command runs at once, and the
	// processes and threads of the user (RLIMIT_NPROC).
	Processes int           `json:"processes,omitempty"`
	FileSize  int64         `json:"file_size,omitempty"` // bytes per file written (RLIMIT_FSIZE)
	CPUTime   time.Duration `json:"cpu_time,omitempty"`  // per process (RLIMIT_CPU)
	// DiskWritten bounds the bytes a command as a whole writes to files.
	DiskWritten int64 `json:"disk_written,omitempty"`
}

// Config configures a Sandbox.
type Config struct {
	Mode      Mode
	Workspace string // read and written
	// StateDir holds the private home directory and temporary directory of
	// commands; it is created when missing.
	StateDir string
	Read     []string // more paths to read (tools.exec.sandbox_paths.read)
	Write    []string // more paths to read and write (tools.exec.sandbox_paths.write)
	// Hide lists paths never reachable, even where an allowed tree holds
	// them: the bot's config, database, data directory and binary.
	Hide    []string
	Shell   string // the shell commands run with; its directory is readable
	Network Network
	Limits  Limits
	// Helper is the executable that calls RunHelper first thing; the
	// running executable when empty.
	Helper string
	// ABI is the Landlock ABI the kernel offers (see ABI); injectable so
	// that a kernel without Landlock can be simulated.
	ABI int
	// Credential is the user commands run as; nil runs them as the
	// daemon's user.
	Credential *syscall.Credential
	// Disable lists confinements not to use even where the kernel offers
	// them (tests use it to try the ones underneath).
	Disable Features
}

// ErrUnavailable is returned by New in ModeLandlock when the kernel offers
// no Landlock.
var ErrUnavailable = errors.New("landlock is not available")

// Sandbox runs commands confined. It is safe for concurrent use.
type Sandbox struct {
	status    Status
	helper    string
	workspace string
	home      string
	tmp       string
	spec      string // the helper's instructions, JSON
	read      []string
	write     []string
	hide      []string
	cred      *syscall.Credential
	limits    Limits // memory and cpu time are set per command

	mu     sync.Mutex
	sp     *spawner // the running helper; nil until the first command
	jobs   int      // commands running
	closed bool
}

// Status says what the sandbox does, for logs and status reports.
type Status struct {
	Mode     Mode
	Landlock bool   // commands run under Landlock
	ABI      int    // the kernel's Landlock ABI (0: none)
	Reason   string // why Landlock is not used, when it is not
	Network  Network
	Limits   Limits
	Read     []string // the owner's extra paths
	Write    []string
	Notes    []string // what is weaker than configured, and why
	// Features are the confinements beside Landlock that the helper could
	// use; known once it has started (see Probe).
	Features Features
}

// Summary renders the status on one line.
func (st Status) Summary() string {
	switch {
	case st.Mode == ModeOff:
		return "off (tools.exec.sandbox: off): commands run with the filter alone"
	case !st.Landlock:
		s := "NOT AVAILABLE (" + st.Reason + "): commands run with the filter alone and resource limits"
		if f := st.Features.String(); f != "" {
			s += "; " + f
		}
		return s
	}
	s := fmt.Sprintf("landlock ABI %d, network %s, %s", st.ABI, st.Network, st.Limits)
	if f := st.Features.String(); f != "" {
		s += "; " + f
	}
	if len(st.Notes) > 0 {
		s += "; " + strings.Join(st.Notes, "; ")
	}
	return s
}

// String names the confinements in use per command, and what is missing;
// empty before the helper has started.
func (f Features) String() string {
	var on []string
	if f.PIDNamespace {
		on = append(on, "PID namespace")
	}
	if f.UserNamespace {
		on = append(on, "user namespace")
	}
	if f.NetNamespace {
		on = append(on, "network namespace")
	}
	if f.Seccomp {
		on = append(on, "seccomp filter")
	}
	if len(on) == 0 && len(f.Why) == 0 {
		return ""
	}
	s := "per command: " + strings.Join(on, ", ")
	if len(on) == 0 {
		s = "per command: resource limits only"
	}
	if len(f.Why) > 0 {
		s += " (" + strings.Join(f.Why, "; ") + ")"
	}
	return s
}

// formatSize writes a byte count the way the config does.
func formatSize(n int64) string {
	switch {
	case n == 0:
		return "unlimited"
	case n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

func (l Limits) String() string {
	size := formatSize
	procs, cpu := "unlimited", "unlimited"
	if l.Processes > 0 {
		procs = fmt.Sprint(l.Processes)
	}
	if l.CPUTime > 0 {
		cpu = l.CPUTime.String()
	}
	return fmt.Sprintf("memory %s, processes %s, file size %s, written %s, cpu time %s", size(l.Memory), procs, size(l.FileSize), size(l.DiskWritten), cpu)
}

// ABI returns the Landlock ABI version the running kernel offers, 0 when
// it offers none (an old kernel, Landlock not enabled at boot, or a
// seccomp profile that refuses the system calls).
func ABI() int {
	v, err := llsys.LandlockGetABIVersion()
	if err != nil || v < 0 {
		return 0
	}
	return v
}

// New checks cfg against what the kernel offers. In ModeLandlock it fails
// with an error wrapping ErrUnavailable when there is no Landlock; in
// ModeAuto it falls back to resource limits alone and says so in Status.
//
// Unless the mode is off, New also makes the calling process (the daemon)
// non-dumpable: Landlock does not keep a confined command from reading
// another process's /proc files such as environ, which for the daemon
// hold its credentials; the kernel refuses them for a non-dumpable
// process to anyone without CAP_SYS_PTRACE, which the commands of a root
// daemon lose too.
func New(cfg Config) (*Sandbox, error) {
	if cfg.Network == "" {
		cfg.Network = NetworkAny
	}
	st := Status{Mode: cfg.Mode, ABI: cfg.ABI, Network: cfg.Network, Limits: cfg.Limits, Read: cfg.Read, Write: cfg.Write}
	s := &Sandbox{status: st}
	switch cfg.Mode {
	case ModeOff:
		s.status.Network = NetworkAny
		return s, nil
	case ModeAuto, ModeLandlock:
	default:
		return nil, fmt.Errorf("sandbox mode %q: want auto, landlock or off", cfg.Mode)
	}
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return nil, fmt.Errorf("sandbox: protect the daemon's process: %w", err)
	}
	if err := s.settle(cfg); err != nil {
		return nil, err
	}
	if note := processNote(cfg); note != "" {
		s.status.Notes = append(s.status.Notes, note)
	}
	s.helper = cfg.Helper
	if s.helper == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("sandbox helper: %w", err)
		}
		s.helper = exe
	}
	s.workspace, s.cred, s.limits = cfg.Workspace, cfg.Credential, cfg.Limits
	s.home = filepath.Join(cfg.StateDir, "home")
	s.tmp = filepath.Join(cfg.StateDir, "tmp")
	if !filepath.IsAbs(cfg.StateDir) || !filepath.IsAbs(cfg.Workspace) {
		return nil, fmt.Errorf("sandbox: state directory %q and workspace %q must be absolute", cfg.StateDir, cfg.Workspace)
	}
	if err := s.encodeSpec(cfg); err != nil {
		return nil, err
	}
	return s, nil
}

// settle decides from the kernel's Landlock ABI whether commands are confined and which network
// rule holds; in ModeLandlock what the kernel lacks is an error wrapping ErrUnavailable.
func (s *Sandbox) settle(cfg Config) error {
	if cfg.ABI < 1 {
		if cfg.Mode == ModeLandlock {
			return fmt.Errorf("%w: the kernel offers no Landlock ABI", ErrUnavailable)
		}
		s.status.Reason = "the kernel offers no Landlock"
	} else {
		s.status.Landlock = true
	}
	// "none" is the seccomp filter's or a network namespace's to enforce;
	// "web" needs Landlock's port rules.
	if cfg.Network == NetworkWeb && (!s.status.Landlock || cfg.ABI < 4) {
		if cfg.Mode == ModeLandlock {
			return fmt.Errorf("%w: tools.exec.network: %s needs Landlock ABI 4, the kernel offers %d", ErrUnavailable, cfg.Network, cfg.ABI)
		}
		s.status.Notes = append(s.status.Notes, fmt.Sprintf("network %s needs Landlock ABI 4, so network access stays open", cfg.Network))
		s.status.Network = NetworkAny
	}
	return nil
}

// processNote warns when the process limit will not bind the way it reads, or "".
func processNote(cfg Config) string {
	switch {
	case cfg.Limits.Processes > 0 && os.Geteuid() == 0 && cfg.Credential == nil:
		return "the kernel's per-user process limit does not bind root: only the command's own count does"
	case cfg.Limits.Processes > 0:
		if n := userTasks(os.Getuid()); n > cfg.Limits.Processes/2 {
			return fmt.Sprintf("the process limit (%d) counts every process and thread of this user, who runs %d already: raise it or run nanobot as a user of its own", cfg.Limits.Processes, n)
		}
	}
	return ""
}

// encodeSpec writes the helper's instructions for every command.
func (s *Sandbox) encodeSpec(cfg Config) error {
	// The helper itself, a Go program that lives long, takes only the
	// limits its children inherit at fork; memory and cpu time are set on
	// each command as it starts.
	sp := spec{Limits: Limits{Processes: cfg.Limits.Processes, FileSize: cfg.Limits.FileSize},
		Exe: canonicalPath(s.helper), ABI: cfg.ABI, Network: s.status.Network, Disable: cfg.Disable,
		Shell: cfg.Shell}
	if s.status.Landlock {
		sp.Landlock = true
		sp.Read = append(systemPaths(), cfg.Read...)
		if cfg.Shell != "" {
			sp.Read = append(sp.Read, filepath.Dir(cfg.Shell))
		}
		sp.Devices = devices
		sp.Write = append([]string{cfg.Workspace, s.home, s.tmp}, cfg.Write...)
		sp.Internal = 3
		sp.Hide = cfg.Hide
		sp.canonical()
		s.read, s.write, s.hide = sp.Read, sp.Write, sp.Hide
	}
	b, err := json.Marshal(sp)
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	s.spec = string(b)
	return nil
}

// Status reports what the sandbox does.
func (s *Sandbox) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status
}

// EnvSpec is the variable that turns the executable into the sandbox
// helper; it holds the helper's instructions.
const EnvSpec = "NANOBOT_SANDBOX"

// jobEnv is the environment of a command: the caller's, with a private
// HOME and TMPDIR under Landlock (the real ones are out of reach).
func (s *Sandbox) jobEnv(env []string) []string {
	out := make([]string, 0, len(env)+2)
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case name == EnvSpec:
			continue
		case s.status.Landlock && (name == "HOME" || name == "TMPDIR" || strings.HasPrefix(name, "XDG_") && strings.HasSuffix(name, "_HOME")):
			continue
		}
		out = append(out, kv)
	}
	if s.status.Landlock {
		out = append(out, "HOME="+s.home, "TMPDIR="+s.tmp)
	}
	return out
}

// systemPaths are what programs need to run: the system's software and
// the few system files they read (libraries, certificates, time zones,
// name resolution, the user database). Missing ones are skipped.
func systemPaths() []string {
	return []string{
		"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/nix/store", "/snap", "/busybox",
		"/proc", "/sys",
		"/etc/ssl", "/etc/ca-certificates", "/etc/ca-certificates.conf", "/etc/pki", "/etc/crypto-policies",
		"/etc/localtime", "/etc/timezone", "/etc/zoneinfo",
		"/etc/resolv.conf", "/etc/hosts", "/etc/host.conf", "/etc/nsswitch.conf", "/etc/gai.conf", "/etc/services",
		"/etc/protocols", "/etc/networks", "/etc/hostname", "/run/systemd/resolve", "/run/resolvconf",
		"/etc/passwd", "/etc/group",
		"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives",
		"/etc/locale.alias", "/etc/locale.conf", "/etc/default/locale", "/etc/environment",
		"/etc/os-release", "/etc/lsb-release", "/etc/debian_version", "/etc/alpine-release", "/etc/redhat-release",
		"/etc/mime.types", "/etc/magic", "/etc/gitconfig", "/etc/inputrc", "/etc/terminfo", "/etc/vim", "/etc/profile",
		"/etc/bash.bashrc", "/etc/shells", "/etc/login.defs", "/etc/ssh/ssh_config", "/etc/ssh/ssh_config.d",
		"/etc/ssh/ssh_known_hosts", "/etc/wgetrc", "/etc/mailcap", "/etc/fonts", "/etc/papersize", "/etc/manpath.config",
		"/etc/perl", "/etc/php", "/etc/python3", "/etc/java-17-openjdk", "/etc/java-21-openjdk", "/etc/R", "/etc/gprofng.rc",
	}
}

// devices are the device files programs open for reading and writing.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"}

// spec is what the helper does, passed in EnvSpec.
type spec struct {
	Landlock bool     `json:"landlock,omitempty"`
	Read     []string `json:"read,omitempty"`
	Write    []string `json:"write,omitempty"`
	// Internal counts the first Write paths (workspace, home, temporary
	// directory), kept even when they lie inside a hidden path.
	Internal int      `json:"internal,omitempty"`
	Devices  []string `json:"dev,omitempty"`
	Hide     []string `json:"hide,omitempty"`
	Network  Network  `json:"net,omitempty"`
	Limits   Limits   `json:"limits"`
	Exe      string   `json:"exe"` // the executable launchers run
	ABI      int      `json:"abi,omitempty"`
	Disable  Features `json:"disable"`
	Shell    string   `json:"shell,omitempty"`
}

// canonicalPath resolves the symbolic links of p where it can.
func canonicalPath(p string) string {
	if r, err := safety.Resolve(p); err == nil {
		return r
	}
	return p
}

// canonical resolves symbolic links in every path the daemon can see now,
// so that hiding compares the paths the kernel compares.
func (sp *spec) canonical() {
	canon := func(ps []string) []string {
		out := make([]string, 0, len(ps))
		for _, p := range ps {
			if p == "" {
				continue
			}
			p = filepath.Clean(p)
			if r, err := safety.Resolve(p); err == nil {
				p = r
			}
			if !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
		return out
	}
	sp.Read, sp.Hide = canon(sp.Read), canon(sp.Hide)
	internal := canon(sp.Write[:sp.Internal])
	sp.Internal = len(internal)
	sp.Write = append(internal, canon(sp.Write[sp.Internal:])...)
}

// userTasks counts the processes and threads of uid, as RLIMIT_NPROC
// does.
func userTasks(uid int) int {
	dirs, _ := os.ReadDir("/proc")
	n := 0
	for _, d := range dirs {
		if d.Name()[0] < '0' || d.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + d.Name() + "/status")
		if err != nil {
			continue
		}
		var owner, threads int
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "Uid:" {
				fmt.Sscan(f[1], &owner)
			} else if len(f) == 2 && f[0] == "Threads:" {
				fmt.Sscan(f[1], &threads)
			}
		}
		if owner == uid {
			n += threads
		}
	}
	return n
}

// within reports whether p is dir or lies under it.
func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}
