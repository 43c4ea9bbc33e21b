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

// BenchmarkBackup100k copies a database of 100,000 messages with VACUUM
// INTO and checks the copy, as `nanobot backup` does.
func BenchmarkBackup100k(b *testing.B) {
	s := store100k(b)
	ctx := b.Context()
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

// BenchmarkRestore100k restores the same database over itself, as `nanobot
// restore` does: check the file, copy it, set the old one aside, open.
func BenchmarkRestore100k(b *testing.B) {
	s := store100k(b)
	ctx := b.Context()
	src := filepath.Join(b.TempDir(), "backup.db")
	if _, err := s.Backup(ctx, src); err != nil {
		b.Fatal(err)
	}
	s.Close()
	target := filepath.Join(b.TempDir(), "nanobot.db")
	at := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	b.ReportAllocs()
	for b.Loop() {
		at = at.Add(time.Second)
		info, err := Restore(ctx, src, target, at)
		if err != nil {
			b.Fatal(err)
		}
		if info.KeptAs != "" {
			os.Remove(info.KeptAs)
		}
	}
}

// store100k is a store of 100,000 messages (100 sessions, about 300 bytes
// each, with tool calls, MEMORY and HISTORY).
func store100k(b *testing.B) *Store {
	b.Helper()
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
	return s
}

// BenchmarkQuickCheck100k runs the gateway's start-up check (PRAGMA
// quick_check on a connection of its own) on a database of 100,000
// messages.
func BenchmarkQuickCheck100k(b *testing.B) {
	s := store100k(b)
	ctx := b.Context()
	fi, err := os.Stat(s.path)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := s.QuickCheck(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(fi.Size())/(1<<20), "MiB")
}
