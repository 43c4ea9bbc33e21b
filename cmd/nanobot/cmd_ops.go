package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nanobot-go/nanobot/admin"
	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/tools"
	"github.com/nanobot-go/nanobot/channels/web"
	"github.com/nanobot-go/nanobot/config"
	"github.com/nanobot-go/nanobot/daemon"
	"github.com/nanobot-go/nanobot/heartbeat"
	"github.com/nanobot-go/nanobot/internal/human"
	"github.com/nanobot-go/nanobot/internal/loopback"
	"github.com/nanobot-go/nanobot/memory"
	"github.com/nanobot-go/nanobot/safety"
	"github.com/nanobot-go/nanobot/session"
)

// configCmd is `nanobot config check [FILE]`.
func (a *app) configCmd(_ context.Context, cfgPath string, args []string) error {
	if len(args) == 0 || args[0] != "check" {
		return usageError{"usage: nanobot config check [FILE]"}
	}
	load := a.loadConfig
	if len(args) > 1 {
		cfgPath, load = args[1], config.Load
	}
	cfg, err := load(cfgPath)
	if err != nil {
		return err
	}
	out, err := cfg.Redacted()
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "# %s is valid; effective configuration, secrets redacted:\n%s", cfg.Path, out)
	for _, w := range checkWarnings(cfg) {
		fmt.Fprintf(a.stdout, "# warning: %s\n", w)
	}
	return nil
}

// checkWarnings are what a valid config still lacks for the gateway and the
// agent, in the words they would refuse or complain with.
func checkWarnings(cfg *config.Config) []string {
	var out []string
	if !cfg.Channels.Telegram.Enabled {
		out = append(out, "channels.telegram.enabled: false: `nanobot gateway` has nothing to serve and will not start; `nanobot agent` works")
	}
	gatewayRefusal := cfg.CheckTelegram()
	if gatewayRefusal != nil {
		out = append(out, "`nanobot gateway` will not start: "+gatewayRefusal.Error()+" (`nanobot agent` works without it)")
	}
	for _, m := range cfg.Missing() {
		if gatewayRefusal != nil && strings.HasPrefix(m, "channels.telegram.token:") {
			continue
		}
		out = append(out, m)
	}
	if w := budgetWarning(cfg); w != "" {
		out = append(out, w)
	}
	return out
}

// minConversationTokens is the least room a request should leave for the
// conversation: a question, a tool call and its result.
const minConversationTokens = 1000

// budgetWarning says when agent.context_tokens leaves too little for the
// conversation once the system prompt, the tool schemas and the reply's
// reserve are in: every request then shrinks memory and history to
// nothing, and a turn with tool results may not fit at all.
func budgetWarning(cfg *config.Config) string {
	ac := daemon.AgentConfig(cfg)
	prompt, schemas := agent.FixedTokens(ac, offeredSpecs(cfg))
	room := ac.ContextTokens - ac.ReserveTokens - prompt - schemas
	if room >= minConversationTokens {
		return ""
	}
	// The reserve is a quarter of the budget up to provider.max_tokens.
	need := prompt + schemas + minConversationTokens
	enough := (need*4 + 2) / 3
	if enough/4 > cfg.Provider.MaxTokens {
		enough = need + cfg.Provider.MaxTokens
	}
	return fmt.Sprintf("agent.context_tokens: %d leaves about %d tokens for the conversation after the system prompt (about %d), the tool schemas (about %d, MCP tools not counted) and the reply's reserve (%d); set it to at least %d",
		ac.ContextTokens, max(room, 0), prompt, schemas, ac.ReserveTokens, enough)
}

