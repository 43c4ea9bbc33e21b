package main

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/agent/openai/openaitest"
	"github.com/nanobot-go/nanobot/memory"
)

func TestConfigFlagAnywhere(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		wantPath string
		wantRest []string
	}{
		{"before", []string{"-c", "a.yaml", "gateway"}, "a.yaml", []string{"gateway"}},
		{"after", []string{"gateway", "-c", "a.yaml"}, "a.yaml", []string{"gateway"}},
		{"long after", []string{"agent", "--config", "a.yaml", "-m", "hi"}, "a.yaml", []string{"agent", "-m", "hi"}},
		{"equals", []string{"agent", "-m", "hi", "--config=a.yaml"}, "a.yaml", []string{"agent", "-m", "hi"}},
		{"single dash equals", []string{"-config=a.yaml", "status"}, "a.yaml", []string{"status"}},
		{"last wins", []string{"-c", "a.yaml", "status", "-c", "b.yaml"}, "b.yaml", []string{"status"}},
		{"none", []string{"status"}, "config.yaml", []string{"status"}},
		{"after --", []string{"safety", "check", "--", "-c", "x"}, "config.yaml", []string{"safety", "check", "--", "-c", "x"}},
		{"other flags kept", []string{"memory", "history", "--chat", "42"}, "config.yaml", []string{"memory", "history", "--chat", "42"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, rest, err := configFlag("config.yaml", tc.args)
			if err != nil {
				t.Fatalf("configFlag(%q): %v", tc.args, err)
			}
			if path != tc.wantPath || !slices.Equal(rest, tc.wantRest) {
				t.Errorf("configFlag(%q) = %q %q, want %q %q", tc.args, path, rest, tc.wantPath, tc.wantRest)
			}
		})
	}
	for _, args := range [][]string{{"gateway", "-c"}, {"--config="}, {"status", "--config"}} {
		if _, _, err := configFlag("config.yaml", args); err == nil {
			t.Errorf("configFlag(%q) = nil error, want one", args)
		}
	}
}

// The forms a new user types: the config named after the command.
func TestConfigAfterCommand(t *testing.T) {
	stub := openaitest.NewServer(t)
	cfg := writeConfig(t, t.TempDir(), stub.URL(), nil)
	for _, args := range [][]string{
		{"agent", "-c", cfg, "-m", "hi"},
		{"agent", "-m", "hi", "--config", cfg},
		{"agent", "--config=" + cfg, "-m", "hi"},
	} {
		stub.Script(openaitest.Reply{Text: "hello there"})
		r := runCLI(t.Context(), "", args...)
		if r.code != 0 || strings.TrimSpace(r.stdout) != "hello there" {
			t.Errorf("nanobot %q = %d %q, stderr:\n%s", args, r.code, r.stdout, r.stderr)
		}
	}
	if r := runCLI(t.Context(), "", "status", "-c", cfg); r.code != 0 || !strings.Contains(r.stdout, cfg) {
		t.Errorf("status -c = %d %q %q", r.code, r.stdout, r.stderr)
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{
		{"gateway", "-h"}, {"gateway", "--help"}, {"agent", "-m", "x", "--help"}, {"help", "gateway"},
		{"memory", "--help"}, {"safety", "check", "-h"}, {"config", "--help"}, {"status", "-help"},
	} {
		r := runCLI(t.Context(), "", args...)
		if r.code != 0 || !strings.HasPrefix(r.stdout, "Usage: nanobot") || r.stderr != "" {
			t.Errorf("nanobot %q = %d, stdout %q, stderr %q; want usage on stdout and exit 0", args, r.code, r.stdout, r.stderr)
		}
		if !strings.Contains(r.stdout, args[0]) && args[0] != "help" {
			t.Errorf("nanobot %q printed the usage of another command:\n%s", args, r.stdout)
		}
	}
	for _, args := range [][]string{{"help"}, {"--help"}, {"-h"}} {
		if r := runCLI(t.Context(), "", args...); r.code != 0 || !strings.Contains(r.stdout, "Commands:") {
			t.Errorf("nanobot %q = %d %q", args, r.code, r.stdout)
		}
	}
	if r := runCLI(t.Context(), "", "help", "fly"); r.code != exitUsage {
		t.Errorf("help fly: exit %d, want %d", r.code, exitUsage)
	}
	r := runCLI(t.Context(), "", "agent", "--bogus")
	if r.code != exitUsage || !strings.Contains(r.stderr, "flag provided but not defined: -bogus") || !strings.Contains(r.stderr, "nanobot agent --help") {
		t.Errorf("agent --bogus = %d %q", r.code, r.stderr)
	}
}

// Every command in the overview has its own help.
func TestEveryCommandHasHelp(t *testing.T) {
	_, commands, _ := strings.Cut(usageText, "Commands:")
	for _, line := range strings.Split(commands, "\n") {
		if !strings.HasPrefix(line, "  ") || strings.HasPrefix(line, "   ") {
			continue
		}
		cmd := strings.Fields(line)[0]
		if _, ok := commandHelp[cmd]; !ok {
			t.Errorf("command %q is listed but has no help", cmd)
		}
	}
}

func TestVersion(t *testing.T) {
	r := runCLI(t.Context(), "", "version")
	if r.code != 0 {
		t.Fatalf("version: exit %d, %q", r.code, r.stderr)
	}
	fts := "fts5: no"
	if memory.FTS5() {
		fts = "fts5: yes"
	}
	for _, want := range []string{"nanobot ", "commit: ", "go: go1.", fts} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("version output lacks %q:\n%s", want, r.stdout)
		}
	}
}

