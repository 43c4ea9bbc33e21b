package main

import (
	"database/sql"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/nanobot-go/nanobot/agent/openai/openaitest"
	"github.com/nanobot-go/nanobot/channels/telegram/telegramtest"
	"github.com/nanobot-go/nanobot/memory"
)

func startGatewayWith(t *testing.T, extra map[string]string, flags ...string) *gatewayHarness {
	t.Helper()
	tg := telegramtest.NewServer(t, botToken)
	model := openaitest.NewServer(t)
	dir := t.TempDir()
	h := &gatewayHarness{t: t, tg: tg, model: model, dir: dir, logs: &syncBuffer{}, flags: flags}
	h.cfg = gatewayConfig(t, dir, tg, model, extra)
	h.start()
	t.Cleanup(func() { h.stop() })
	return h
}

// keptDatabases are the files restores set aside, without their -wal and
// -shm companions.
func keptDatabases(db string) []string {
	all, _ := filepath.Glob(db + ".before-restore-*")
	var out []string
	for _, f := range all {
		if !strings.HasSuffix(f, "-wal") && !strings.HasSuffix(f, "-shm") {
			out = append(out, f)
		}
	}
	return out
}

// query runs one single-value query on an SQLite file through a handle of
// its own.
func query[T any](t *testing.T, path, q string, args ...any) T {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v T
	if err := db.QueryRow(q, args...).Scan(&v); err != nil {
		t.Fatalf("%s on %s: %v", q, path, err)
	}
	return v
}

// A backup taken while the gateway answers messages passes the integrity
// check and holds every message answered before it started.
func TestBackupWhileAnswering(t *testing.T) {
	h := startGatewayWith(t, map[string]string{"channels.telegram.allow_from": "[111, 333]"})
	var answered []string
	for i := range 5 {
		text := fmt.Sprintf("question %d", i)
		h.model.Script(openaitest.Reply{Text: fmt.Sprintf("answer %d", i)})
		h.ask(text)
		answered = append(answered, text)
	}
	// One turn is held at the model, and another chat keeps writing while
	// the copy is made.
	release := make(chan struct{})
	h.model.Script(openaitest.Reply{Text: "slow answer", Hold: release})
	h.tg.SendText(owner, owner, "ada", "a slow one")
	if _, err := h.model.WaitRequests(waitCtx(t), 6); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range 5 {
			h.tg.SendText(333, 333, "bob", fmt.Sprintf("meanwhile %d", i))
		}
	})
	dest := filepath.Join(t.TempDir(), "live-backup.db")
	r := runCLI(t.Context(), "", "-c", h.cfg, "backup", dest)
	wg.Wait()
	close(release)
	waitSentContaining(t, h.tg, owner, "slow answer")
	if r.code != 0 {
		t.Fatalf("backup = %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"backup written to " + dest, "integrity check ok", "sessions", "messages", "memory entries", "jobs"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("backup output lacks %q:\n%s", want, r.stdout)
		}
	}
	if got := query[string](t, dest, `PRAGMA integrity_check`); got != "ok" {
		t.Errorf("integrity_check of the copy = %q", got)
	}
	for i, text := range answered {
		if n := query[int](t, dest, `SELECT count(*) FROM messages WHERE role = 'user' AND content LIKE ?`, "%"+text+"%"); n != 1 {
			t.Errorf("the copy holds %q %d times, want once", text, n)
		}
		if n := query[int](t, dest, `SELECT count(*) FROM messages WHERE role = 'assistant' AND content = ?`, fmt.Sprintf("answer %d", i)); n != 1 {
			t.Errorf("the copy lacks the answer to %q", text)
		}
	}
	r.assertNoSecret(t)
}

