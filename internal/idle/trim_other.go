//go:build !linux || !cgo

package idle

// trimMalloc does nothing where C's allocator is not glibc's.
func trimMalloc() {}
