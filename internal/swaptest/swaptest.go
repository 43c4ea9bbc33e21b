// Package swaptest races a path against its twin for tests: it exchanges
// two names atomically in a tight loop, the way a hostile process swaps a
// folder for a symlink (or a file for a FIFO) under a tool that checks a
// path and then opens it.
package swaptest

import (
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// Exchange swaps a and b with renameat2(RENAME_EXCHANGE) until the returned
// function is called, which waits for the loop and reports how many
// exchanges it made. The first exchange happens before Exchange returns;
// where the kernel or file system cannot exchange, the test is skipped.
func Exchange(t testing.TB, a, b string) (stop func() int) {
	t.Helper()
	if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE); err != nil {
		t.Skipf("renameat2(RENAME_EXCHANGE) is not available: %v", err)
	}
	var done atomic.Bool
	var n atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		for !done.Load() {
			if unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE) == nil {
				n.Add(1)
			}
		}
	})
	return func() int {
		done.Store(true)
		wg.Wait()
		return int(n.Load())
	}
}
