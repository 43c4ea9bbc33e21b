package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/nanobot-go/nanobot"
	"github.com/nanobot-go/nanobot/agent/prompt"
	"github.com/nanobot-go/nanobot/config"
)

// onboard writes config.yaml from the documented example, and creates the
// workspace and the data directory.
func (a *app) onboard(_ context.Context, cfgPath string, args []string) error {
	fs := newFlags("onboard", a.stderr)
	dir := fs.String("dir", "", "directory to write config.yaml in, with the workspace and data beside it (default: see above)")
	force := fs.Bool("force", false, "overwrite an existing config.yaml")
	nonInteractive := fs.Bool("non-interactive", false, "take values from flags and the environment; ask nothing")
	token := fs.String("telegram-token", "", "Telegram bot token (default: $TELEGRAM_BOT_TOKEN, kept as a reference)")
	baseURL := fs.String("base-url", "", "OpenAI-compatible API base URL")
	model := fs.String("model", "", "model name")
	apiKey := fs.String("api-key", "", "API key (default: $OPENAI_API_KEY, kept as a reference)")
	owner := fs.String("owner", "", "your numeric Telegram user id (default: $NANOBOT_OWNER)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	path, data := a.onboardTarget(*dir, cfgPath)
	if _, err := os.Stat(path); err == nil && !*force {
		return fmt.Errorf("%s already exists; pass --force to overwrite it", path)
	}

	def := config.Default()
	answers := map[string]string{}
	if data != "" {
		answers["agent.workspace"] = filepath.Join(data, "workspace")
		answers["storage.path"] = filepath.Join(data, "nanobot.db")
	}
	// Secrets from the environment stay references, so the file holds no secret.
	secret := func(key, flagValue, env, prompt string) {
		switch {
		case flagValue != "":
			answers[key] = flagValue
		case a.getenv(env) != "":
			answers[key] = "${" + env + "}"
		case !*nonInteractive:
			if v := a.askSecret(prompt + " (leave empty to set " + env + " later)"); v != "" {
				answers[key] = v
			}
		}
	}
	plain := func(key, flagValue, env, prompt, dflt string) {
		v := flagValue
		if v == "" && env != "" {
			v = a.getenv(env)
		}
		if v == "" && !*nonInteractive {
			v = a.ask(prompt, dflt)
		}
		if v != "" && v != dflt {
			answers[key] = v
		}
	}
	secret("channels.telegram.token", *token, "TELEGRAM_BOT_TOKEN", "Telegram bot token from @BotFather")
	plain("provider.base_url", *baseURL, "", "Model API base URL", def.Provider.BaseURL)
	plain("provider.model", *model, "", "Model", def.Provider.Model)
	secret("provider.api_key", *apiKey, "OPENAI_API_KEY", "API key")
	plain("channels.telegram.allow_from", *owner, "NANOBOT_OWNER", "Your numeric Telegram user id (send /start to the bot to learn it)", "")
	if v, ok := answers["channels.telegram.allow_from"]; ok {
		answers["channels.telegram.allow_from"] = "[" + v + "]"
	}
	if _, ok := answers["channels.telegram.token"]; ok {
		answers["channels.telegram.enabled"] = "true"
	}

	return a.writeOnboarded(path, answers)
}

// writeOnboarded writes config.yaml at path from the example with the
// answers, creates the workspace and the data directory, and says what is
// left to do.
func (a *app) writeOnboarded(path string, answers map[string]string) error {
	out, err := config.SetKeys(nanobot.ExampleConfig, answers)
	if err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	// 0600: the file may hold a typed secret.
	if err := os.WriteFile(path, out, 0o600); err != nil {
		return err
	}
	if err := os.Chmod(path, 0o600); err != nil { // WriteFile keeps an old file's mode
		return err
	}
	cfg, err := config.Load(path)
	if err != nil {
		return fmt.Errorf("the written config does not load: %w", err)
	}
	for _, d := range []string{cfg.Agent.Workspace, filepath.Dir(cfg.Storage.Path)} {
		if err := os.MkdirAll(d, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
	}
	starters, err := prompt.WriteStarters(cfg.Agent.Workspace)
	if err != nil {
		return fmt.Errorf("write the workspace's starter files: %w", err)
	}
	fmt.Fprintf(a.stdout, "Wrote %s\nWorkspace: %s\nData: %s\n", cfg.Path, cfg.Agent.Workspace, filepath.Dir(cfg.Storage.Path))
	if len(starters) > 0 {
		fmt.Fprintf(a.stdout, "Starter files in the workspace (edit them; they are part of every prompt): %s\n", strings.Join(starters, ", "))
	}
	if missing := cfg.Missing(); len(missing) > 0 {
		fmt.Fprintln(a.stdout, "Still to do:")
		for _, m := range missing {
			fmt.Fprintln(a.stdout, "  -", m)
		}
	}
	fmt.Fprintln(a.stdout, "Next: nanobot config check, then nanobot gateway (or nanobot agent to chat here).")
	return nil
}

// onboardTarget is where onboard writes config.yaml, and the directory of
// the workspace and the data when they do not go beside it ("" then): with
// --dir, there; with -c or $NANOBOT_CONFIG, that file; in a checkout of the
// source, or where a config.yaml is, the current directory; elsewhere the
// user's config directory (~/.config/nanobot) with the data in the user's
// data directory (~/.local/share/nanobot), where every command finds them.
func (a *app) onboardTarget(dir, cfgPath string) (path, data string) {
	switch {
	case dir != "":
		return filepath.Join(dir, "config.yaml"), ""
	case a.cfgNamed:
		return cfgPath, ""
	}
	if _, err := os.Stat("config.yaml"); err == nil || inCheckout(".") {
		return "config.yaml", ""
	}
	if conf, data := a.userConfigDir(), a.userDataDir(); conf != "" && data != "" {
		return filepath.Join(conf, "config.yaml"), data
	}
	return "config.yaml", ""
}

// ask prints a prompt and reads one line; dflt is used for an empty answer.
func (a *app) ask(prompt, dflt string) string {
	if dflt != "" {
		fmt.Fprintf(a.stdout, "%s [%s]: ", prompt, dflt)
	} else {
		fmt.Fprintf(a.stdout, "%s: ", prompt)
	}
	if a.in == nil {
		a.in = bufio.NewReader(a.stdin)
	}
	line, _ := a.in.ReadString('\n')
	if v := strings.TrimSpace(line); v != "" {
		return v
	}
	return dflt
}

// askSecret is ask without echoing the answer when standard input is a
// terminal (through stty, so no terminal library is needed; where stty is
// missing the answer is echoed as before).
func (a *app) askSecret(prompt string) string {
	if f, ok := a.stdin.(*os.File); ok {
		if isTerminal(f) {
			off := exec.Command("stty", "-echo")
			off.Stdin = f
			if off.Run() == nil {
				defer func() {
					on := exec.Command("stty", "echo")
					on.Stdin = f
					on.Run()
					fmt.Fprintln(a.stdout)
				}()
			}
		}
	}
	return a.ask(prompt, "")
}
