// Package bench measures the whole daemon: the release binary is started as
// a child process against the in-repo Bot API fake and model stub, on
// 127.0.0.1, and its size, start-up, memory, round trips, synced commits,
// turns per second, request sizes and a soak are printed as one table, with
// what each dependency costs in the binary. The measurements live behind
// the "bench" build tag so the normal test suite never runs them; bench/run
// builds the binary and runs them. bench/depcost holds the tiny programs
// the dependency costs are measured with.
package bench
