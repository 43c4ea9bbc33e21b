package memory

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/agent"
)

// BenchmarkBackup100k copies a database of 100,000 messages (100 sessions,
// about 300 bytes each, with tool calls, MEMORY and HISTORY) with VACUUM
// INTO and checks the copy, as `nanobot backup` does.
func BenchmarkBackup100k(b *testing.B) {
	s := benchStore(b)
	ctx := b.Context()
	text := strings.Repeat("a sentence of an ordinary conversation. ", 7)
	turn := []agent.Message{user("please look at " + text), call("c1"), result("c1"), assistant(text)}
	for i := range 100 {
		batch := make([]agent.Message, 0, 1000)
		for len(batch) < cap(batch) {
			batch = append(batch, turn...)
		}
		if err := s.Append(ctx, fmt.Sprintf("telegram:%d", i), batch...); err != nil {
			b.Fatal(err)
		}
		if err := s.AppendHistory(ctx, GlobalScope, time.Time{}, "a summary of session "+fmt.Sprint(i)+": "+text); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.SetMemory(ctx, GlobalScope, "- "+text); err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	var bytes int64
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		n++
		info, err := s.Backup(ctx, filepath.Join(dir, fmt.Sprintf("copy-%d.db", n)))
		if err != nil {
			b.Fatal(err)
		}
		if info.Counts.Messages != 100_000 {
			b.Fatalf("copied %d messages", info.Counts.Messages)
		}
		bytes = info.Bytes
		os.Remove(info.Path)
	}
	b.ReportMetric(float64(bytes)/(1<<20), "MiB")
}
