package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/nanobot-go/nanobot/channels/web"
	"github.com/nanobot-go/nanobot/daemon"
)

const webUsage = "usage: nanobot web login | sessions | revoke ID"

// webCmd is `nanobot web login|sessions|revoke`: sign-in links and
// sessions of the web console, from the host.
func (a *app) webCmd(ctx context.Context, cfgPath string, args []string) error {
	if len(args) == 0 {
		return usageError{webUsage}
	}
	switch args[0] {
	case "login":
		return a.webLogin(ctx, cfgPath, args[1:])
	case "sessions":
		return a.webSessions(ctx, cfgPath, args[1:])
	case "revoke":
		return a.webRevoke(ctx, cfgPath, args[1:])
	}
	return usageError{fmt.Sprintf("web: unknown action %q; %s", args[0], webUsage)}
}

func (a *app) webLogin(ctx context.Context, cfgPath string, args []string) error {
	if err := parseFlags(newFlags("web login", a.stderr), args); err != nil {
		return err
	}
	cfg, st, err := a.openStore(ctx, cfgPath)
	if err != nil {
		return err
	}
	defer st.Close()
	wc := cfg.WebConsole
	if wc.Listen == "" {
		return fmt.Errorf("the web console is off: set web.listen in %s and restart the gateway", cfg.Path)
	}
	base, err := web.BaseURL(wc.Listen, wc.PublicURL)
	if err != nil {
		return err
	}
	link, err := web.NewLogin(ctx, daemon.WebAuth{S: st}, base, a.now().Now())
	if err != nil {
		return fmt.Errorf("store the sign-in link: %w", err)
	}
	fmt.Fprintf(a.stdout, "%s\n", link)
	fmt.Fprintf(a.stderr, "Open it within %s, once, while the gateway runs. It is a secret: do not share it.\n", web.LoginTTL)
	return nil
}

func (a *app) webSessions(ctx context.Context, cfgPath string, args []string) error {
	if err := parseFlags(newFlags("web sessions", a.stderr), args); err != nil {
		return err
	}
	_, st, err := a.openReader(ctx, cfgPath)
	if err != nil {
		return err
	}
	defer st.Close()
	all, err := st.WebSessions(ctx, a.now().Now())
	if err != nil {
		return err
	}
	if len(all) == 0 {
		fmt.Fprintln(a.stdout, "No browser is signed in to the web console.")
		return nil
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSIGNED IN\tLAST SEEN\tEXPIRES\tBROWSER")
	for _, s := range all {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.ID, s.Created.Local().Format(time.DateTime),
			s.LastSeen.Local().Format(time.DateTime), s.Expires.Local().Format(time.DateOnly), s.Agent)
	}
	return tw.Flush()
}

func (a *app) webRevoke(ctx context.Context, cfgPath string, args []string) error {
	fs := newFlags("web revoke", a.stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageError{"usage: nanobot web revoke ID (the ids are in nanobot web sessions)"}
	}
	_, st, err := a.openStore(ctx, cfgPath)
	if err != nil {
		return err
	}
	defer st.Close()
	ok, err := st.RevokeWebSession(ctx, fs.Arg(0))
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("no signed-in session %q (nanobot web sessions lists them)", fs.Arg(0))
	}
	fmt.Fprintf(a.stdout, "Session %s signed out.\n", fs.Arg(0))
	return nil
}
