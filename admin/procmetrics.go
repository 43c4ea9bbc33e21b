package admin

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"

	"github.com/VictoriaMetrics/metrics"
)

// procIOPath is where the kernel keeps the process's I/O counters. Once the
// exec sandbox makes the daemon non-dumpable, the file belongs to root with
// mode 0400, so an unprivileged daemon cannot read it; the metrics library
// would then log a line of its own, in the standard log package's plain
// text, outside the configured log format.
const procIOPath = "/proc/self/io"

// readProcIO reports whether the process I/O counters can be read.
func readProcIO() error {
	_, err := os.ReadFile(procIOPath)
	return err
}

// writeProcess writes the Go runtime and process metrics. Where procIO
// says the I/O counters cannot be read it leaves the process_io_* series
// out (the library cannot be told to) and says so once, through logger.
func (m *Metrics) writeProcess(w io.Writer, logger *slog.Logger) {
	err := m.procIO()
	if err == nil {
		metrics.WriteProcessMetrics(w)
		return
	}
	m.procIOWarn.Do(func() {
		logger.Warn("process io metrics unavailable; /metrics leaves out process_io_*", "path", procIOPath, "err", err)
	})
	metrics.WriteGoMetrics(w)
	if err := writeProcStat(w, m.start); err != nil {
		m.procStatWarn.Do(func() {
			logger.Warn("process metrics unavailable", "err", err)
		})
	}
}

// Units of /proc/self/stat: clock ticks (USER_HZ, 100 on every Linux ABI)
// and pages.
const userHZ = 100

// writeProcStat writes the process metrics of /proc/self/stat, under the
// names and in the units the library uses.
func writeProcStat(w io.Writer, start int64) error {
	const path = "/proc/self/stat"
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	// The command name, in parentheses, may hold spaces and parentheses.
	n := bytes.LastIndex(data, []byte(") "))
	if n < 0 {
		return fmt.Errorf("%s: no command name", path)
	}
	// From the state on: state(0) ppid pgrp session tty_nr tpgid flags
	// minflt(7) cminflt majflt(9) cmajflt utime(11) stime(12) cutime cstime
	// priority nice num_threads(17) itrealvalue starttime vsize(20) rss(21).
	f := bytes.Fields(data[n+2:])
	if len(f) < 22 {
		return fmt.Errorf("%s: %d fields", path, len(f))
	}
	field := func(i int) uint64 {
		v, perr := strconv.ParseUint(string(f[i]), 10, 64)
		if perr != nil && err == nil {
			err = fmt.Errorf("%s: field %d: %w", path, i, perr)
		}
		return v
	}
	utime, stime := field(11), field(12)
	minflt, majflt, threads, vsize, rss := field(7), field(9), field(17), field(20), field(21)
	if err != nil {
		return err
	}
	metrics.WriteCounterFloat64(w, "process_cpu_seconds_system_total", float64(stime)/userHZ)
	metrics.WriteCounterFloat64(w, "process_cpu_seconds_total", float64(utime+stime)/userHZ)
	metrics.WriteCounterFloat64(w, "process_cpu_seconds_user_total", float64(utime)/userHZ)
	metrics.WriteCounterUint64(w, "process_major_pagefaults_total", majflt)
	metrics.WriteCounterUint64(w, "process_minor_pagefaults_total", minflt)
	metrics.WriteGaugeUint64(w, "process_num_threads", threads)
	metrics.WriteGaugeUint64(w, "process_resident_memory_bytes", rss*uint64(os.Getpagesize()))
	metrics.WriteGaugeUint64(w, "process_start_time_seconds", uint64(start))
	metrics.WriteGaugeUint64(w, "process_virtual_memory_bytes", vsize)
	return nil
}
