//go:build bench

// Command baseline is the standard library as nanobot uses it and nothing
// else: the size every dependency's program is compared with.
package main

import "github.com/nanobot-go/nanobot/bench/depcost/internal/base"

func main() {
	_, _, stop := base.Run()
	stop()
}