// offeredSpecs are the schemas of the built-in tools the gateway offers
// with cfg (MCP servers' tools are known only once they are connected).
func offeredSpecs(cfg *config.Config) []agent.ToolSpec {
	offered := tools.NewFileTools(tools.Files{Workspace: cfg.Agent.Workspace})
	if cfg.Tools.Exec.Enabled {
		offered = append(offered, &tools.Exec{Timeout: cfg.Tools.Exec.Timeout, MaxOutput: cfg.Tools.Exec.MaxOutput})
	}
	offered = append(offered, tools.NewMemoryTools(tools.Memory{})...)
	offered = append(offered, tools.Message{}, tools.Spawn{})
	if cfg.Cron.Enabled {
		offered = append(offered, tools.Cron{})
	}
	if cfg.Tools.Web.Enabled {
		offered = append(offered, &tools.Web{})
	}
	if cfg.SearchReady() {
		offered = append(offered, daemon.WebSearch(cfg))
	}
	specs := make([]agent.ToolSpec, len(offered))
	for i, t := range offered {
		specs[i] = t.Spec()
	}
	return specs
}

// status shows the effective setup and what is missing.
func (a *app) status(ctx context.Context, cfgPath string, args []string) error {
	if err := parseFlags(newFlags("status", a.stderr), args); err != nil {
		return err
	}
	cfg, err := a.loadConfig(cfgPath)
	if err != nil {
		return err
	}
	set := func(s config.Secret) string {
		if s == "" {
			return "not set"
		}
		return "set"
	}
	w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "config\t%s\n", cfg.Path)
	fmt.Fprintf(w, "model\t%s at %s (api key %s)\n", cfg.Provider.Model, cfg.Provider.BaseURL, set(cfg.Provider.APIKey))
	fmt.Fprintf(w, "workspace\t%s\n", cfg.Agent.Workspace)
	fmt.Fprintf(w, "database\t%s\n", cfg.Storage.Path)
	if cfg.Channels.Telegram.Enabled {
		fmt.Fprintf(w, "telegram\tenabled, %s, token %s, allow_from %v\n", cfg.Channels.Telegram.Mode, set(cfg.Channels.Telegram.Token), cfg.Channels.Telegram.AllowFrom)
	} else {
		fmt.Fprintf(w, "telegram\tdisabled\n")
	}
	listen := cfg.Gateway.Listen
	if listen == "" {
		listen = "off"
	}
	fmt.Fprintf(w, "admin endpoint\t%s\n", listen)
	fmt.Fprintf(w, "api\t%s\n", apiStatus(ctx, cfg))
	fmt.Fprintf(w, "web\t%s\n", webStatus(ctx, cfg))
	fmt.Fprintf(w, "memory\tscope %s, window %d messages\n", cfg.Memory.Scope, cfg.Memory.Window)
	fmt.Fprintf(w, "shell\texec %v, approval %s\n", cfg.Tools.Exec.Enabled, cfg.Tools.Exec.Approval)
	fmt.Fprintf(w, "web search\t%s\n", daemon.SearchStatus(cfg))
	fmt.Fprintf(w, "skills\t%s\n", skillsSummary(cfg))
	for _, line := range daemon.MCPStatus(ctx, cfg) {
		fmt.Fprintf(w, "mcp\t%s\n", line)
	}
	var problems []string
	hb, hbErr := daemon.HeartbeatConfig(cfg)
	if hbErr == nil && hb.Interval > 0 {
		fmt.Fprintf(w, "heartbeat\tevery %s, %s, chat %s\n", config.FormatDuration(hb.Interval), hb.File, hb.Chat)
	} else {
		fmt.Fprintf(w, "heartbeat\toff\n")
	}
	for _, l := range daemon.SandboxLines(cfg, a.landlockABI()) {
		fmt.Fprintln(w, l)
	}
	if p := daemon.ShellProblem(cfg, tools.Shell()); p != "" {
		problems = append(problems, p)
	}
	problems = append(problems, databaseStatus(ctx, w, cfg, hb, hbErr == nil && hb.Interval > 0)...)
	backupStatus(w, cfg)
	w.Flush()
	missing := append(cfg.Missing(), problems...)
	if len(missing) == 0 {
		fmt.Fprintln(a.stdout, "\nNothing is missing.")
		return nil
	}
	fmt.Fprintln(a.stdout, "\nMissing:")
	for _, m := range missing {
		fmt.Fprintln(a.stdout, "  -", m)
	}
	return nil
}

