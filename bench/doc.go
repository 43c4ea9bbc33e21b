// Package bench measures the whole daemon: the release binary is started as a
// child process against the in-repo Bot API fake and model stub, and start-up
// time, round-trip latency, throughput, memory and binary size are printed as
// a table. The measurements live behind the "bench" build tag so the normal
// test suite never runs them; bench/gateway.sh builds the binary and runs them.
package bench
