package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nanobot-go/nanobot/config"
	"github.com/nanobot-go/nanobot/daemon"
	"github.com/nanobot-go/nanobot/jobs"
	"github.com/nanobot-go/nanobot/memory"
	"github.com/nanobot-go/nanobot/schedule"
)

const cronUsage = "usage: nanobot cron list [--chat ID] | add --message TEXT (--cron EXPR | --every DUR | --at TIME) [--tz ZONE] [--chat ID] | remove ID | run ID"

// cron is `nanobot cron list|add|remove|run`: scheduled jobs from the
// command line. A running gateway picks up additions and removals within a
// minute, or at once on SIGHUP; these commands wake it (see daemon.WakeGateway).
func (a *app) cron(ctx context.Context, cfgPath string, args []string) error {
	if len(args) == 0 {
		return usageError{cronUsage}
	}
	switch args[0] {
	case "list":
		return a.cronList(ctx, cfgPath, args[1:])
	case "add":
		return a.cronAdd(ctx, cfgPath, args[1:])
	case "remove", "rm":
		return a.cronRemove(ctx, cfgPath, args[1:])
	case "run":
		return a.cronRun(ctx, cfgPath, args[1:])
	}
	return usageError{fmt.Sprintf("cron: unknown action %q; %s", args[0], cronUsage)}
}

// cronService opens the store and a jobs service over it that runs no
// turns.
func (a *app) cronService(ctx context.Context, cfgPath string) (*jobs.Service, *config.Config, func(), error) {
	return a.cronServiceWith(ctx, cfgPath, a.openStore)
}

// cronServiceWith is cronService over a store opened by open (a reader's
// for listing).
func (a *app) cronServiceWith(ctx context.Context, cfgPath string, open func(context.Context, string) (*config.Config, *memory.Store, error)) (*jobs.Service, *config.Config, func(), error) {
	cfg, st, err := open(ctx, cfgPath)
	if err != nil {
		return nil, nil, nil, err
	}
	jc, err := daemon.JobsConfig(cfg)
	if err != nil {
		st.Close()
		return nil, nil, nil, err
	}
	return jobs.New(st, nil, a.now(), jc, nil), cfg, func() { st.Close() }, nil
}

func (a *app) cronList(ctx context.Context, cfgPath string, args []string) error {
	fs := newFlags("cron list", a.stderr)
	chat := fs.String("chat", "", "only this Telegram chat id")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	svc, _, done, err := a.cronServiceWith(ctx, cfgPath, a.openReader)
	if err != nil {
		return err
	}
	defer done()
	who := jobs.Chat{}
	if *chat != "" {
		who = jobs.Chat{Channel: "telegram", ChatID: *chat}
	}
	list, err := svc.Jobs(ctx, who)
	if err != nil {
		return err
	}
	if len(list) == 0 {
		fmt.Fprintln(a.stdout, emptyList("scheduled jobs", chatScope(*chat)))
		return nil
	}
	w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tCHAT\tSCHEDULE\tZONE\tNEXT RUN\tMESSAGE")
	for _, j := range list {
		when, next, zone := "unreadable", "none", j.Zone
		spec, err := schedule.Decode(schedule.Kind(j.Kind), j.Spec, j.Zone, j.CreatedAt)
		if err == nil {
			when, zone = spec.Describe(), spec.ShownZone()
			if !j.NextRun.IsZero() {
				next = j.NextRun.In(spec.Zone).Format(schedule.ShowFormat)
			}
		}
		if j.Paused {
			next = "paused"
		}
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\n", j.ID, j.ChatID, when, zone, next, oneLine(j.Message, 60))
	}
	return w.Flush()
}

func (a *app) cronAdd(ctx context.Context, cfgPath string, args []string) error {
	fs := newFlags("cron add", a.stderr)
	message := fs.String("message", "", "what the job reminds of or does")
	expr := fs.String("cron", "", `a 5-field cron expression, e.g. "0 9 * * 1-5"`)
	every := fs.Duration("every", 0, "repeat at this interval (at least 1m), e.g. 2h")
	at := fs.String("at", "", "run once: an RFC 3339 or local time, or a duration from now such as 20m")
	tz := fs.String("tz", "", "IANA time zone (default agent.timezone)")
	chat := fs.String("chat", "", "the Telegram chat id the job belongs to")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *every != 0 && *every%time.Second != 0 {
		return usageError{"cron add: --every must be whole seconds"}
	}
	svc, cfg, done, err := a.cronService(ctx, cfgPath)
	if err != nil {
		return err
	}
	defer done()
	if *chat == "" {
		if *chat, err = defaultChat(cfg.Channels.Telegram.AllowFrom); err != nil {
			return err
		}
	}
	j, err := svc.Add(ctx, jobs.Chat{Channel: "telegram", ChatID: *chat, UserID: cfg.Owner()}, *message,
		schedule.Input{CronExpr: *expr, EverySeconds: int(*every / time.Second), At: *at, TZ: *tz})
	if err != nil {
		return usageError{"cron add: " + flagNames(err.Error())}
	}
	fmt.Fprintf(a.stdout, "added %s\n(%s)\n", jobs.Describe(j), pickupNote(cfg.Storage.Path))
	return nil
}