// databaseStatus writes what the database says (the gateway, the
// heartbeat, the tokens of the last day) and returns the problems it shows.
func databaseStatus(ctx context.Context, w io.Writer, cfg *config.Config, hb heartbeat.Config, heartbeatOn bool) (problems []string) {
	if _, err := os.Stat(cfg.Storage.Path); err == nil {
		fmt.Fprintf(w, "gateway\t%s\n", gatewayState(cfg.Storage.Path))
		if st, err := memory.OpenReadOnly(ctx, cfg.Storage.Path); err == nil {
			if heartbeatOn {
				fmt.Fprintf(w, "heartbeat state\t%s\n", heartbeat.Status(ctx, st, hb.Zone))
			}
			rows, err := st.UsageSince(ctx, time.Now().AddDate(0, 0, -1))
			if err == nil {
				var sum agent.Usage
				for _, r := range rows {
					sum = sum.Add(r.Usage)
				}
				fmt.Fprintf(w, "tokens (24h)\t%d\n", sum.Total())
				if sum.CachedTokens != 0 {
					fmt.Fprintf(w, "cached (24h)\t%s\n", human.Cached(sum.CachedTokens, sum.PromptTokens))
				}
			}
			problems = tokenRejection(ctx, w, st)
			st.Close()
		} else {
			fmt.Fprintf(w, "database\tcannot be read: %v\n", err)
		}
	} else {
		fmt.Fprintf(w, "database\tnot created yet (it is created on first start)\n")
	}
	return problems
}

// health probes a running gateway's admin endpoint.
func (a *app) health(ctx context.Context, cfgPath string, args []string) error {
	fs := newFlags("health", a.stderr)
	ready := fs.Bool("ready", false, "check readiness (/readyz) instead of liveness (/healthz)")
	addr := fs.String("addr", "", "admin endpoint host:port (default: gateway.listen from the config)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *addr == "" {
		*addr = config.Default().Gateway.Listen
		if cfg, err := a.loadConfig(cfgPath); err == nil {
			*addr = cfg.Gateway.Listen
		}
	}
	if *addr == "" {
		return errors.New("the admin endpoint is off (gateway.listen is empty)")
	}
	if err := admin.Probe(ctx, *addr, *ready); err != nil {
		return err
	}
	fmt.Fprintln(a.stdout, "ok")
	return nil
}

// safety judges commands with the loaded policy.
func (a *app) safety(_ context.Context, cfgPath string, args []string) error {
	if len(args) == 0 || args[0] != "check" {
		return usageError{"usage: nanobot safety check [COMMAND ...]  (commands from standard input when none are given)"}
	}
	cfg, err := a.loadConfig(cfgPath)
	if err != nil {
		return err
	}
	policy, err := daemon.NewPolicy(cfg)
	if err != nil {
		return err
	}
	// One command's verdict stands alone; among several, each line ends
	// with a tab and its command, so the verdicts read as before and a
	// script finds the command in the last field.
	withCommand := len(args) != 2
	denied, judged := 0, 0
	judge := func(cmd string) {
		v := policy.Check(cmd)
		judged++
		line := string(v.Action)
		if v.Action != safety.Allow {
			line = fmt.Sprintf("%s\t%s: %s", v.Action, v.Category, v.Reason)
		}
		if v.Action == safety.Deny {
			denied++
		}
		if withCommand {
			// As given, but on the line: tabs and line breaks become spaces.
			line += "\t" + strings.NewReplacer("\t", " ", "\n", " ", "\r", " ").Replace(cmd)
		}
		fmt.Fprintln(a.stdout, line)
	}
	if len(args) > 1 {
		for _, c := range args[1:] {
			judge(c)
		}
	} else {
		lines := bufio.NewScanner(a.stdin)
		lines.Buffer(make([]byte, 64*1024), 1<<20)
		for lines.Scan() {
			if strings.TrimSpace(lines.Text()) == "" {
				continue
			}
			judge(lines.Text())
		}
		if err := lines.Err(); err != nil {
			return err
		}
	}
	if denied > 0 {
		// Exit 1, for scripts that gate on the verdicts.
		return fmt.Errorf("%d of %d commands denied", denied, judged)
	}
	return nil
}

