package sandbox

import (
	"errors"
	"fmt"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// A seccomp filter is the one confinement every Linux kernel since 3.5
// offers, containers included (Docker's default profile lets a process
// filter itself). Each command runs under one that keeps it from reaching
// any process but its own: no resource limits, priorities, tracing or
// signals aimed at another process by number, no signal by file owner, no
// io_uring (its socket and open operations pass by the system calls the
// filter reads), and only the sockets the network setting allows. Unix
// domain sockets are refused whatever the setting: a path or an abstract
// name can lead to a Docker engine, systemd or a database run as another
// user; socketpair, which a pipeline's programs use among themselves,
// stays.

// auditArch is the seccomp architecture of the running binary; the filter
// refuses every system call made under another one (x32, or 32-bit calls
// on a 64-bit kernel), whose numbers it does not know.
func auditArch() (uint32, bool) {
	switch runtime.GOARCH {
	case "amd64":
		return unix.AUDIT_ARCH_X86_64, true
	case "arm64":
		return unix.AUDIT_ARCH_AARCH64, true
	case "arm":
		return unix.AUDIT_ARCH_ARM, true
	case "riscv64":
		return unix.AUDIT_ARCH_RISCV64, true
	}
	return 0, false
}

// The offsets of struct seccomp_data.
const (
	seccompNr   = 0
	seccompArch = 4
	seccompArgs = 16 // args[0]; each is 8 bytes, the low half first (little-endian only)
)

// The ioctls that name a process to send SIGIO to.
const (
	fioSetOwn = 0x8901
	siocSPgrp = 0x8902
)

// x32Bit marks the system calls of the x32 ABI on amd64.
const x32Bit = 0x40000000

// argTest says when a system call is refused, judging one argument by its
// low 32 bits (the kernel reads pids, flags and socket domains as int).
type argTest struct {
	arg  int
	kind testKind
	vals []uint32
	mask uint32
	// when, if set, limits the test to calls whose argument when.arg is
	// when.vals[0].
	when *argTest
}

type testKind int

const (
	refuseNonZero testKind = iota // refuse unless the argument is 0 (the caller itself)
	refuseIn                      // refuse when the argument is one of vals
	refuseNotIn                   // refuse unless the argument is one of vals
	refuseMasked                  // refuse when argument&mask is one of vals
)

// sysRule refuses one system call with errno: always, or when any of its
// tests holds.
type sysRule struct {
	nr    uintptr
	errno syscall.Errno
	tests []argTest
}

// filterSpec is what a command's filter allows.
type filterSpec struct {
	Network Network
	// Protect are process ids no signal may name (the daemon, the helper,
	// their groups), for when no PID namespace hides them.
	Protect []int
	// Isolated: a PID namespace or a Landlock signal scope already keeps
	// signals inside the command, so that a pidfd or a thread id cannot
	// reach past it.
	Isolated bool
}

// rules lists the refusals of fs.
func (fs filterSpec) rules() []sysRule {
	var protect []uint32
	if len(fs.Protect) > 0 {
		protect = append(protect, ^uint32(0)) // kill(-1): every process the caller may signal
	}
	for _, p := range fs.Protect {
		if p > 0 {
			protect = append(protect, uint32(p), uint32(-p))
		}
	}
	eperm := syscall.EPERM
	other := func(arg int) []argTest { return []argTest{{arg: arg, kind: refuseNonZero}} }
	rs := []sysRule{
		{nr: unix.SYS_PTRACE, errno: eperm},
		{nr: unix.SYS_PROCESS_VM_READV, errno: eperm},
		{nr: unix.SYS_PROCESS_VM_WRITEV, errno: eperm},
		{nr: unix.SYS_PIDFD_GETFD, errno: eperm},
		{nr: unix.SYS_KILL, errno: eperm, tests: []argTest{{arg: 0, kind: refuseIn, vals: protect}}},
		{nr: unix.SYS_TGKILL, errno: eperm, tests: []argTest{{arg: 0, kind: refuseIn, vals: protect}}},
		{nr: unix.SYS_RT_SIGQUEUEINFO, errno: eperm, tests: []argTest{{arg: 0, kind: refuseIn, vals: protect}}},
		{nr: unix.SYS_RT_TGSIGQUEUEINFO, errno: eperm, tests: []argTest{{arg: 0, kind: refuseIn, vals: protect}}},
		{nr: unix.SYS_PIDFD_OPEN, errno: eperm, tests: []argTest{{arg: 0, kind: refuseIn, vals: protect}}},
		// SIGIO to a process named as a file's owner: F_SETOWN_EX takes a
		// structure the filter cannot read.
		{nr: unix.SYS_FCNTL, errno: eperm, tests: []argTest{
			{arg: 1, kind: refuseIn, vals: []uint32{unix.F_SETOWN_EX}},
			{arg: 2, kind: refuseIn, vals: protect, when: &argTest{arg: 1, vals: []uint32{unix.F_SETOWN}}},
		}},
		{nr: unix.SYS_IOCTL, errno: eperm, tests: []argTest{{arg: 1, kind: refuseIn, vals: []uint32{fioSetOwn, siocSPgrp}}}},
		{nr: unix.SYS_PRLIMIT64, errno: eperm, tests: other(0)},
		{nr: unix.SYS_SETPRIORITY, errno: eperm, tests: other(1)},
		{nr: unix.SYS_IOPRIO_SET, errno: eperm, tests: other(1)},
		{nr: unix.SYS_SCHED_SETAFFINITY, errno: eperm, tests: other(0)},
		{nr: unix.SYS_SCHED_SETSCHEDULER, errno: eperm, tests: other(0)},
		{nr: unix.SYS_SCHED_SETPARAM, errno: eperm, tests: other(0)},
		{nr: unix.SYS_SCHED_SETATTR, errno: eperm, tests: other(0)},
		{nr: unix.SYS_MIGRATE_PAGES, errno: eperm, tests: other(0)},
		{nr: unix.SYS_MOVE_PAGES, errno: eperm, tests: other(0)},
		{nr: unix.SYS_IO_URING_SETUP, errno: syscall.ENOSYS},
		{nr: unix.SYS_IO_URING_ENTER, errno: syscall.ENOSYS},
		{nr: unix.SYS_IO_URING_REGISTER, errno: syscall.ENOSYS},
	}
	if !fs.Isolated {
		// A pidfd can come from opening /proc/<pid>, which no rule sees,
		// and tkill names a thread of any process (tgkill names the
		// process too).
		rs = append(rs, sysRule{nr: unix.SYS_PIDFD_SEND_SIGNAL, errno: eperm}, sysRule{nr: unix.SYS_TKILL, errno: eperm})
	}
	rs = append(rs, archRules(protect)...)
	return append(rs, fs.socketRule())
}

// socketRule allows the socket families of the network setting: netlink
// always (programs read their interfaces through it, and changing them
// needs a capability commands do not have), the internet with "any" and
// "web" (raw sockets and packet sockets only with "any": they pass by the
// port rule of "web"), and nothing else.
func (fs filterSpec) socketRule() sysRule {
	families := []uint32{unix.AF_NETLINK}
	var tests []argTest
	switch fs.Network {
	case NetworkNone:
	case NetworkWeb:
		families = append(families, unix.AF_INET, unix.AF_INET6)
		tests = append(tests, argTest{arg: 1, kind: refuseMasked, mask: 0xf, vals: []uint32{unix.SOCK_RAW, unix.SOCK_PACKET}})
	default:
		families = append(families, unix.AF_INET, unix.AF_INET6, unix.AF_PACKET)
	}
	tests = append([]argTest{{arg: 0, kind: refuseNotIn, vals: families}}, tests...)
	return sysRule{nr: unix.SYS_SOCKET, errno: syscall.EACCES, tests: tests}
}

// program compiles the rules to classic BPF for arch.
func program(arch uint32, rules []sysRule) ([]bpf.Instruction, error) {
	ret := func(v uint32) bpf.Instruction { return bpf.RetConstant{Val: v} }
	allow := ret(unix.SECCOMP_RET_ALLOW)
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: seccompArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: arch, SkipTrue: 1},
		ret(unix.SECCOMP_RET_ERRNO | uint32(syscall.ENOSYS)),
	}
	if arch == unix.AUDIT_ARCH_X86_64 {
		prog = append(prog,
			bpf.LoadAbsolute{Off: seccompNr, Size: 4},
			bpf.JumpIf{Cond: bpf.JumpLessThan, Val: x32Bit, SkipTrue: 1},
			ret(unix.SECCOMP_RET_ERRNO|uint32(syscall.ENOSYS)))
	}
	for _, r := range rules {
		body, err := r.body()
		if err != nil {
			return nil, err
		}
		if len(body) > 255 {
			return nil, fmt.Errorf("seccomp: the rule for system call %d is too long", r.nr)
		}
		prog = append(prog,
			bpf.LoadAbsolute{Off: seccompNr, Size: 4},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(r.nr), SkipFalse: uint8(len(body))})
		prog = append(prog, body...)
	}
	return append(prog, allow), nil
}

