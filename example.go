// Package nanobot is an unattended personal AI assistant: a daemon that answers on Telegram and in the
// terminal, uses tools in a workspace and remembers in SQLite. The program is cmd/nanobot.
package nanobot

import _ "embed"

// ExampleConfig is the documented example config.yaml: every key with its default and a one-line
// comment. `nanobot onboard` starts a user's configuration from it; treat it as read-only.
//
//go:embed config.yaml
var ExampleConfig []byte
