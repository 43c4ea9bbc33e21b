package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/agent/openai/openaitest"
	"github.com/nanobot-go/nanobot/channels/telegram/telegramtest"
	"github.com/nanobot-go/nanobot/config"
	"github.com/nanobot-go/nanobot/memory"
	"github.com/nanobot-go/nanobot/schedule/scheduletest"
)

// nobody is the user runCLIAs runs the program as when the tests run as
// root, for whom file modes would bind nothing.
const nobody = 65534

// runCLIAs runs the program in a process of its own, from bin (a copy of
// the test binary that user may run; see binaryIn): as nobody when the
// tests run as root, as the tests' user otherwise.
func runCLIAs(t *testing.T, bin string, args ...string) result {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), bin)
	cmd.Env = []string{cliArgsEnv + "=" + string(raw), "PATH=" + os.Getenv("PATH")}
	if os.Getuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		// A temporary directory mounted noexec, or a root without
		// CAP_SETUID (a user namespace): the case cannot be set up here.
		t.Skipf("cannot start the program as another user from %s: %v", bin, err)
	}
	return result{err, code, out.String(), errb.String()}
}

// binaryIn copies the test binary into dir, for runCLIAs: the build
// directory is the tests' user's alone.
func binaryIn(t *testing.T, dir string) string {
	t.Helper()
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "nanobot.test")
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// ownedDir is a new directory that runCLIAs's user owns and may enter.
func ownedDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "nanobot-ro-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
			if err == nil && fi.IsDir() {
				os.Chmod(p, 0o700)
			}
			return nil
		})
		os.RemoveAll(dir)
	})
	return dir
}

// chownAll gives everything under dir to runCLIAs's user.
func chownAll(t *testing.T, dir string) {
	t.Helper()
	if os.Getuid() != 0 {
		return
	}
	err := filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, nobody, nobody)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A data directory the daemon's user cannot write (a read-only mount, a
