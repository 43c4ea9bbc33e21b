//go:build !arm

package sandbox

// archRules are the refusals this architecture needs besides the common
// ones: none.
func archRules([]uint32) []sysRule { return nil }
