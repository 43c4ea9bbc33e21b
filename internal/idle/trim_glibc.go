//go:build linux && cgo

package idle

/*
#include <stdlib.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

static void nanobot_trim_malloc(void) {
#ifdef __GLIBC__
	malloc_trim(0);
#endif
}
*/
import "C"

// trimMalloc hands the free pages of every malloc arena back to the
// system; glibc returns only the top of its main heap by itself.
func trimMalloc() { C.nanobot_trim_malloc() }
