package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/nanobot-go/nanobot/internal/typo"
	"github.com/nanobot-go/nanobot/memory"
)

// errHelp is a command's answer to -h or --help: its usage goes to stdout
// and the process exits 0.
var errHelp = errors.New("help requested")

// configFlag takes -c FILE, --config FILE and --config=FILE out of args,
// wherever they stand before a "--", so the config can be named before or
// after the command. The last one wins.
func configFlag(path string, args []string) (string, []string, error) {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			out = append(out, args[i:]...)
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		if !strings.HasPrefix(arg, "-") || (name != "c" && name != "config") {
			out = append(out, arg)
			continue
		}
		if !hasValue {
			if i+1 >= len(args) {
				return "", nil, usageError{arg + " needs a file name"}
			}
			i++
			value = args[i]
		}
		if value == "" {
			return "", nil, usageError{arg + " needs a file name"}
		}
		path = value
	}
	return path, out, nil
}

// wantsHelp reports a -h or --help among a command's arguments (before "--").
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

// help prints the usage of cmd on stdout.
func (a *app) help(cmd string) error {
	text, ok := commandHelp[cmd]
	if !ok {
		return unknownCommand(cmd)
	}
	fmt.Fprintf(a.stdout, "Usage: nanobot [-c config.yaml] %s\n\nThe config file is -c/--config FILE (before or after the command), else $NANOBOT_CONFIG, else the first of ./config.yaml, ~/.config/nanobot/config.yaml and ~/.nanobot/config.yaml.\n", strings.TrimLeft(text, "\n"))
	return nil
}

// unknownCommand is the usage error of a command nanobot does not have:
// the nearest command name when one is close enough to be a typo, and
// where the list is.
func unknownCommand(cmd string) error {
	msg := fmt.Sprintf("unknown command %q", cmd)
	if near := nearestCommand(cmd); near != "" {
		msg += fmt.Sprintf("; did you mean %q?", near)
	}
	return usageError{msg + "\nRun 'nanobot --help' for the list of commands."}
}

// nearestCommand is the command name within a third of cmd's length in
// edits (at least one, at most two), the first by name among equally near
// ones; "" when none is that near.
func nearestCommand(cmd string) string {
	names := slices.Sorted(maps.Keys(commandHelp))
	best, bestDist := "", min(2, max(1, len(cmd)/3))+1 // the farthest allowed, plus one
	for _, name := range names {
		if d := typo.Distance(strings.ToLower(cmd), name); d < bestDist {
			best, bestDist = name, d
		}
	}
	return best
}

