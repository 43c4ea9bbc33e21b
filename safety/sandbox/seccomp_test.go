package sandbox

import (
	"encoding/binary"
	"syscall"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// runFilter runs the filter of fs in x/net/bpf's interpreter on one system
// call and returns the seccomp action. The interpreter reads words in
// network order where the kernel reads them in the machine's, so the
// seccomp_data is laid out big-endian here.
func runFilter(t *testing.T, fs filterSpec, arch, callArch uint32, nr uintptr, args ...uint64) uint32 {
	t.Helper()
	insts, err := program(arch, fs.rules())
	if err != nil {
		t.Fatal(err)
	}
	vm, err := bpf.NewVM(insts)
	if err != nil {
		t.Fatalf("the filter does not load: %v", err)
	}
	data := make([]byte, 64)
	binary.BigEndian.PutUint32(data[seccompNr:], uint32(nr))
	binary.BigEndian.PutUint32(data[seccompArch:], callArch)
	for i, a := range args {
		// The low half of each argument comes first, as on a
		// little-endian machine.
		binary.BigEndian.PutUint32(data[seccompArgs+8*i:], uint32(a))
		binary.BigEndian.PutUint32(data[seccompArgs+8*i+4:], uint32(a>>32))
	}
	v, err := vm.Run(data)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(v)
}

func TestFilterProgram(t *testing.T) {
	const daemon, helper, child = 4242, 4300, 5000
	allow := uint32(unix.SECCOMP_RET_ALLOW)
	errno := func(e syscall.Errno) uint32 { return unix.SECCOMP_RET_ERRNO | uint32(e) }
	arch, ok := auditArch()
	if !ok {
		t.Skip("no seccomp filter on this architecture")
	}
	plain := filterSpec{Network: NetworkAny, Protect: []int{daemon, helper}}
	none := filterSpec{Network: NetworkNone, Protect: []int{daemon, helper}}
	web := filterSpec{Network: NetworkWeb, Protect: []int{daemon, helper}}
	isolated := filterSpec{Network: NetworkAny, Isolated: true}
	neg := func(p int) uint64 { return uint64(int64(-p)) }
	type filterCase struct {
		name string
		fs   filterSpec
		arch uint32
		nr   uintptr
		args []uint64
		want uint32
	}
	tests := []filterCase{
		{"kill a child", plain, arch, unix.SYS_KILL, []uint64{child, 9}, allow},
		{"kill the daemon", plain, arch, unix.SYS_KILL, []uint64{daemon, 9}, errno(syscall.EPERM)},
		{"kill the helper's group", plain, arch, unix.SYS_KILL, []uint64{neg(helper), 9}, errno(syscall.EPERM)},
		{"kill everything", plain, arch, unix.SYS_KILL, []uint64{neg(1), 9}, errno(syscall.EPERM)},
		{"kill the daemon, high bits set", plain, arch, unix.SYS_KILL, []uint64{0xdead_0000_0000_0000 | daemon, 9}, errno(syscall.EPERM)},
		{"kill everything in a PID namespace", isolated, arch, unix.SYS_KILL, []uint64{neg(1), 9}, allow},
		{"tgkill the daemon", plain, arch, unix.SYS_TGKILL, []uint64{daemon, daemon, 9}, errno(syscall.EPERM)},
		{"tkill without a namespace", plain, arch, unix.SYS_TKILL, []uint64{child, 9}, errno(syscall.EPERM)},
		{"tkill in a namespace", isolated, arch, unix.SYS_TKILL, []uint64{child, 9}, allow},
		{"pidfd_send_signal without a namespace", plain, arch, unix.SYS_PIDFD_SEND_SIGNAL, []uint64{3, 9}, errno(syscall.EPERM)},
		{"prlimit itself", plain, arch, unix.SYS_PRLIMIT64, []uint64{0, unix.RLIMIT_NOFILE}, allow},
		{"prlimit another", plain, arch, unix.SYS_PRLIMIT64, []uint64{child, unix.RLIMIT_NOFILE}, errno(syscall.EPERM)},
		{"setpriority itself", plain, arch, unix.SYS_SETPRIORITY, []uint64{unix.PRIO_PROCESS, 0, 10}, allow},
		{"setpriority another", plain, arch, unix.SYS_SETPRIORITY, []uint64{unix.PRIO_PROCESS, daemon, 19}, errno(syscall.EPERM)},
		{"ptrace", isolated, arch, unix.SYS_PTRACE, []uint64{unix.PTRACE_ATTACH, child}, errno(syscall.EPERM)},
		{"fcntl F_SETOWN to the daemon", plain, arch, unix.SYS_FCNTL, []uint64{3, unix.F_SETOWN, daemon}, errno(syscall.EPERM)},
		{"fcntl F_SETOWN to itself", plain, arch, unix.SYS_FCNTL, []uint64{3, unix.F_SETOWN, child}, allow},
		{"fcntl F_GETFL, a protected number left in the register", plain, arch, unix.SYS_FCNTL, []uint64{3, unix.F_GETFL, daemon}, allow},
		{"fcntl F_SETOWN_EX", plain, arch, unix.SYS_FCNTL, []uint64{3, unix.F_SETOWN_EX, 0}, errno(syscall.EPERM)},
		{"io_uring", plain, arch, unix.SYS_IO_URING_SETUP, []uint64{8, 0}, errno(syscall.ENOSYS)},
		{"unix socket", plain, arch, unix.SYS_SOCKET, []uint64{unix.AF_UNIX, unix.SOCK_STREAM}, errno(syscall.EACCES)},
		{"internet socket", plain, arch, unix.SYS_SOCKET, []uint64{unix.AF_INET, unix.SOCK_DGRAM}, allow},
		{"netlink with none", none, arch, unix.SYS_SOCKET, []uint64{unix.AF_NETLINK, unix.SOCK_RAW}, allow},
		{"udp with none", none, arch, unix.SYS_SOCKET, []uint64{unix.AF_INET, unix.SOCK_DGRAM}, errno(syscall.EACCES)},
		{"ipv6 with none", none, arch, unix.SYS_SOCKET, []uint64{unix.AF_INET6, unix.SOCK_STREAM | unix.SOCK_CLOEXEC}, errno(syscall.EACCES)},
		{"tcp with web", web, arch, unix.SYS_SOCKET, []uint64{unix.AF_INET, unix.SOCK_STREAM | unix.SOCK_NONBLOCK}, allow},
		{"raw with web", web, arch, unix.SYS_SOCKET, []uint64{unix.AF_INET, unix.SOCK_RAW | unix.SOCK_CLOEXEC}, errno(syscall.EACCES)},
		{"packet with web", web, arch, unix.SYS_SOCKET, []uint64{unix.AF_PACKET, unix.SOCK_DGRAM}, errno(syscall.EACCES)},
		{"socketpair", none, arch, unix.SYS_SOCKETPAIR, []uint64{unix.AF_UNIX, unix.SOCK_STREAM}, allow},
		{"another architecture", plain, arch ^ 1, unix.SYS_WRITE, []uint64{1, 0, 3}, errno(syscall.ENOSYS)},
		{"an ordinary call", plain, arch, unix.SYS_WRITE, []uint64{1, 0, 3}, allow},
	}
	if arch == unix.AUDIT_ARCH_X86_64 {
		tests = append(tests, filterCase{"x32 call", plain, arch, x32Bit | unix.SYS_WRITE, []uint64{1, 0, 3}, errno(syscall.ENOSYS)})
	}
	for _, tt := range tests {
		if got := runFilter(t, tt.fs, arch, tt.arch, tt.nr, tt.args...); got != tt.want {
			t.Errorf("%s: action %#x, want %#x", tt.name, got, tt.want)
		}
	}
}