func TestRestoreRefusedWhileGatewayRuns(t *testing.T) {
	h := startGatewayWith(t, nil)
	h.ask("hello")
	dest := filepath.Join(t.TempDir(), "b.db")
	if r := runCLI(t.Context(), "", "-c", h.cfg, "backup", dest); r.code != 0 {
		t.Fatalf("backup = %d %s", r.code, r.stderr)
	}
	r := runCLI(t.Context(), "", "-c", h.cfg, "restore", dest)
	if r.code != exitFail {
		t.Errorf("restore next to a running gateway = %d, want %d", r.code, exitFail)
	}
	for _, want := range []string{"a gateway is running", "nanobot process " + fmt.Sprint(os.Getpid()) + " holds", "stop the gateway first", "systemctl stop nanobot", "docker compose stop nanobot"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("the refusal does not say %q:\n%s", want, r.stderr)
		}
	}
	db := filepath.Join(h.dir, "data", "nanobot.db")
	if kept := keptDatabases(db); len(kept) != 0 {
		t.Errorf("a refused restore moved the database: %v", kept)
	}
	// The gateway still works on its database.
	h.model.Script(openaitest.Reply{Text: "still here"})
	h.ask("are you?")

	st := runCLI(t.Context(), "", "-c", h.cfg, "status")
	if !strings.Contains(st.stdout, "running (nanobot process") {
		t.Errorf("status does not show the running gateway:\n%s", st.stdout)
	}
	// A second gateway on the same database is refused too.
	second := runCLI(t.Context(), "", "-c", h.cfg, "gateway")
	if second.code != exitFail || !strings.Contains(second.stderr, "already holds") {
		t.Errorf("second gateway = %d %s", second.code, second.stderr)
	}
}