// body is the code of one rule: it ends in a return on every path, denying
// when a test holds and allowing otherwise.
func (r sysRule) body() ([]bpf.Instruction, error) {
	deny := bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(r.errno)}
	if len(r.tests) == 0 {
		return []bpf.Instruction{deny}, nil
	}
	// Jumps to the deny at the end are patched once the length is known.
	const toDeny = 0xff
	var code []bpf.Instruction
	for _, t := range r.tests {
		tc, err := t.code(toDeny)
		if err != nil {
			return nil, err
		}
		if w := t.when; w != nil {
			if len(tc) > 254 {
				return nil, errors.New("seccomp: rule too long")
			}
			code = append(code, bpf.LoadAbsolute{Off: uint32(seccompArgs + 8*w.arg), Size: 4},
				bpf.JumpIf{Cond: bpf.JumpEqual, Val: w.vals[0], SkipFalse: uint8(len(tc))})
		}
		code = append(code, tc...)
	}
	code = append(code, bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW}, deny)
	last := len(code) - 1
	for i, in := range code {
		skip := last - i - 1
		if skip > 255 {
			return nil, errors.New("seccomp: rule too long")
		}
		switch j := in.(type) {
		case bpf.JumpIf:
			if j.SkipTrue == toDeny {
				j.SkipTrue = uint8(skip)
			}
			if j.SkipFalse == toDeny {
				j.SkipFalse = uint8(skip)
			}
			code[i] = j
		case bpf.Jump:
			if j.Skip == toDeny {
				j.Skip = uint32(skip)
			}
			code[i] = j
		}
	}
	return code, nil
}

