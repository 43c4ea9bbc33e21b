// Command nanobot is a personal AI assistant daemon: a single-level agent
// loop behind Telegram or a terminal, with long-term memory in SQLite and a
// safety filter in front of every shell command.
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	goruntime "runtime"
	"syscall"
	"time"

	"github.com/nanobot-go/nanobot/config"
	"github.com/nanobot-go/nanobot/daemon"
	"github.com/nanobot-go/nanobot/memory"
	"github.com/nanobot-go/nanobot/safety/sandbox"
	"github.com/nanobot-go/nanobot/schedule"
)

// version (and, where the build has no VCS information, commit) are
// stamped at build time with -ldflags "-X main.version=... -X main.commit=...".
var (
	version = "dev"
	commit  = ""
)

// Exit codes: 78 (EX_CONFIG) tells supervisors that restarting will not
// help until the configuration is fixed (a bad config, a rejected bot
// token, a database from a newer version, a damaged or read-only database).
const (
	exitOK     = 0
	exitFail   = 1
	exitUsage  = 2
	exitConfig = 78
)

func main() {
	// Nothing reads heap profiles (there is no pprof endpoint); sampling
	// would cost a 1.4 MB bucket table and the pages it touches.
	goruntime.MemProfileRate = 0
	// Commands of the exec tool start this binary again as the sandbox
	// helper, which confines itself and becomes the shell.
	sandbox.RunHelper()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	os.Exit(exitCode(err, os.Stderr))
}

// run is the whole program; main only supplies the process's context and
// streams so tests can call it directly.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	a := &app{stdin: os.Stdin, stdout: stdout, stderr: stderr, getenv: os.Getenv}
	return a.run(ctx, args)
}

func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(stderr, "nanobot:", err)
	var cfgErr *config.Error
	var usage usageError
	var schema *memory.SchemaError
	var storage *daemon.StorageError
	switch {
	case errors.As(err, &cfgErr), errors.As(err, &storage):
		return exitConfig
	case errors.As(err, &schema) && schema.Newer():
		// An older binary on a newer database: restarting cannot help.
		return exitConfig
	case errors.As(err, &usage):
		return exitUsage
	default:
		return exitFail
	}
}

// usageError is a mistake on the command line.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// app holds the process's streams and environment.
type app struct {
	stdin          io.Reader
	in             *bufio.Reader // stdin, once something reads it by lines
	stdout, stderr io.Writer
	getenv         func(string) string
	clock          schedule.Clock // of scheduled work; nil: the system's
	cfgNamed       bool           // -c or $NANOBOT_CONFIG named the config file
	cfgMissing     error          // none was named and none found: where it was looked for
	abi            func() int     // the kernel's Landlock ABI; sandbox.ABI when nil
	progressEvery  time.Duration  // the least time between two status message updates; the channel's default when zero
}

// now is the clock of scheduled work.
func (a *app) now() schedule.Clock {
	if a.clock == nil {
		return schedule.SystemClock()
	}
	return a.clock
}

const usageText = `nanobot: a personal AI assistant

Usage:
  nanobot [-c config.yaml] <command> [flags]

Commands:
  agent [-m TEXT] [--session NAME]   chat in the terminal, or answer one message
  gateway                            run the daemon (Telegram, admin endpoint)
  onboard                            create config.yaml, the workspace and the data directory
  status                             show the effective setup and what is missing
  config check [FILE]                validate a config file and print it, secrets redacted
  memory show|history|edit|export|import
                                     inspect and edit long-term memory
  safety check [COMMAND ...]         judge shell commands with the loaded policy
  skills list                        show every skill, whether the model gets it, and why not
  audit [--since 24h] [--denied] [--chat ID]
                                     print the tool-call audit trail
  usage [--since 7d]                 print token usage per chat and day
  backup [--force] FILE              write a checked copy of the database (safe while the gateway runs)
  restore FILE                       replace the database with a backup, keeping the current one (gateway stopped)
  cron list|add|remove|run           scheduled jobs: list [--chat ID], add --message TEXT (--cron EXPR |
                                     --every DUR | --at TIME) [--tz ZONE] [--chat ID], remove ID, run ID
  web login|sessions|revoke ID       a one-time sign-in link to the web console; its signed-in sessions
  health [--ready] [--addr HOST:PORT]
                                     probe the admin endpoint of a running gateway
  version                            print the version, commit, Go version and FTS5 support
  help [COMMAND]                     print this, or the usage of one command

The config file is -c/--config FILE (before or after the command), else $NANOBOT_CONFIG,
else the first that exists of ./config.yaml, $XDG_CONFIG_HOME/nanobot/config.yaml
(~/.config/nanobot/config.yaml) and ~/.nanobot/config.yaml; "nanobot onboard" writes one.
"nanobot COMMAND --help" shows the flags of a command.
`

func (a *app) run(ctx context.Context, args []string) error {
	flagPath, args, err := configFlag("", args)
	if err != nil {
		return err
	}
	if len(args) == 0 {
		fmt.Fprint(a.stderr, usageText)
		return usageError{"no command given"}
	}
	cmd, rest := args[0], args[1:]
	if wantsHelp(rest) {
		return a.help(cmd)
	}
	cfgPath, missing := a.findConfig(flagPath)
	a.cfgNamed = flagPath != "" || a.getenv("NANOBOT_CONFIG") != ""
	a.cfgMissing = missing
	err = a.dispatch(ctx, cmd, cfgPath, rest)
	if errors.Is(err, errHelp) {
		return a.help(cmd)
	}
	return err
}

func (a *app) dispatch(ctx context.Context, cmd, cfgPath string, rest []string) error {
	switch cmd {
	case "agent":
		return a.agent(ctx, cfgPath, rest)
	case "gateway":
		return a.gateway(ctx, cfgPath, rest)
	case "onboard":
		return a.onboard(ctx, cfgPath, rest)
	case "status":
		return a.status(ctx, cfgPath, rest)
	case "config":
		return a.configCmd(ctx, cfgPath, rest)
	case "memory":
		return a.memory(ctx, cfgPath, rest)
	case "safety":
		return a.safety(ctx, cfgPath, rest)
	case "skills":
		return a.skills(ctx, cfgPath, rest)
	case "audit":
		return a.audit(ctx, cfgPath, rest)
	case "usage":
		return a.usage(ctx, cfgPath, rest)
	case "cron":
		return a.cron(ctx, cfgPath, rest)
	case "web":
		return a.webCmd(ctx, cfgPath, rest)
	case "health":
		return a.health(ctx, cfgPath, rest)
	case "backup":
		return a.backupCmd(ctx, cfgPath, rest)
	case "restore":
		return a.restoreCmd(ctx, cfgPath, rest)
	case "version", "--version", "-v":
		a.printVersion()
		return nil
	case "help", "-h", "--help", "-help":
		if len(rest) > 0 {
			return a.help(rest[0])
		}
		fmt.Fprint(a.stdout, usageText)
		return nil
	default:
		return unknownCommand(cmd)
	}
}
