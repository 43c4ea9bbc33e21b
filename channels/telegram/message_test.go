package telegram

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
)

func TestStripMention(t *testing.T) {
	for _, tc := range []struct {
		text, want string
		found      bool
	}{
		{"@nanobot hello", "hello", true},
		{"hello @NanoBot", "hello", true},
		{"hi @nanobot_two", "hi @nanobot_two", false},
		{"/stop@nanobot", "/stop", true},
		{"line one\n@nanobot line two", "line one\nline two", true},
		{"hey @nanobot what", "hey what", true},
		{"no mention", "no mention", false},
		{"", "", false},
	} {
		got, found := stripMention(tc.text, "@nanobot")
		if got != tc.want || found != tc.found {
			t.Errorf("stripMention(%q) = %q, %v, want %q, %v", tc.text, got, found, tc.want, tc.found)
		}
	}
}

func TestCommand(t *testing.T) {
	for _, tc := range []struct {
		text, want string
		forUs      bool
	}{
		{"/stop", "stop", true},
		{"/STATUS please", "status", true},
		{"/new@nanobot", "new", true},
		{"/new@otherbot", "", false},
		{"/unknown thing", "", true},
		{"plain text", "", true},
		{"/help\nmore", "help", true},
	} {
		got, forUs := command(tc.text, "nanobot")
		if got != tc.want || forUs != tc.forUs {
			t.Errorf("command(%q) = %q, %v, want %q, %v", tc.text, got, forUs, tc.want, tc.forUs)
		}
	}
}

func TestSanitizeName(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"report.pdf", "report.pdf"},
		{"../../etc/passwd", "passwd"},
		{`C:\Users\me\notes.txt`, "notes.txt"},
		{".bashrc", "bashrc"},
		{"..", "file"},
		{"", "file"},
		{"a<b>|c?.txt", "a_b__c_.txt"},
		{"отчёт 2024.docx", "отчёт 2024.docx"},
		{strings.Repeat("x", 300) + ".tar.gz", strings.Repeat("x", 97) + ".gz"},
	} {
		if got := sanitizeName(tc.in); got != tc.want {
			t.Errorf("sanitizeName(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func FuzzSanitizeName(f *testing.F) {
	for _, s := range []string{"report.pdf", "../x", ".hidden", "a/b\\c", "\x00\xff", strings.Repeat("é", 80)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got := sanitizeName(in)
		if got == "" || len(got) > maxNameBytes || strings.ContainsAny(got, `/\`+"\x00") ||
			strings.HasPrefix(got, ".") || !utf8.ValidString(got) {
			t.Errorf("sanitizeName(%q) = %q: not a safe file name", in, got)
		}
	})
}

func TestSaveUniqueNeverOverwrites(t *testing.T) {
	dir := t.TempDir()
	var names []string
	for i := range 3 {
		name, err := saveUnique(dir, "a.txt", []byte(fmt.Sprint(i)))
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	if want := "a.txt a-1.txt a-2.txt"; strings.Join(names, " ") != want {
		t.Errorf("names = %v, want %s", names, want)
	}
}

func TestAllowList(t *testing.T) {
	a := newAllowList([]string{" 1001 ", "@Bob", "carol", "-100500"})
	for _, tc := range []struct {
		user *models.User
		chat int64
		want bool
	}{
		{&models.User{ID: 1001}, 1001, true},
		{&models.User{ID: 7, Username: "bob"}, 7, true},
		{&models.User{ID: 8, Username: "CAROL"}, 8, true},
		{&models.User{ID: 9, Username: "mallory"}, 9, false},
		{&models.User{ID: 9}, -100500, true}, // a listed group admits its members
		{nil, 1, false},
	} {
		if got := a.permits(tc.user, tc.chat); got != tc.want {
			t.Errorf("permits(%+v, %d) = %v, want %v", tc.user, tc.chat, got, tc.want)
		}
	}
	if a.firstID != 1001 {
		t.Errorf("firstID = %d, want 1001", a.firstID)
	}
	if !newAllowList([]string{"*"}).permits(&models.User{ID: 5}, 5) {
		t.Error(`"*" does not admit everybody`)
	}
	if newAllowList(nil).permits(&models.User{ID: 5}, 5) {
		t.Error("an empty list admits somebody")
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want failure
	}{
		{&bot.TooManyRequestsError{Message: "slow down", RetryAfter: 3}, failRetryAfter},
		{fmt.Errorf("%w, Bad Request: can't parse entities: x", bot.ErrorBadRequest), failBadHTML},
		{fmt.Errorf("%w, Bad Request: chat not found", bot.ErrorBadRequest), failPermanent},
		{fmt.Errorf("%w, Forbidden: bot was blocked by the user", bot.ErrorForbidden), failPermanent},
		{errors.New("error response from telegram for method sendMessage, 502 Bad Gateway"), failTransient},
		{&apiError{method: "getUpdates", code: http.StatusConflict}, failTransient},
	} {
		if got, _ := classify(tc.err); got != tc.want {
			t.Errorf("classify(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
	if _, wait := classify(&bot.TooManyRequestsError{RetryAfter: 3}); wait != 3*time.Second {
		t.Errorf("retry wait = %v, want 3s", wait)
	}
}

func TestUnknownCommand(t *testing.T) {
	for _, tc := range []struct {
		text, want string
		ok         bool
	}{
		{"/foo", "foo", true},
		{"/Foo_2@some_bot and more", "foo_2", true},
		{"/stats\nsecond line", "stats", true},
		{"/status", "", false},
		{"/HELP", "", false},
		{"/etc/hosts is empty", "", false},
		{"/", "", false},
		{"/ x", "", false},
		{"/" + strings.Repeat("a", 33), "", false},
		{"hello /foo", "", false},
		{"/café", "", false},
	} {
		if got, ok := unknownCommand(tc.text); got != tc.want || ok != tc.ok {
			t.Errorf("unknownCommand(%q) = %q, %v, want %q, %v", tc.text, got, ok, tc.want, tc.ok)
		}
	}
}

func FuzzUnknownCommand(f *testing.F) {
	for _, s := range []string{"/foo", "/status@bot", "/etc/x", "/a_b\nc", "/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		name, ok := unknownCommand(text)
		if !ok {
			return
		}
		if cmd, _ := command("/"+name, ""); cmd != "" {
			t.Errorf("unknownCommand(%q) = %q, a known command", text, name)
		}
		if len(name) == 0 || len(name) > 32 || strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789_") != "" {
			t.Errorf("unknownCommand(%q) = %q, not a command's shape", text, name)
		}
	})
}