// code is the test's code; it jumps by toDeny to refuse and falls through
// otherwise.
func (t argTest) code(toDeny uint8) ([]bpf.Instruction, error) {
	if t.arg < 0 || t.arg > 5 || (t.when != nil && (t.when.arg < 0 || t.when.arg > 5 || len(t.when.vals) != 1)) {
		return nil, errors.New("seccomp: no such argument")
	}
	code := []bpf.Instruction{bpf.LoadAbsolute{Off: uint32(seccompArgs + 8*t.arg), Size: 4}}
	switch t.kind {
	case refuseNonZero:
		code = append(code, bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0, SkipFalse: toDeny})
	case refuseMasked:
		code = append(code, bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: t.mask})
		fallthrough
	case refuseIn:
		for _, v := range t.vals {
			code = append(code, bpf.JumpIf{Cond: bpf.JumpEqual, Val: v, SkipTrue: toDeny})
		}
	case refuseNotIn:
		// Each match skips the rest of the list and the jump to deny.
		for i, v := range t.vals {
			code = append(code, bpf.JumpIf{Cond: bpf.JumpEqual, Val: v, SkipTrue: uint8(len(t.vals) - i)})
		}
		code = append(code, bpf.Jump{Skip: uint32(toDeny)})
	}
	return code, nil
}

// errNoSeccomp is returned where the filter cannot be built or installed.
var errNoSeccomp = errors.New("seccomp is not available")

// installFilter confines every thread of the process, and what it starts,
// to fs. The calling thread must have no_new_privs set; the kernel sets it
// on the others as it synchronises them.
func installFilter(fs filterSpec) error {
	arch, ok := auditArch()
	if !ok {
		return fmt.Errorf("%w on %s", errNoSeccomp, runtime.GOARCH)
	}
	insts, err := program(arch, fs.rules())
	if err != nil {
		return err
	}
	raw, err := bpf.Assemble(insts)
	if err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	filter := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		filter[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	_, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog)))
	runtime.KeepAlive(filter)
	if errno != 0 {
		return fmt.Errorf("%w: %v", errNoSeccomp, errno)
	}
	return nil
}