// defaultChat is the chat a job goes to without --chat: the one entry of
// allow_from, when it is a chat id (the owner's private chat has the id of
// the owner).
func defaultChat(allow []string) (string, error) {
	const need = "cron add: --chat ID is required (the Telegram chat the job delivers to)"
	switch {
	case len(allow) == 0:
		return "", usageError{need + "; channels.telegram.allow_from is empty"}
	case len(allow) > 1:
		return "", usageError{fmt.Sprintf("%s; channels.telegram.allow_from has several: %s", need, strings.Join(allow, ", "))}
	}
	if id, err := strconv.ParseInt(allow[0], 10, 64); err != nil || id == 0 {
		return "", usageError{fmt.Sprintf("%s; the one entry of channels.telegram.allow_from, %s, is not a chat id", need, allow[0])}
	}
	return allow[0], nil
}

// flagNames words the schedule errors in terms of the command's flags.
func flagNames(s string) string {
	return strings.NewReplacer("cron_expr", "--cron", "every_seconds", "--every (in seconds)", "tz ", "--tz ",
		"at \"", "--at \"", "message is empty", "--message is empty").Replace(s)
}

func (a *app) cronRemove(ctx context.Context, cfgPath string, args []string) error {
	if len(args) != 1 {
		return usageError{"usage: nanobot cron remove ID"}
	}
	id, err := parseJobID(args[0])
	if err != nil {
		return err
	}
	svc, cfg, done, err := a.cronService(ctx, cfgPath)
	if err != nil {
		return err
	}
	defer done()
	if err := svc.Remove(ctx, jobs.Chat{}, id); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "removed job %d\n", id)
	daemon.WakeGateway(cfg.Storage.Path)
	return nil
}

// cronRun fires a job now: its turn runs here and its answer is queued for
// the chat, which the gateway delivers.
func (a *app) cronRun(ctx context.Context, cfgPath string, args []string) error {
	if len(args) != 1 {
		return usageError{"usage: nanobot cron run ID"}
	}
	id, err := parseJobID(args[0])
	if err != nil {
		return err
	}
	rt, err := a.start(ctx, cfgPath, true, nil)
	if err != nil {
		return err
	}
	defer rt.Close(5 * time.Second)
	defer rt.Turns().Shutdown()
	text, err := rt.RunJob(ctx, id)
	if err != nil {
		return err
	}
	if text == "" {
		return fmt.Errorf("job %d: the run was interrupted; the gateway finishes it on its next start", id)
	}
	fmt.Fprintf(a.stdout, "%s\n\n(queued for the chat; %s)\n", strings.TrimSpace(text), deliveryNote(rt.Config().Storage.Path))
	return nil
}

// deliveryNote wakes the gateway for a queued answer and says when the
// chat gets it.
func deliveryNote(db string) string {
	switch running, woken := daemon.WakeGateway(db); {
	case !running:
		return "no gateway is running: it is delivered when one starts"
	case woken:
		return "the running gateway delivers it now"
	}
	return "the running gateway delivers it within 30 s"
}

// pickupNote wakes the gateway for a changed job and says when it sees
// the change.
func pickupNote(db string) string {
	switch running, woken := daemon.WakeGateway(db); {
	case !running:
		return "no gateway is running: it is scheduled when one starts"
	case woken:
		return "the running gateway picks it up now"
	}
	return "a running gateway picks it up within a minute, or at once on SIGHUP"
}

// parseJobID reads a job id from the command line.
func parseJobID(s string) (int64, error) {
	id, err := strconv.ParseInt(strings.TrimPrefix(s, "#"), 10, 64)
	if err != nil || id <= 0 {
		return 0, usageError{fmt.Sprintf("%q is not a job id (see nanobot cron list)", s)}
	}
	return id, nil
}
