package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"log"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// syncBuffer is a bytes.Buffer the server's goroutines may write to while
// the test reads it.
type syncBuffer struct {
	ch chan struct{}
	b  bytes.Buffer
}

func newSyncBuffer() *syncBuffer { return &syncBuffer{ch: make(chan struct{}, 1)} }

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.ch <- struct{}{}
	defer func() { <-s.ch }()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.ch <- struct{}{}
	defer func() { <-s.ch }()
	return s.b.String()
}

// The gateway's /metrics where /proc/self/io cannot be read (a
// non-dumpable daemon that is not root): no line from the metrics library
// in the standard log's plain text, one warning in the configured format,
// and every process series but process_io_*.
func TestMetricsWithoutProcIO(t *testing.T) {
	tests := []struct {
		name     string
		procIO   error
		wantIO   bool
		wantWarn int
	}{
		{"readable", nil, true, 0},
		{"unreadable", fs.ErrPermission, false, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// What the library would print goes to the standard logger.
			std := newSyncBuffer()
			prev := log.Writer()
			log.SetOutput(std)
			t.Cleanup(func() { log.SetOutput(prev) })

			logs := newSyncBuffer()
			m := NewMetrics()
			if tt.procIO != nil {
				m.procIO = func() error { return tt.procIO }
			} else if err := readProcIO(); err != nil {
				t.Skipf("this process cannot read %s: %v", procIOPath, err)
			}
			s := NewServer("127.0.0.1:0", m, nil, slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn})))
			if err := s.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				s.Shutdown(ctx)
			})
			var body string
			for range 3 {
				code, b := get(t, http.MethodGet, "http://"+s.Addr()+"/metrics")
				if code != http.StatusOK {
					t.Fatalf("GET /metrics = %d", code)
				}
				body = b
			}
			for _, series := range []string{"go_goroutines", "process_cpu_seconds_total", "process_resident_memory_bytes", "process_start_time_seconds", "nanobot_turns_total"} {
				if !strings.Contains(body, "\n"+series) {
					t.Errorf("/metrics lacks %s", series)
				}
			}
			if got := strings.Contains(body, "\nprocess_io_"); got != tt.wantIO {
				t.Errorf("/metrics has process_io_* series: %v, want %v", got, tt.wantIO)
			}
			if got := std.String(); got != "" {
				t.Errorf("the standard logger got %q; every line must go through the configured slog handler", got)
			}
			lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
			if lines[0] == "" {
				lines = nil
			}
			if len(lines) != tt.wantWarn {
				t.Fatalf("slog lines after 3 scrapes: %q, want %d", lines, tt.wantWarn)
			}
			for _, l := range lines {
				var rec struct{ Level, Msg, Path string }
				if err := json.Unmarshal([]byte(l), &rec); err != nil || rec.Level != "WARN" || rec.Path != procIOPath {
					t.Errorf("log line %q (%v): want a JSON warning naming %s", l, err, procIOPath)
				}
			}
		})
	}
}

// The condition itself: a process that is neither dumpable nor root cannot
// read its own I/O counters. Root can, so the test needs another user.
func TestProcIOUnreadableWhenNotDumpable(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads /proc/self/io whether dumpable or not; run the test as another user to see the condition")
	}
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		t.Skipf("prctl(PR_SET_DUMPABLE): %v", err)
	}
	t.Cleanup(func() { unix.Prctl(unix.PR_SET_DUMPABLE, 1, 0, 0, 0) })
	if err := readProcIO(); err == nil {
		t.Errorf("readProcIO() of a non-dumpable process of uid %d = nil, want a permission error", os.Geteuid())
	}
	var w bytes.Buffer
	if err := writeProcStat(&w, 1); err != nil || !strings.Contains(w.String(), "process_resident_memory_bytes ") {
		t.Errorf("writeProcStat = %v, wrote %q", err, w.String())
	}
}

func TestWriteProcStat(t *testing.T) {
	var w bytes.Buffer
	if err := writeProcStat(&w, 1700000000); err != nil {
		t.Skipf("/proc/self/stat: %v", err)
	}
	for _, want := range []string{"process_cpu_seconds_total ", "process_num_threads ", "process_start_time_seconds 1700000000"} {
		if !strings.Contains(w.String(), want) {
			t.Errorf("writeProcStat wrote %q, lacks %q", w.String(), want)
		}
	}
}
