// Package house holds the test that keeps the module's house rules: short files and functions, no
// context in a struct, and the import directions between the module's packages. It has no code of
// its own; run it with `go test -tags sqlite_fts5 ./internal/house/`.
package house