// A mistyped command gets the nearest name and a pointer at the list, not
// the whole usage.
func TestUnknownCommandSuggests(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"agnet"}, `nanobot: unknown command "agnet"; did you mean "agent"?` + "\nRun 'nanobot --help' for the list of commands.\n"},
		{[]string{"Stauts"}, `nanobot: unknown command "Stauts"; did you mean "status"?` + "\nRun 'nanobot --help' for the list of commands.\n"},
		{[]string{"help", "bakup"}, `nanobot: unknown command "bakup"; did you mean "backup"?` + "\nRun 'nanobot --help' for the list of commands.\n"},
		{[]string{"fly"}, `nanobot: unknown command "fly"` + "\nRun 'nanobot --help' for the list of commands.\n"},
	} {
		r := runCLI(t.Context(), "", tc.args...)
		if r.code != exitUsage || r.stderr != tc.want || r.stdout != "" {
			t.Errorf("nanobot %q = %d, stdout %q, stderr %q; want %d and %q", tc.args, r.code, r.stdout, r.stderr, exitUsage, tc.want)
		}
	}
}

// Every flag a command's synopsis names has a help line of its own.
func TestEveryFlagHasHelp(t *testing.T) {
	flag := regexp.MustCompile(`--[a-z][a-z-]*`)
	for cmd, text := range commandHelp {
		synopsis, body, _ := strings.Cut(text, "\n")
		for _, f := range flag.FindAllString(synopsis, -1) {
			if !regexp.MustCompile(`(?m)^  (-[a-z], )?` + f + `\b`).MatchString(body) {
				t.Errorf("nanobot %s --help: flag %s has no help line", cmd, f)
			}
		}
	}
	r := runCLI(t.Context(), "", "onboard", "--help")
	for _, f := range []string{"--dir", "--force", "--non-interactive", "--telegram-token", "--base-url", "--model", "--api-key", "--owner"} {
		if !strings.Contains(r.stdout, "\n  "+f+" ") {
			t.Errorf("onboard --help lacks a line for %s:\n%s", f, r.stdout)
		}
	}
}

// Every listing command says it has nothing in the same way: one sentence.
func TestEmptyListings(t *testing.T) {
	cfg := writeConfig(t, t.TempDir(), "http://127.0.0.1:1/v1", nil)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"cron", "list"}, "No scheduled jobs.\n"},
		{[]string{"cron", "list", "--chat", "42"}, "No scheduled jobs for chat 42.\n"},
		{[]string{"memory", "history"}, "No HISTORY entries.\n"},
		{[]string{"memory", "history", "--search", "rent"}, "No HISTORY entries matching \"rent\".\n"},
		{[]string{"audit"}, "No tool calls in the last 24h.\n"},
		{[]string{"audit", "--denied", "--chat", "42", "--since", "7d"}, "No refused tool calls for chat telegram:42 in the last 7d.\n"},
	} {
		r := runCLI(t.Context(), "", append([]string{"-c", cfg}, tc.args...)...)
		if r.code != 0 || r.stdout != tc.want {
			t.Errorf("nanobot %q = %d %q (stderr %q), want %q", tc.args, r.code, r.stdout, r.stderr, tc.want)
		}
	}
	if r := runCLI(t.Context(), "", "-c", cfg, "memory", "show"); r.code != 0 || r.stderr != "MEMORY is empty.\n" {
		t.Errorf("memory show = %d %q %q", r.code, r.stdout, r.stderr)
	}
}

// nanobot status names the model on one line, also with fallbacks.
func TestStatusNamesTheModelOnce(t *testing.T) {
	cfg := writeConfig(t, t.TempDir(), "http://127.0.0.1:1/v1", map[string]string{"provider.model": "main-model"})
	r := runCLI(t.Context(), "", "status", "-c", cfg)
	if r.code != 0 || len(regexp.MustCompile(`(?m)^model `).FindAllString(r.stdout, -1)) != 1 || strings.Count(r.stdout, "main-model") != 1 {
		t.Errorf("status = %d, want one model line:\n%s", r.code, r.stdout)
	}
}
