//go:build bench

// Command sqlite is the baseline plus github.com/mattn/go-sqlite3 (built
// with sqlite_fts5, the C library included) behind database/sql, as memory
// uses it: a WAL database with DSN options, schema, an FTS5 index and
// search, immediate transactions, a checked copy, and the driver's error
// codes. database/sql is counted here: nanobot needs it only for SQLite.
package main

import (
	"database/sql"
	"errors"
	"fmt"
	"os"

	"github.com/mattn/go-sqlite3"

	"github.com/nanobot-go/nanobot/bench/depcost/internal/base"
)

func main() {
	ctx, log, stop := base.Run()
	defer stop()
	db, err := sql.Open("sqlite3", "file:"+os.Getenv("DB")+"?_busy_timeout=5000&_foreign_keys=1&_txlock=immediate&_journal_mode=WAL&_synchronous=FULL")
	if err != nil {
		log.Error("open", "err", err)
		return
	}
	defer db.Close()
	db.SetMaxOpenConns(4)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		report(err)
		return
	}
	for _, q := range []string{
		`CREATE TABLE IF NOT EXISTS history (id INTEGER PRIMARY KEY, scope TEXT NOT NULL, at INTEGER NOT NULL, entry TEXT NOT NULL)`,
		`CREATE VIRTUAL TABLE IF NOT EXISTS history_fts USING fts5(entry, content='history', content_rowid='id')`,
	} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			report(err)
		}
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO history (scope, at, entry) VALUES (?, ?, ?)`, "global", 1, "hello")
	report(err)
	if err == nil {
		id, _ := res.LastInsertId()
		fmt.Println(id)
	}
	report(tx.Commit())
	rows, err := db.QueryContext(ctx, `SELECT h.entry FROM history_fts f JOIN history h ON h.id = f.rowid WHERE history_fts MATCH ? ORDER BY bm25(history_fts) LIMIT 10`, os.Getenv("Q"))
	if err == nil {
		for rows.Next() {
			var e string
			_ = rows.Scan(&e)
			fmt.Println(e)
		}
		report(rows.Err())
		rows.Close()
	}
	var check string
	_ = db.QueryRowContext(ctx, `PRAGMA quick_check`).Scan(&check)
	_, err = db.ExecContext(ctx, `VACUUM INTO ?`, os.Getenv("COPY"))
	report(err)
}

func report(err error) {
	var se sqlite3.Error
	if errors.As(err, &se) && se.Code == sqlite3.ErrFull {
		fmt.Println("disk full")
	} else if err != nil {
		fmt.Println(err)
	}
}