// copy owned by someone else): the commands that only read work, and the
// gateway exits 78 saying which directory and what still works.
func TestReadOnlyDataDir(t *testing.T) {
	dir := ownedDir(t)
	bin := binaryIn(t, dir)
	cfgPath := writeConfig(t, dir, "http://127.0.0.1:1/v1", map[string]string{
		"channels.telegram.enabled": "true",
		"channels.telegram.token":   "123456:read-only-test-token-abcdefgh",
	})
	cfg, st, scope := openConfigured(t, cfgPath)
	if err := st.SetMemory(t.Context(), scope, "The owner's cat is called Miso."); err != nil {
		t.Fatal(err)
	}
	st.Close()
	chownAll(t, dir)
	data := filepath.Dir(cfg.Storage.Path)
	if err := os.Chmod(data, 0o555); err != nil {
		t.Fatal(err)
	}
	if probe := filepath.Join(data, "probe"); os.Getuid() != 0 {
		if f, err := os.Create(probe); err == nil {
			f.Close()
			t.Skipf("%s stays writable after chmod 555 (a file system that ignores modes)", data)
		}
	}

	for _, args := range [][]string{{"memory", "show"}, {"memory", "history"}, {"audit"}, {"usage"}, {"cron", "list"}, {"status"}} {
		r := runCLIAs(t, bin, append([]string{"-c", cfgPath}, args...)...)
		if r.code != 0 {
			t.Errorf("%s on a read-only data directory = %d\n%s%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
		}
		if args[0] == "memory" && args[1] == "show" && !strings.Contains(r.stdout, "Miso") {
			t.Errorf("memory show = %q, want the stored memory", r.stdout)
		}
	}

	r := runCLIAs(t, bin, "-c", cfgPath, "gateway")
	if r.code != exitConfig || !strings.Contains(r.stderr, data+" is not writable") || !strings.Contains(r.stderr, "memory show") {
		t.Errorf("gateway on a read-only data directory = %d, stderr %q; want %d naming %s and what still works", r.code, r.stderr, exitConfig, data)
	}
	for _, write := range [][]string{{"memory", "edit"}, {"cron", "add", "--message", "x", "--every", "1h", "--chat", "1"}} {
		r := runCLIAs(t, bin, append([]string{"-c", cfgPath}, write...)...)
		if r.code == 0 {
			t.Errorf("%s on a read-only data directory succeeded:\n%s", strings.Join(write, " "), r.stdout)
		}
	}
}

// damageTable overwrites the page header of table's root page in the
// database file at path, as a failing card or a torn write would: the file
// still opens, and only what reads that table (or checks every page) sees
// the damage.
func damageTable(t *testing.T, path, table string) {
	t.Helper()
	pageSize := query[int64](t, path, `PRAGMA page_size`)
	root := query[int64](t, path, `SELECT rootpage FROM sqlite_schema WHERE name = ?`, table)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(bytes.Repeat([]byte{0xff}, 12), (root-1)*pageSize); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}

// openConfigured loads the config at cfgPath and opens its database, with
// the scope of its global memory.
func openConfigured(t *testing.T, cfgPath string) (*config.Config, *memory.Store, string) {
	t.Helper()
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	st, err := memory.Open(t.Context(), cfg.Storage.Path)
	if err != nil {
		t.Fatal(err)
	}
	scope, err := memoryScope(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	return cfg, st, scope
}

// seedHistory fills the HISTORY of the database at cfgPath's storage.path,
// so its table spans pages, and closes the database checkpointed.
func seedHistory(t *testing.T, cfgPath string) *config.Config {
	t.Helper()
	cfg, st, scope := openConfigured(t, cfgPath)
	for i := range 200 {
		entry := fmt.Sprintf("[2026-11-%02d] The owner asked about item %d of the garden plan. %s", i%28+1, i, strings.Repeat("Notes. ", 20))
		if err := st.AppendHistory(t.Context(), scope, time.Time{}, entry); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// A database file that is not one, or one with a damaged page: the
// gateway exits 78 naming the file and the newest backup to restore, as
// do the commands that read it; nothing starts on it.
func TestDamagedDatabaseRefused(t *testing.T) {
	for _, tt := range []struct {
		name   string
		damage func(t *testing.T, db string)
		want   string
	}{
		{"not a database", func(t *testing.T, db string) {
			if err := os.WriteFile(db, []byte(strings.Repeat("this is not a database\n", 400)), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "file is not a database"},
		{"a damaged page", func(t *testing.T, db string) { damageTable(t, db, "history") }, "malformed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			backups := filepath.Join(dir, "backups")
			tg := telegramtest.NewServer(t, botToken)
			values := telegramValues(tg)
			values["storage.backup.dir"] = backups
			cfgPath := writeConfig(t, dir, "http://127.0.0.1:1/v1", values)
			cfg := seedHistory(t, cfgPath)
			newest := filepath.Join(backups, "nanobot-20261202T030000Z.db")
			for _, b := range []string{filepath.Join(backups, "nanobot-20261201T030000Z.db"), newest} {
				if r := runCLI(t.Context(), "", "-c", cfgPath, "backup", b); r.code != 0 {
					t.Fatalf("backup = %d: %s", r.code, r.stderr)
				}
			}
			tt.damage(t, cfg.Storage.Path)

			r := runCLI(t.Context(), "", "-c", cfgPath, "gateway")
			if r.code != exitConfig {
				t.Errorf("gateway on %s = %d, want %d; stderr %q", tt.name, r.code, exitConfig, r.stderr)
			}
			for _, want := range []string{cfg.Storage.Path + " is damaged", tt.want, "nanobot restore " + newest} {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("gateway's message lacks %q:\n%s", want, r.stderr)
				}
			}
			// The owner hears of it on Telegram once, however often a
			// supervisor starts the gateway again.
			if r := runCLI(t.Context(), "", "-c", cfgPath, "gateway"); r.code != exitConfig {
				t.Errorf("second start = %d", r.code)
			}
			if n := sentTo(tg, owner, cfg.Storage.Path+" is damaged"); n != 1 {
				t.Errorf("the owner was told %d times of the damage, want once; sent %+v", n, tg.Sent())
			}
			if tt.name == "not a database" {
				r := runCLI(t.Context(), "", "-c", cfgPath, "memory", "show")
				if r.code != exitConfig || !strings.Contains(r.stderr, cfg.Storage.Path+" is damaged") || !strings.Contains(r.stderr, "nanobot restore "+newest) {
					t.Errorf("memory show on %s = %d, stderr %q", tt.name, r.code, r.stderr)
				}
			}

			// What the message says to do works.
			if r := runCLI(t.Context(), "", "-c", cfgPath, "restore", newest); r.code != 0 {
				t.Fatalf("restore = %d: %s", r.code, r.stderr)
			}
			if n := query[int64](t, cfg.Storage.Path, `SELECT count(*) FROM history`); n != 200 {
				t.Errorf("%d history entries after the restore, want 200", n)
			}
		})
	}
}

// A page damaged while the gateway runs is found when the next backup
// fails: /readyz, /status and the metric say so, and the owner is told on
// Telegram once, however many backups fail after.
func TestDamageFoundAfterAFailedBackup(t *testing.T) {
	clock := scheduletest.New(time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC))
	dir := t.TempDir()
	addr := freeAddr(t)
	backups := filepath.Join(dir, "backups")
	values := map[string]string{"gateway.listen": addr, "storage.backup.dir": backups, "storage.backup.every": "24h"}
	cfg := seedHistory(t, writeConfig(t, dir, "http://127.0.0.1:1/v1", values))
	// A copy from an hour ago: the next one is due in 23 hours.
	if r := runCLI(t.Context(), "", "-c", filepath.Join(dir, "config.yaml"), "backup", filepath.Join(backups, "nanobot-20261203T080000Z.db")); r.code != 0 {
		t.Fatalf("backup = %d: %s", r.code, r.stderr)
	}
	h := startGatewayIn(t, dir, clock, values)
	waitLogged(t, h.logs, "database checked", "result=ok")
	h.model.Script(openaitest.Reply{Text: "all well"})
	h.ask("hello")

	damageTable(t, cfg.Storage.Path, "history")
	clock.Advance(24 * time.Hour)
	waitLogged(t, h.logs, "database damaged")
	told := waitSentContaining(t, h.tg, owner, "The database is damaged")
	for _, want := range []string{cfg.Storage.Path, "nanobot restore " + filepath.Join(backups, "nanobot-20261203T080000Z.db")} {
		if !strings.Contains(told.Text, want) {
			t.Errorf("the owner was told %q, want it to name %s", told.Text, want)
		}
	}
	code, body, err := httpGet(t.Context(), "http://"+addr+"/readyz")
	if err != nil || code != http.StatusServiceUnavailable || !strings.Contains(body, "database damaged") {
		t.Errorf("/readyz = %d %q (%v), want 503 saying the database is damaged", code, body, err)
	}
	_, metrics, err := httpGet(t.Context(), "http://"+addr+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := metricValue(metrics, "nanobot_database_damaged"); !ok || v != 1 {
		t.Errorf("nanobot_database_damaged = %v (%v), want 1", v, ok)
	}
	if status := h.ask("/status"); !strings.Contains(status.Text, "DAMAGED") {
		t.Errorf("/status = %q, want the damage", status.Text)
	}

	// The retry an hour later fails and checks again, and tells nobody.
	clock.Advance(time.Hour)
	waitLogged(t, h.logs, "backup failed", "20261204T100000Z")
	if n := strings.Count(h.logs.String(), "msg=\"database damaged\""); n != 2 {
		t.Errorf("%d checks found the damage, want 2 (one per failed backup)", n)
	}
	h.ask("/status") // what was sent before its answer has reached Telegram
	n := 0
	for _, m := range h.tg.Sent() {
		if strings.Contains(m.Text, "The database is damaged") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the owner was told of the damage %d times, want once", n)
	}
}

// A gateway whose database is gone while Litestream's state of it remains
// (a replica exists, a restore is pending) does not start an empty one,
// which would hide the replica and make `litestream restore` refuse the
// path; told to, it does.
func TestEmptyStartRefusedWhenReplicated(t *testing.T) {
	tg := telegramtest.NewServer(t, botToken)
	model := openaitest.NewServer(t)
	dir := t.TempDir()
	cfgPath := gatewayConfig(t, dir, tg, model, nil)
	db := filepath.Join(dir, "data", "nanobot.db")
	state := filepath.Join(dir, "data", ".nanobot.db-litestream")
	if err := os.MkdirAll(filepath.Join(state, "generations"), 0o700); err != nil {
		t.Fatal(err)
	}

	r := runCLI(t.Context(), "", "-c", cfgPath, "gateway")
	if r.code != exitConfig || !strings.Contains(r.stderr, state) || !strings.Contains(r.stderr, "--no-deps litestream restore") ||
		!strings.Contains(r.stderr, "storage.allow_empty_start") {
		t.Errorf("gateway with a replica and no database = %d, stderr %q; want %d pointing at the restore", r.code, r.stderr, exitConfig)
	}
	if _, err := os.Stat(db); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the refused gateway left a database behind (%v): a restore would refuse its path", err)
	}

	// Told to, by the flag or the key, it starts.
	for _, how := range []struct {
		extra map[string]string
		flags []string
	}{{nil, []string{"--allow-empty-start"}}, {map[string]string{"storage.allow_empty_start": "true"}, nil}} {
		os.Remove(db)
		h := &gatewayHarness{t: t, tg: tg, model: model, dir: dir, logs: &syncBuffer{}, flags: how.flags}
		h.cfg = gatewayConfig(t, dir, tg, model, how.extra)
		h.start()
		waitLogged(t, h.logs, "gateway started")
		if err := h.stop(); err != nil {
			t.Errorf("gateway told to start empty (%v %v) stopped with %v", how.extra, how.flags, err)
		}
		if memory.Fresh(db) {
			t.Errorf("no database after a start told to begin empty (%v %v)", how.extra, how.flags)
		}
	}

	// A database that exists is never in question.
	h := &gatewayHarness{t: t, tg: tg, model: model, dir: dir, logs: &syncBuffer{}}
	h.cfg = gatewayConfig(t, dir, tg, model, nil)
	h.start()
	waitLogged(t, h.logs, "gateway started")
	if err := h.stop(); err != nil {
		t.Errorf("gateway on an existing database stopped with %v", err)
	}
}