// commandHelp is each command's usage: its synopsis line, a blank line,
// what it does and its flags.
var commandHelp = map[string]string{
	"agent": `agent [-m TEXT] [--session NAME]

Chat with the assistant in the terminal (/help lists its commands, Ctrl-D quits), or answer one message and exit.

  -m, --message TEXT   answer this message and exit
  --session NAME       the conversation to use (default cli:default)
`,
	"gateway": `gateway [--reload-interval 1s] [--poll-timeout 25s] [--watchdog 2m] [--unready-after 3m]

Run the daemon: Telegram, the admin endpoint and live config reloads, until SIGINT or SIGTERM.

  --reload-interval D  how often config.yaml is checked for edits (default 1s)
  --poll-timeout D     Telegram's getUpdates long-poll timeout (default 25s)
  --watchdog D         restart the Telegram connection after this long without a sign of life (default 2m)
  --unready-after D    /readyz fails after this long without contact with Telegram (default 3m)
`,
	"onboard": `onboard [--dir DIR] [--force] [--non-interactive] [--telegram-token T] [--base-url URL] [--model M] [--api-key K] [--owner ID]

Create config.yaml, the workspace and the data directory. Secrets taken from the environment stay ${VAR} references.
Where: in --dir DIR; else the file -c or NANOBOT_CONFIG names; else ./config.yaml in a checkout of the source (or
where one exists); else $XDG_CONFIG_HOME/nanobot/config.yaml (~/.config/nanobot), with the workspace and the
database in $XDG_DATA_HOME/nanobot (~/.local/share/nanobot), where every command finds them.
Without --non-interactive it asks for what the flags and the environment leave open.

  --dir DIR             the directory to set up (default: see Where above)
  --force               overwrite an existing config.yaml
  --non-interactive     take values from flags and the environment; ask nothing
  --telegram-token T    Telegram bot token (default: $TELEGRAM_BOT_TOKEN, kept as a reference)
  --base-url URL        OpenAI-compatible API base URL (default: $OPENAI_BASE_URL when set, else https://api.openai.com/v1)
  --model M             model name (default: $NANOBOT_MODEL when set, else gpt-4o-mini)
  --api-key K           API key (default: $OPENAI_API_KEY, kept as a reference)
  --owner ID            your numeric Telegram user id (default: $NANOBOT_OWNER)
`,
	"status": `status

Show the effective setup and what is missing.
`,
	"config": `config check [FILE]

Validate a config file and print the effective configuration, secrets redacted.
`,
	"memory": `memory show|history|edit|export DIR|import DIR [--chat ID] [--search TEXT] [--limit N]

Inspect and edit long-term memory: MEMORY (show, edit), HISTORY (history), or move both to and from a
nanobot workspace folder (export, import).

  --chat ID       whose memory, under memory.scope: chat
  --search TEXT   history: only entries matching this text
  --limit N       history: at most this many entries (default 20)
`,
	"safety": `safety check [COMMAND ...]

Judge shell commands with the loaded policy (from standard input, one a line, when none are given).
Each verdict is a line: "allow", or the verdict, a tab and "category: reason". With more than one
command (or from standard input) each line ends with a tab and the command. The exit status is 1
when any command is denied.
`,
	"skills": `skills list

Show every skill (the workspace's skills/<name>/SKILL.md and the built-in ones): whether the model gets
it, and for one it does not, what is missing or what is wrong with its SKILL.md, with file and line.
`,
	"audit": `audit [--since 24h] [--denied] [--chat ID] [--limit N]

Print the tool-call audit trail, newest first. VERDICT is the policy's; OUTCOME is what happened:
ran, refused, or for a command the policy asks about, approved, denied or timed out, and by whom.

  --since D     how far back, e.g. 24h or 7d (default 24h)
  --denied      only refused calls
  --chat ID     only this chat (a chat id, or a session such as telegram:42)
  --limit N     at most this many rows (default 200)
`,
	"usage": `usage [--since 7d]

Print token usage per chat and day.

  --since D     how far back, e.g. 24h or 7d (default 7d)
`,
	"web": `web login | sessions | revoke ID

The owner's web console (web.listen). login prints a one-time sign-in link, valid for 10 minutes, for the running
gateway; sessions lists the signed-in browsers; revoke ID signs one out. The link is a secret: open it yourself.
`,
	"cron": `cron list [--chat ID] | add --message TEXT (--cron EXPR | --every DUR | --at TIME) [--tz ZONE] [--chat ID] | remove ID | run ID

Scheduled jobs. list shows id, chat, schedule, zone (the host's by its name) and next run (in that zone); add sets one up for a
Telegram chat; remove removes one; run fires one now (its answer is queued for the chat and the gateway
delivers it at once). A running gateway picks up additions and removals at once (the command writes the
wake file beside the database, which the gateway checks with its config), or within a minute.

  --message TEXT  add: what the job reminds of or does
  --cron EXPR     add: a 5-field cron expression, e.g. "0 9 * * 1-5"
  --every DUR     add: repeat at this interval, at least 1m (e.g. 2h)
  --at TIME       add: once, at an RFC 3339 or local time, or after a duration such as 20m
  --tz ZONE       add: IANA time zone (default agent.timezone, else the host's)
  --chat ID       add: the chat the job belongs to (default: the one entry of channels.telegram.allow_from,
                  when there is one); list: only this chat's jobs
`,
	"health": `health [--ready] [--addr HOST:PORT]

Probe the admin endpoint of a running gateway: liveness, or readiness with --ready.

  --ready           check readiness (/readyz) instead of liveness (/healthz)
  --addr HOST:PORT  the admin endpoint (default gateway.listen of the config)
`,
	"backup": `backup [--force] FILE

Write a consistent copy of the database to FILE while the gateway runs, check it (integrity_check) and
print its size and what it holds.

  --force   replace FILE if it exists
`,
	"restore": `restore FILE

Replace the database with the backup FILE. Refused while a gateway holds the database; the file is
checked first, the current database is kept as nanobot.db.before-restore-<time>, and pending
migrations are applied.
`,
	"version": `version

Print the version, the commit, the Go version and whether full-text search uses FTS5.
`,
	"help": `help [COMMAND]

Print the usage of nanobot or of one command.
`,
}

// printVersion prints the version, the commit, the Go version and the
// search index this build gives HISTORY.
func (a *app) printVersion() {
	rev, modified := commit, false
	goVersion := "unknown"
	if info, ok := debug.ReadBuildInfo(); ok {
		goVersion = info.GoVersion
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if rev == "" {
		rev = "unknown"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if modified {
		rev += "+dirty"
	}
	fts := "no (HISTORY search uses FTS4; build with -tags sqlite_fts5)"
	if memory.FTS5() {
		fts = "yes"
	}
	fmt.Fprintf(a.stdout, "nanobot %s\ncommit: %s\ngo: %s\nfts5: %s\n", version, rev, goVersion, fts)
}

func newFlags(name string, _ io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	// Errors come back as usageError and help as errHelp; the flag
	// package prints nothing itself.
	fs.SetOutput(io.Discard)
	return fs
}

func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return flagError(fs, err)
	}
	return nil
}

// parseInterspersed parses flags that may come before or after the
// positional arguments, and returns the positional ones.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, flagError(fs, err)
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

func flagError(fs *flag.FlagSet, err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return errHelp
	}
	cmd, _, _ := strings.Cut(fs.Name(), " ")
	return usageError{fmt.Sprintf("%s: %v (see nanobot %s --help)", fs.Name(), err, cmd)}
}