// openStore opens the configured database for a command-line tool that
// writes to it.
func (a *app) openStore(ctx context.Context, cfgPath string) (*config.Config, *memory.Store, error) {
	cfg, err := a.loadConfig(cfgPath)
	if err != nil {
		return nil, nil, err
	}
	st, err := memory.Open(ctx, cfg.Storage.Path)
	if err != nil {
		return nil, nil, daemon.StorageProblem(cfg, err)
	}
	return cfg, st, nil
}

// openReader opens the configured database for a command that only reads
// it: read-only, so it works on a read-only data directory and never
// takes the write lock from a running gateway. A database that does not
// exist yet, or that an older version wrote, is opened read-write once
// (created or migrated) as before.
func (a *app) openReader(ctx context.Context, cfgPath string) (*config.Config, *memory.Store, error) {
	cfg, err := a.loadConfig(cfgPath)
	if err != nil {
		return nil, nil, err
	}
	st, err := memory.OpenReadOnly(ctx, cfg.Storage.Path)
	var schema *memory.SchemaError
	if errors.Is(err, os.ErrNotExist) || errors.As(err, &schema) && !schema.Newer() {
		st, err = memory.Open(ctx, cfg.Storage.Path)
	}
	if err != nil {
		return nil, nil, daemon.StorageProblem(cfg, err)
	}
	return cfg, st, nil
}

// sinceFlag is a --since duration: "24h", "30m" or "7d".
type sinceFlag time.Duration

func (f *sinceFlag) String() string { return time.Duration(*f).String() }

func (f *sinceFlag) Set(s string) error {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 {
			return fmt.Errorf("bad duration %q: use e.g. 24h or 7d", s)
		}
		*f = sinceFlag(time.Duration(n) * 24 * time.Hour)
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return fmt.Errorf("bad duration %q: use e.g. 24h or 7d", s)
	}
	*f = sinceFlag(d)
	return nil
}

// text is the flag as a person writes it: "24h", "30m", "7d".
func (f sinceFlag) text() string {
	if d := time.Duration(f); d > 24*time.Hour && d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return config.FormatDuration(time.Duration(f))
}

// start is the time the flag reaches back to.
func (f sinceFlag) start() time.Time { return time.Now().Add(-time.Duration(f)) }

// audit prints the tool-call audit trail.
func (a *app) audit(ctx context.Context, cfgPath string, args []string) error {
	fs := newFlags("audit", a.stderr)
	since := sinceFlag(24 * time.Hour)
	fs.Var(&since, "since", "how far back (e.g. 24h, 7d)")
	denied := fs.Bool("denied", false, "only refused calls")
	chat := fs.String("chat", "", "only this chat (a chat id or a session such as telegram:42)")
	limit := fs.Int("limit", 200, "at most this many rows")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	_, st, err := a.openReader(ctx, cfgPath)
	if err != nil {
		return err
	}
	defer st.Close()
	rows, err := st.Audit(ctx, memory.AuditFilter{Since: since.start(), DeniedOnly: *denied, Session: sessionOf(*chat), Limit: *limit})
	if err != nil {
		return err
	}
	if len(rows) == 0 {
		what := "tool calls"
		if *denied {
			what = "refused tool calls"
		}
		fmt.Fprintln(a.stdout, emptyList(what, strings.TrimSpace(chatScope(sessionOf(*chat))+" in the last "+since.text())))
		return nil
	}
	w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	// New columns go at the end: scripts read these by position.
	fmt.Fprintln(w, "TIME\tCHAT\tTOOL\tVERDICT\tREASON\tAPPROVER\tDURATION\tEXIT\tOUTPUT\tARGS\tOUTCOME")
	for _, r := range rows {
		reason := r.Reason
		if r.Category != "" {
			reason = r.Category + ": " + r.Reason
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\n", r.At.Local().Format("2006-01-02 15:04:05"), r.Session, r.Tool, r.Verdict,
			oneLine(reason, 60), r.Approver, r.Duration.Round(time.Millisecond), r.ExitCode, r.OutputBytes, oneLine(r.Args, 80), r.Outcome())
	}
	return w.Flush()
}

