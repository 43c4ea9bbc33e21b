package sandbox

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// archRules are the refusals 32-bit ARM needs besides the common ones: its
// C library calls fcntl64 for fcntl.
func archRules(protect []uint32) []sysRule {
	return []sysRule{
		{nr: unix.SYS_FCNTL64, errno: syscall.EPERM, tests: []argTest{
			{arg: 1, kind: refuseIn, vals: []uint32{unix.F_SETOWN_EX}},
			{arg: 2, kind: refuseIn, vals: protect, when: &argTest{arg: 1, vals: []uint32{unix.F_SETOWN}}},
		}},
	}
}
