package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nanobot-go/nanobot/admin"
	"github.com/nanobot-go/nanobot/channels/cli"
	"github.com/nanobot-go/nanobot/daemon"
	"github.com/nanobot-go/nanobot/safety/sandbox"
)

// start loads the config and builds the daemon with its logger.
func (a *app) start(ctx context.Context, cfgPath string, quiet bool, metrics *admin.Metrics) (*daemon.Daemon, error) {
	cfg, err := a.loadConfig(cfgPath)
	if err != nil {
		return nil, err
	}
	level := new(slog.LevelVar)
	secrets := daemon.NewRedactor(cfg)
	logger := daemon.NewLogger(a.stderr, cfg.Log, level, secrets.Redact)
	if quiet && level.Level() < slog.LevelWarn {
		// A terminal chat keeps its output for the conversation.
		level.Set(slog.LevelWarn)
	}
	return daemon.New(ctx, cfg, daemon.Options{Logger: logger, Level: level, Secrets: secrets, Metrics: metrics,
		ABI: a.landlockABI(), Clock: a.now(), Gateway: metrics != nil, Version: version})
}

func (a *app) agent(ctx context.Context, cfgPath string, args []string) error {
	fs := newFlags("agent", a.stderr)
	var message, session string
	fs.StringVar(&message, "m", "", "answer this message and exit")
	fs.StringVar(&message, "message", "", "same as -m")
	fs.StringVar(&session, "session", "cli:default", "session name")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("agent: unexpected argument %q (quote the message and pass it with -m)", fs.Arg(0))}
	}
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "m" || f.Name == "message" })
	if given && strings.TrimSpace(message) == "" {
		return usageError{"-m: the message is empty"}
	}
	rt, err := a.start(ctx, cfgPath, true, nil)
	if err != nil {
		return err
	}
	defer rt.Close(5 * time.Second)
	rt.WaitForMCP(ctx)

	defer rt.Turns().Shutdown()
	chat := &cli.Chat{In: a.stdin, Out: a.stdout, Session: session, Turns: rt.Turns(), Sessions: rt,
		Model: rt.Config().Provider.Model, Started: time.Now(), Plain: !isTerminal(a.stdin), Dim: isTerminal(a.stdout)}
	if !given {
		return chat.Run(ctx)
	}
	text, err := chat.Ask(ctx, message)
	if text != "" {
		fmt.Fprintln(a.stdout, strings.TrimSpace(text))
	}
	if err != nil {
		if text != "" {
			return errors.New("the model could not be reached")
		}
		return err
	}
	return nil
}

// isTerminal reports whether v (a reader or writer) is a terminal, where
// the chat shows its banner, prompts and colours (/dev/null is a character
// device but no terminal).
func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// landlockABI is the Landlock ABI this kernel offers, or what a test says.
func (a *app) landlockABI() int {
	if a.abi != nil {
		return a.abi()
	}
	return sandbox.ABI()
}
