//go:build bench

// Package depcost holds one tiny program per direct dependency of nanobot,
// each using its library the way nanobot does on top of the same baseline
// (the standard library as nanobot uses it, in package internal/base).
// bench/run builds each with the release flags; a dependency's cost is its
// program's stripped size less the baseline program's. The programs are
// built, never run.
package depcost