func TestRestoreRoundTrip(t *testing.T) {
	stub := openaitest.NewServer(t)
	dir := t.TempDir()
	cfg := writeConfig(t, dir, stub.URL(), nil)
	ask := func(text string) {
		t.Helper()
		if r := runCLI(t.Context(), "", "-c", cfg, "agent", "-m", text); r.code != 0 {
			t.Fatalf("agent -m %q = %d %s", text, r.code, r.stderr)
		}
	}
	ask("remember the red boat")
	backupFile := filepath.Join(t.TempDir(), "nanobot-backup.db")
	if r := runCLI(t.Context(), "", "-c", cfg, "backup", backupFile); r.code != 0 {
		t.Fatalf("backup = %d %s", r.code, r.stderr)
	}
	ask("forget it, it was blue")

	r := runCLI(t.Context(), "", "-c", cfg, "restore", backupFile)
	if r.code != 0 {
		t.Fatalf("restore = %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	db := filepath.Join(dir, "data", "nanobot.db")
	kept := keptDatabases(db)
	if len(kept) != 1 {
		t.Fatalf("kept databases: %v, want one", kept)
	}
	for _, want := range []string{"restored " + backupFile, "integrity check ok", "kept as " + kept[0], "up to date", "start the gateway"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("restore output lacks %q:\n%s", want, r.stdout)
		}
	}
	if !regexp.MustCompile(`messages\s+2\n`).MatchString(r.stdout) {
		t.Errorf("restore output does not count 2 messages:\n%s", r.stdout)
	}
	if n := query[int](t, kept[0], `SELECT count(*) FROM messages WHERE content = 'forget it, it was blue'`); n != 1 {
		t.Error("the kept database lost the message written after the backup")
	}

	ask("what colour?")
	last, _ := stub.LastRequest()
	var history []string
	for _, m := range last.Messages {
		history = append(history, m.Content)
	}
	joined := strings.Join(history, "\n")
	if !strings.Contains(joined, "remember the red boat") || strings.Contains(joined, "it was blue") {
		t.Errorf("after the restore the conversation is:\n%s", joined)
	}

	// A file that is not a nanobot database is refused before anything moves.
	junk := filepath.Join(t.TempDir(), "junk.db")
	os.WriteFile(junk, []byte("not sqlite"), 0o600)
	if r := runCLI(t.Context(), "", "-c", cfg, "restore", junk); r.code == 0 || !strings.Contains(r.stderr, "not a database") {
		t.Errorf("restore of junk = %d %s", r.code, r.stderr)
	}
	if again := keptDatabases(db); len(again) != 1 {
		t.Errorf("a refused restore moved the database: %v", again)
	}
}

// A database written by a newer version stops an older binary with exit 78
// and says what to do.
func TestNewerDatabaseRefused(t *testing.T) {
	tg := telegramtest.NewServer(t, botToken)
	model := openaitest.NewServer(t)
	dir := t.TempDir()
	cfg := gatewayConfig(t, dir, tg, model, nil)
	if r := runCLI(t.Context(), "", "-c", cfg, "agent", "-m", "hi"); r.code != 0 {
		t.Fatalf("agent = %d %s", r.code, r.stderr)
	}
	db := filepath.Join(dir, "data", "nanobot.db")
	raw, err := sql.Open("sqlite3", db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(fmt.Sprintf(`PRAGMA user_version = %d`, memory.SchemaVersion()+1)); err != nil {
		t.Fatal(err)
	}
	raw.Close()

	for _, args := range [][]string{{"gateway"}, {"agent", "-m", "hi"}} {
		r := runCLI(t.Context(), "", append([]string{"-c", cfg}, args...)...)
		if r.code != exitConfig || !strings.Contains(r.stderr, "written by a newer nanobot") || !strings.Contains(r.stderr, db) {
			t.Errorf("%s on a newer database = %d, stderr:\n%s", args[0], r.code, r.stderr)
		}
	}
	if n := query[int](t, db, `PRAGMA user_version`); n != memory.SchemaVersion()+1 {
		t.Errorf("the refusal changed the schema version to %d", n)
	}
	st := runCLI(t.Context(), "", "-c", cfg, "status")
	if st.code != 0 || !strings.Contains(st.stdout, "cannot be read") || !strings.Contains(st.stdout, "newer nanobot") {
		t.Errorf("status = %d:\n%s", st.code, st.stdout)
	}
}

func TestGatewayBackupsOnSchedule(t *testing.T) {
	addr := freeAddr(t)
	backups := filepath.Join(t.TempDir(), "backups")
	h := startGatewayWith(t, map[string]string{"gateway.listen": addr, "storage.backup.dir": backups,
		"storage.backup.every": "24h", "storage.backup.keep": "2"})
	// The first copy is taken at start: there is none yet.
	line := waitLogged(t, h.logs, "backup written")
	files, _ := filepath.Glob(filepath.Join(backups, "nanobot-*.db"))
	if len(files) != 1 || !strings.Contains(line, files[0]) {
		t.Fatalf("backups %v after the first, log %q", files, line)
	}
	if got := query[string](t, files[0], `PRAGMA integrity_check`); got != "ok" {
		t.Errorf("integrity_check = %q", got)
	}

	status := h.ask("/status")
	if !strings.Contains(status.Text, "Backups: every 24h, last ") {
		t.Errorf("/status = %q, want the last backup", status.Text)
	}
	_, body, err := httpGet(t.Context(), "http://"+addr+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := metricValue(body, `nanobot_backups_total{outcome="ok"}`); !ok || v != 1 {
		t.Errorf("backups_total ok = %v (%v)", v, ok)
	}
	if v, ok := metricValue(body, "nanobot_backup_last_success_timestamp_seconds"); !ok || v <= 0 {
		t.Errorf("backup_last_success_timestamp_seconds = %v (%v)", v, ok)
	}
	if code, _, _ := httpGet(t.Context(), "http://"+addr+"/readyz"); code != http.StatusOK {
		t.Errorf("/readyz = %d", code)
	}
	st := runCLI(t.Context(), "", "-c", h.cfg, "status")
	if !strings.Contains(st.stdout, "every 24h, last ") || !strings.Contains(st.stdout, "keep 2, in "+backups) {
		t.Errorf("status:\n%s", st.stdout)
	}
}

// A backup onto an existing file names --force; the jobs it reports are
// the live ones, with the removed ones told apart.
func TestBackupCommandLine(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "http://127.0.0.1:1/v1", nil)
	ctx := t.Context()
	for _, every := range []string{"1h", "2h", "3h"} {
		if r := runCLI(ctx, "", "-c", cfg, "cron", "add", "--message", "m", "--every", every, "--chat", "111"); r.code != 0 {
			t.Fatalf("cron add = %d %q", r.code, r.stderr)
		}
	}
	if r := runCLI(ctx, "", "-c", cfg, "cron", "remove", "2"); r.code != 0 {
		t.Fatalf("cron remove = %d %q", r.code, r.stderr)
	}
	dest := filepath.Join(dir, "copy.db")
	r := runCLI(ctx, "", "-c", cfg, "backup", dest)
	if r.code != 0 || !strings.Contains(r.stdout, "jobs            2 scheduled (and 1 finished or removed, kept for their usage)") {
		t.Fatalf("backup = %d %q %q", r.code, r.stdout, r.stderr)
	}
	r = runCLI(ctx, "", "-c", cfg, "backup", dest)
	if r.code != exitFail || !strings.Contains(r.stderr, dest+" already exists; pass --force to replace it") {
		t.Errorf("backup onto an existing file = %d %q, want an error naming --force", r.code, r.stderr)
	}
	for _, args := range [][]string{{"backup", "--force", dest}, {"backup", dest, "--force"}} {
		if r := runCLI(ctx, "", append([]string{"-c", cfg}, args...)...); r.code != 0 || !strings.Contains(r.stdout, "backup written to "+dest) {
			t.Errorf("%q = %d %q %q", args, r.code, r.stdout, r.stderr)
		}
	}
}
