package memory

import (
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Litestream (deploy/litestream.yml) replicates the database from the WAL
// while the daemon writes it. It needs, on every connection the daemon
// writes through: WAL mode, a busy timeout of at least 5 s (Litestream takes
// short write locks when it checkpoints), and automatic checkpoints left
// PASSIVE, at SQLite's default, which never block on Litestream's read lock;
// the daemon must not run blocking (RESTART or TRUNCATE) checkpoints of its
// own while it runs. deploy/README.md repeats this list.
func TestPragmasSuitLitestream(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	// Hold every pooled connection at once, so each one is inspected.
	var conns []*sql.Conn
	for range maxConns {
		c, err := s.db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i, c := range conns {
		var mode string
		var busy, autockpt int
		if err := c.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
			t.Fatal(err)
		}
		if err := c.QueryRowContext(ctx, `PRAGMA busy_timeout`).Scan(&busy); err != nil {
			t.Fatal(err)
		}
		if err := c.QueryRowContext(ctx, `PRAGMA wal_autocheckpoint`).Scan(&autockpt); err != nil {
			t.Fatal(err)
		}
		if mode != "wal" || busy < 5000 || autockpt != 1000 {
			t.Errorf("connection %d: journal_mode=%s busy_timeout=%d wal_autocheckpoint=%d; Litestream needs wal, >= 5000 and the PASSIVE default 1000",
				i, mode, busy, autockpt)
		}
	}

	// No blocking checkpoint in the code that runs beside Litestream: only a
	// restore, which runs with the daemon (and Litestream) stopped, has one.
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	sqlFiles, _ := filepath.Glob(filepath.Join("migrations", "*.sql"))
	files = append(files, sqlFiles...)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.ToLower(string(src))
		if strings.Contains(text, "wal_autocheckpoint") {
			t.Errorf("%s changes wal_autocheckpoint; leave it at the default beside Litestream", f)
		}
		if strings.Contains(text, "wal_checkpoint(") && f != "restore.go" {
			t.Errorf("%s runs a checkpoint; beside Litestream only Litestream checkpoints", f)
		}
	}
}