// usage prints token usage per chat and day.
func (a *app) usage(ctx context.Context, cfgPath string, args []string) error {
	fs := newFlags("usage", a.stderr)
	since := sinceFlag(7 * 24 * time.Hour)
	fs.Var(&since, "since", "how far back (e.g. 24h, 7d)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	_, st, err := a.openReader(ctx, cfgPath)
	if err != nil {
		return err
	}
	defer st.Close()
	rows, err := st.UsageSince(ctx, since.start())
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	// New columns go at the end: scripts read these by position.
	fmt.Fprintln(w, "DAY\tCHAT\tMODEL\tCALLS\tPROMPT\tCOMPLETION\tTOTAL\tCACHED\tCACHED%\t")
	var calls int
	var sum agent.Usage
	for _, r := range rows {
		model := r.Model
		if model == "" {
			model = "-"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\t\n", r.Day, r.Session, model, r.Calls,
			r.PromptTokens, r.CompletionTokens, r.Total(), r.CachedTokens, human.Share(r.CachedTokens, r.PromptTokens))
		calls, sum = calls+r.Calls, sum.Add(r.Usage)
	}
	fmt.Fprintf(w, "total\t\t\t%d\t%d\t%d\t%d\t%d\t%s\t\n", calls, sum.PromptTokens, sum.CompletionTokens, sum.Total(),
		sum.CachedTokens, human.Share(sum.CachedTokens, sum.PromptTokens))
	return w.Flush()
}

// emptyList is what a listing command prints when it has nothing to list,
// the same sentence for every one: "No scheduled jobs for chat 42."
func emptyList(what, scope string) string {
	if scope != "" {
		what += " " + scope
	}
	return "No " + what + "."
}

// chatScope words a --chat filter for emptyList; "" without one.
func chatScope(chat string) string {
	if chat == "" {
		return ""
	}
	return "for chat " + chat
}

// sessionOf turns a chat id into its session key; a session key stays.
func sessionOf(chat string) string {
	if chat == "" || strings.Contains(chat, ":") {
		return chat
	}
	return session.Chat("telegram", chat).String()
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > max {
		return string(r[:max-1]) + "…"
	}
	return s
}

// apiStatus is the status line of the OpenAI-compatible API: where it
// listens, who may use it, and whether it answers now.
func apiStatus(ctx context.Context, cfg *config.Config) string {
	a := cfg.API
	if a.Listen == "" {
		return "off"
	}
	var names []string
	for _, k := range a.Keys {
		names = append(names, k.Name)
	}
	who := fmt.Sprintf("%d keys (%s)", len(names), strings.Join(names, ", "))
	if len(names) == 0 {
		who = "no keys: any program on this machine may use it"
	}
	return fmt.Sprintf("%s, %s, %s", a.Listen, who, answering(ctx, a.Listen))
}

// answering says whether something takes connections at a listen address.
func answering(ctx context.Context, listen string) string {
	dctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(dctx, "tcp", loopback.Dialable(listen))
	if err != nil {
		return "not answering (is the gateway running?)"
	}
	conn.Close()
	return "answering"
}

// webStatus is the status line of the web console: its address, how many
// browsers are signed in, and whether it answers now.
func webStatus(ctx context.Context, cfg *config.Config) string {
	wc := cfg.WebConsole
	if wc.Listen == "" {
		return "off"
	}
	base, err := web.BaseURL(wc.Listen, wc.PublicURL)
	if err != nil {
		return "refused: " + err.Error()
	}
	signed := "no database yet"
	if _, err := os.Stat(cfg.Storage.Path); err == nil {
		if st, err := memory.OpenReadOnly(ctx, cfg.Storage.Path); err == nil {
			if all, err := st.WebSessions(ctx, time.Now()); err == nil {
				signed = fmt.Sprintf("%d signed-in sessions (nanobot web sessions)", len(all))
			}
			st.Close()
		}
	}
	return fmt.Sprintf("%s at %s, %s, %s", wc.Listen, base, signed, answering(ctx, wc.Listen))
}
