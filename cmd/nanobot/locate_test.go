package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot"
	"github.com/nanobot-go/nanobot/agent/openai/openaitest"
)

// The config file is found from anywhere: -c, $NANOBOT_CONFIG, then
// ./config.yaml, the user's config directory and ~/.nanobot, in that order;
// with none, the error says where it looked and what writes one.
func TestConfigSearchOrder(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	work := filepath.Join(root, "work")
	xdg := filepath.Join(root, "xdg")
	named := filepath.Join(root, "named.yaml")
	cwdCfg := filepath.Join(work, "config.yaml")
	xdgCfg := filepath.Join(xdg, "nanobot", "config.yaml")
	homeCfg := filepath.Join(home, ".config", "nanobot", "config.yaml")
	dotCfg := filepath.Join(home, ".nanobot", "config.yaml")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(work)
	write := func(t *testing.T, paths ...string) {
		t.Helper()
		for _, p := range paths {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			writeConfig(t, filepath.Dir(p), "http://127.0.0.1:1/v1", nil)
			if base := filepath.Join(filepath.Dir(p), "config.yaml"); base != p {
				if err := os.Rename(base, p); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	clean := func(t *testing.T) {
		for _, p := range []string{named, cwdCfg, xdgCfg, homeCfg, dotCfg} {
			os.Remove(p)
		}
	}

	for _, tt := range []struct {
		name  string
		files []string
		env   map[string]string
		args  []string
		want  string
	}{
		{"-c wins", []string{named, cwdCfg, homeCfg}, map[string]string{"HOME": home, "NANOBOT_CONFIG": cwdCfg}, []string{"-c", named}, named},
		{"then NANOBOT_CONFIG", []string{named, cwdCfg}, map[string]string{"HOME": home, "NANOBOT_CONFIG": named}, nil, named},
		{"then ./config.yaml", []string{cwdCfg, homeCfg, dotCfg}, map[string]string{"HOME": home}, nil, cwdCfg},
		{"then XDG_CONFIG_HOME", []string{xdgCfg, homeCfg, dotCfg}, map[string]string{"HOME": home, "XDG_CONFIG_HOME": xdg}, nil, xdgCfg},
		{"then ~/.config/nanobot", []string{homeCfg, dotCfg}, map[string]string{"HOME": home}, nil, homeCfg},
		{"then ~/.nanobot", []string{dotCfg}, map[string]string{"HOME": home}, nil, dotCfg},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clean(t)
			write(t, tt.files...)
			r := runCLIWithEnv(t.Context(), tt.env, append(tt.args, "config", "check")...)
			if r.code != 0 || !strings.HasPrefix(r.stdout, "# "+tt.want+" is valid") {
				t.Errorf("config check = %d, used %q; want %s\n%s", r.code, firstLine(r.stdout), tt.want, r.stderr)
			}
		})
	}

	clean(t)
	r := runCLIWithEnv(t.Context(), map[string]string{"HOME": home}, "status")
	if r.code != exitConfig {
		t.Errorf("status without any config = %d, want %d", r.code, exitConfig)
	}
	for _, want := range []string{"./config.yaml", homeCfg, dotCfg, "nanobot onboard"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("the error without any config lacks %q:\n%s", want, r.stderr)
		}
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// Outside a checkout onboard writes to the user's config directory, with
// the workspace and the database in the user's data directory, and every
// command then finds it from any folder; in a checkout it writes
// ./config.yaml as before.
func TestOnboardWritesWhereCommandsLook(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	elsewhere := filepath.Join(root, "elsewhere")
	if err := os.MkdirAll(elsewhere, 0o755); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HOME": home, "TELEGRAM_BOT_TOKEN": "424242:onboard-token-abcdefghij", "NANOBOT_OWNER": "777"}
	t.Chdir(elsewhere)
	r := runCLIWithEnv(t.Context(), env, "onboard", "--non-interactive", "--base-url", "http://127.0.0.1:11434/v1")
	cfgPath := filepath.Join(home, ".config", "nanobot", "config.yaml")
	data := filepath.Join(home, ".local", "share", "nanobot")
	if r.code != 0 || !strings.Contains(r.stdout, "Wrote "+cfgPath) || !strings.Contains(r.stdout, "Data: "+data) {
		t.Fatalf("onboard outside a checkout = %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, p := range []string{filepath.Join(data, "workspace"), cfgPath} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("after onboard: %v", err)
		}
	}
	if _, err := os.Stat(filepath.Join(elsewhere, "config.yaml")); err == nil {
		t.Error("onboard outside a checkout wrote ./config.yaml")
	}
	r = runCLIWithEnv(t.Context(), env, "memory", "show")
	if r.code != 0 {
		t.Errorf("memory show from another folder = %d: %s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(data, "nanobot.db")); err != nil {
		t.Errorf("the database is not in the data directory: %v", err)
	}

	checkout := filepath.Join(root, "src")
	if err := os.MkdirAll(checkout, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(checkout, "go.mod"), []byte("module "+modulePath+"\n\ngo 1.24\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(checkout)
	r = runCLIWithEnv(t.Context(), env, "onboard", "--non-interactive")
	if r.code != 0 || !strings.Contains(r.stdout, "Wrote "+filepath.Join(checkout, "config.yaml")) {
		t.Errorf("onboard in a checkout = %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// The example config, unedited, talks to whatever endpoint and model the
// environment names: the quick start needs no edit of a tracked file.
func TestExampleConfigTakesEndpointFromEnvironment(t *testing.T) {
	stub := openaitest.NewServer(t)
	stub.Script(openaitest.Reply{Text: "Hello from the local model."})
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgPath, nanobot.ExampleConfig, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("OPENAI_BASE_URL", stub.URL())
	t.Setenv("NANOBOT_MODEL", "llama3.2")
	t.Setenv("OPENAI_API_KEY", "")
	r := runCLI(t.Context(), "", "-c", cfgPath, "agent", "-m", "hello")
	if r.code != 0 || !strings.Contains(r.stdout, "Hello from the local model.") {
		t.Fatalf("agent -m with the example config = %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if req, ok := stub.LastRequest(); !ok || req.Model != "llama3.2" {
		t.Errorf("the request asked for model %q, want NANOBOT_MODEL's llama3.2", req.Model)
	}
}

// config check says, in the gateway's own words, what would stop the
// gateway: a config it calls valid the gateway does not then refuse
// without warning.
func TestConfigCheckWarnsAsTheGatewayRefuses(t *testing.T) {
	cfgPath := writeConfig(t, t.TempDir(), "http://127.0.0.1:1/v1", map[string]string{"channels.telegram.enabled": "true"})
	t.Setenv("TELEGRAM_BOT_TOKEN", "")
	gw := runCLI(t.Context(), "", "-c", cfgPath, "gateway")
	if gw.code != exitConfig {
		t.Fatalf("gateway without a token = %d, want %d: %s", gw.code, exitConfig, gw.stderr)
	}
	refusal := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(gw.stderr), "nanobot:"))
	r := runCLI(t.Context(), "", "config", "check", cfgPath)
	if r.code != 0 || !strings.Contains(r.stdout, "# warning: `nanobot gateway` will not start: "+refusal) {
		t.Errorf("config check = %d; want a warning with the gateway's words %q:\n%s", r.code, refusal, r.stdout)
	}

	ok := writeConfig(t, t.TempDir(), "http://127.0.0.1:1/v1", map[string]string{
		"channels.telegram.enabled": "true", "channels.telegram.token": "123456:a-token-that-is-set-abcdef", "channels.telegram.allow_from": "[1]"})
	if r := runCLI(t.Context(), "", "config", "check", ok); r.code != 0 || strings.Contains(r.stdout, "# warning:") {
		t.Errorf("config check of a complete config = %d, warnings:\n%s", r.code, r.stdout)
	}
}
