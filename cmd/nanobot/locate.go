package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/nanobot-go/nanobot/config"
)

// modulePath is this program's module: a go.mod declaring it marks a
// checkout of the source.
const modulePath = "github.com/nanobot-go/nanobot"

// configLocations are where the config file is looked for when neither -c
// nor $NANOBOT_CONFIG names one, in order: the current directory, then the
// user's config directory ($XDG_CONFIG_HOME/nanobot, ~/.config/nanobot),
// then ~/.nanobot.
func (a *app) configLocations() []string {
	locs := []string{"config.yaml"}
	if dir := a.userConfigDir(); dir != "" {
		locs = append(locs, filepath.Join(dir, "config.yaml"))
	}
	if home := a.getenv("HOME"); home != "" {
		locs = append(locs, filepath.Join(home, ".nanobot", "config.yaml"))
	}
	return locs
}

// userConfigDir is $XDG_CONFIG_HOME/nanobot, or ~/.config/nanobot; "" when
// neither variable is set.
func (a *app) userConfigDir() string {
	return a.xdgDir("XDG_CONFIG_HOME", ".config")
}

// userDataDir is $XDG_DATA_HOME/nanobot, or ~/.local/share/nanobot.
func (a *app) userDataDir() string {
	return a.xdgDir("XDG_DATA_HOME", filepath.Join(".local", "share"))
}

func (a *app) xdgDir(env, underHome string) string {
	if dir := a.getenv(env); filepath.IsAbs(dir) {
		return filepath.Join(dir, "nanobot")
	}
	if home := a.getenv("HOME"); home != "" {
		return filepath.Join(home, underHome, "nanobot")
	}
	return ""
}

// findConfig is the config file to use: the one named by -c or
// $NANOBOT_CONFIG, else the first of configLocations that exists. When
// none does, path is the first location and missing says where it looked.
func (a *app) findConfig(flagPath string) (path string, missing error) {
	if flagPath != "" {
		return flagPath, nil
	}
	if env := a.getenv("NANOBOT_CONFIG"); env != "" {
		return env, nil
	}
	locs := a.configLocations()
	for _, p := range locs {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	shown := make([]string, len(locs))
	for i, p := range locs {
		shown[i] = p
		if i == 0 {
			shown[i] = "./" + p
		}
	}
	return locs[0], &config.Error{File: locs[0], Problem: fmt.Sprintf(
		"no config file found; looked for %s (NANOBOT_CONFIG is unset): `nanobot onboard` writes one, or pass -c FILE",
		strings.Join(shown, ", "))}
}

// loadConfig loads the config file at path; when none was named and none
// was found, the error says where it was looked for.
func (a *app) loadConfig(path string) (*config.Config, error) {
	if a.cfgMissing != nil {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return nil, a.cfgMissing
		}
	}
	return config.Load(path)
}

// inCheckout reports whether dir is the root of a checkout of the source,
// where the tracked config.yaml is the one to use.
func inCheckout(dir string) bool {
	f, err := os.Open(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if mod, ok := strings.CutPrefix(strings.TrimSpace(s.Text()), "module "); ok {
			return strings.TrimSpace(mod) == modulePath
		}
	}
	return false
}
