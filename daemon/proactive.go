package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/subagent"
	"github.com/nanobot-go/nanobot/agent/tools"
	"github.com/nanobot-go/nanobot/config"
	"github.com/nanobot-go/nanobot/heartbeat"
	"github.com/nanobot-go/nanobot/jobs"
	"github.com/nanobot-go/nanobot/schedule"
	"github.com/nanobot-go/nanobot/session"
	"github.com/nanobot-go/nanobot/turns"
)

// proactive is the work the gateway does on its own: scheduled jobs, the
// heartbeat, background tasks, and the message tool that lets a turn speak
// before its answer.
type proactive struct {
	rt        *Daemon
	clock     schedule.Clock
	bell      *turns.Bell   // rung when something was queued for a chat outside a turn
	jobs      *jobs.Service // nil when cron.enabled is false
	heartbeat *heartbeat.Heartbeat
	tasks     *subagent.Manager
	taskLoop  *agent.Loop   // the loop of background tasks
	woken     chan struct{} // the command line changed the jobs (see wake)
}

// newProactive builds the gateway's background work over rt's store and
// turn engine; rt's loop and tools come after it.
func newProactive(rt *Daemon, clock schedule.Clock) (*proactive, error) {
	cfg := rt.Config()
	engine := rt.turns
	p := &proactive{rt: rt, clock: clock, bell: rt.bell, woken: make(chan struct{}, 1)}
	if cfg.Cron.Enabled {
		jc, err := JobsConfig(cfg)
		if err != nil {
			return nil, err
		}
		p.jobs = jobs.New(rt.store, engine, clock, jc, rt.logger)
	}
	hc, err := HeartbeatConfig(cfg)
	if err != nil {
		return nil, err
	}
	warnHeartbeat(rt, cfg)
	p.heartbeat = heartbeat.New(rt.store, engine, func() agent.Provider { return meteredProvider{rt} }, clock, hc,
		rt.logger, heartbeat.Hooks{Decision: rt.metrics.HeartbeatCheck})
	taskTools, err := p.taskTools(cfg)
	if err != nil {
		return nil, err
	}
	p.taskLoop = agent.New(rt.currentProvider(), rt.store, taskTools, taskConfig(cfg),
		agent.WithLogger(rt.logger),
		agent.WithMemory(memorySource{rt}),
		agent.WithRedactor(rt.secrets.Redact),
		agent.WithHooks(agent.Hooks{ModelCall: rt.observeModelCall, ToolCall: rt.observeToolCall}),
	)
	p.tasks = subagent.New(rt.store, taskRunner{p}, taskReporter{rt.store, engine, clock.Now}, managerConfig(cfg), rt.logger, clock.Now)
	return p, nil
}

// taskToolNames are the tools of background tasks: files, the shell through
// the same safety filter, the web; never spawn, cron or message.
var taskToolNames = []string{"read_file", "write_file", "edit_file", "list_dir", "exec", "web_fetch"}

func (p *proactive) taskTools(cfg *config.Config) ([]agent.Tool, error) {
	all, err := p.rt.tools(cfg)
	if err != nil {
		return nil, err
	}
	var out []agent.Tool
	for _, t := range all {
		if slices.Contains(taskToolNames, t.Spec().Name) {
			out = append(out, t)
		}
	}
	return out, nil
}

// taskConfig is a background task's loop: its own step and time limits.
func taskConfig(cfg *config.Config) agent.Config {
	c := AgentConfig(cfg)
	c.MaxIterations = cfg.Agent.Subagents.MaxIterations
	c.TurnTimeout = cfg.Agent.Subagents.Timeout
	return c
}

func managerConfig(cfg *config.Config) subagent.Config {
	s := cfg.Agent.Subagents
	return subagent.Config{MaxPerChat: s.MaxPerChat, Timeout: s.Timeout, MaxIterations: s.MaxIterations}
}

// HeartbeatConfig is the heartbeat's part of cfg. Without a chat to report
// to, it is off.
func HeartbeatConfig(cfg *config.Config) (heartbeat.Config, error) {
	zone, err := schedule.Zone(cfg.Agent.Timezone, nil)
	if err != nil {
		return heartbeat.Config{}, &config.Error{File: cfg.Path, Key: "agent.timezone", Problem: err.Error()}
	}
	quiet, err := schedule.ParseQuietHours(cfg.Heartbeat.QuietHours)
	if err != nil {
		return heartbeat.Config{}, &config.Error{File: cfg.Path, Key: "heartbeat.quiet_hours", Problem: err.Error()}
	}
	file := cfg.Heartbeat.File
	if !filepath.IsAbs(file) {
		file = filepath.Join(cfg.Agent.Workspace, file)
	}
	hc := heartbeat.Config{Interval: cfg.Heartbeat.Interval, File: file, Channel: heartbeatChannel, Chat: cfg.HeartbeatChat(),
		Owner: cfg.Owner(), Quiet: quiet, Zone: zone, ShutdownTimeout: cfg.Agent.ShutdownTimeout}
	if hc.Chat == "" {
		hc.Interval = 0
	}
	return hc, nil
}

// heartbeatChannel is the channel the heartbeat reports to.
const heartbeatChannel = "telegram"

func warnHeartbeat(rt *Daemon, cfg *config.Config) {
	switch h := cfg.Heartbeat; {
	case h.Interval > 0 && cfg.HeartbeatChat() == "":
		rt.logger.Warn("heartbeat is off: no chat to report to; set heartbeat.chat or put a numeric id in channels.telegram.allow_from")
	case h.Interval > 0 && h.Interval < 5*time.Minute:
		rt.logger.Warn("heartbeat.interval is below 5m; each check with unscheduled items costs a model call", "interval", h.Interval)
	}
}

func JobsConfig(cfg *config.Config) (jobs.Config, error) {
	zone, err := schedule.Zone(cfg.Agent.Timezone, nil)
	if err != nil {
		return jobs.Config{}, &config.Error{File: cfg.Path, Key: "agent.timezone", Problem: err.Error()}
	}
	return jobs.Config{
		MaxPerChat: cfg.Cron.MaxJobsPerChat,
		Missed:     cfg.Cron.Missed,
		Zone:       zone,
	}, nil
}

// resyncInterval is how often the gateway checks for jobs added or removed
// from the command line: one small read, not a look at each job.
const resyncInterval = time.Minute

// runProactive starts the gateway's background work. It stops when ctx
// ends or stop is called; stop returns once it has.
func runProactive(ctx context.Context, p *proactive) (stop func(), err error) {
	ctx, cancel := context.WithCancel(ctx)
	if err := p.start(ctx); err != nil {
		cancel()
		p.stop()
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.watch(ctx)
		p.stop()
	}()
	return func() {
		cancel()
		<-done
	}, nil
}

// watch reloads the jobs when the command line changed them: checked every
// resyncInterval and at once on SIGHUP or a wake, until ctx ends.
func (p *proactive) watch(ctx context.Context) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	tick := time.NewTicker(resyncInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
		case <-p.woken:
		case <-tick.C:
		}
		p.resync(ctx)
	}
}

// wake makes watch reload the jobs now.
func (p *proactive) wake() {
	select {
	case p.woken <- struct{}{}:
	default:
	}
}

// start resumes and schedules the background work; it runs until ctx ends
// and stop is called.
func (p *proactive) start(ctx context.Context) error {
	if err := p.tasks.Recover(ctx); err != nil {
		return err
	}
	if p.jobs != nil {
		if err := p.jobs.Start(ctx); err != nil {
			return err
		}
	}
	return p.heartbeat.Start(ctx)
}

// stop lets running background turns finish for a while, then interrupts
// them; they resume on the next start.
func (p *proactive) stop() {
	var wg sync.WaitGroup
	if p.jobs != nil {
		wg.Go(p.jobs.Stop)
	}
	wg.Go(p.heartbeat.Stop)
	wg.Go(p.tasks.Close)
	wg.Wait()
}

// resync picks up jobs added or removed from the command line.
func (p *proactive) resync(ctx context.Context) {
	if p.jobs == nil {
		return
	}
	if err := p.jobs.Resync(ctx); err != nil {
		p.rt.logger.Warn("reload jobs", "err", err)
	}
}

func (p *proactive) reconfigure(cfg *config.Config) {
	if p.jobs != nil {
		if jc, err := JobsConfig(cfg); err == nil {
			p.jobs.SetConfig(jc)
		}
	}
	if hc, err := HeartbeatConfig(cfg); err == nil {
		p.heartbeat.SetConfig(hc)
	}
	p.tasks.SetConfig(managerConfig(cfg))
	if ts, err := p.taskTools(cfg); err == nil {
		p.taskLoop.Reconfigure(p.rt.currentProvider(), ts, taskConfig(cfg))
	}
}

// status is the heartbeat's line for /status.
func (p *proactive) status(ctx context.Context) string {
	cfg := p.rt.Config()
	hc, err := HeartbeatConfig(cfg)
	if err != nil || hc.Interval <= 0 {
		return "Heartbeat: off"
	}
	return fmt.Sprintf("Heartbeat: every %s; %s", config.FormatDuration(hc.Interval), heartbeat.Status(ctx, p.rt.store, hc.Zone))
}

// tools are the tools of the gateway's turns beyond the daemon's own.
func (p *proactive) tools() []agent.Tool {
	out := []agent.Tool{
		tools.Message{Outbox: chatOutbox{p}, MayReach: p.mayReach},
		tools.Spawn{Spawner: spawner{p.tasks}},
	}
	if p.jobs != nil {
		out = append(out, tools.Cron{Jobs: cronJobs{p.jobs}})
	}
	return out
}

// mayReach lets the owner write to another allowed user's private chat.
func (p *proactive) mayReach(t agent.Turn, chat string) error {
	cfg := p.rt.Config()
	if owner := cfg.Owner(); owner == "" || t.SenderID != owner {
		return errors.New("only the owner may send to another chat; without chat_id the message goes to this chat")
	}
	for _, u := range cfg.Channels.Telegram.AllowFrom {
		if u == chat {
			return nil
		}
	}
	return fmt.Errorf("chat %s is not the private chat of a user in channels.telegram.allow_from", chat)
}

// Jobs, Tasks and StopTasks serve /jobs, /subagents and /stop.
func (p *proactive) Jobs(ctx context.Context, chat string) string {
	if p.jobs == nil {
		return "Scheduled jobs are turned off (cron.enabled)."
	}
	text, err := p.jobs.List(ctx, jobs.Chat{Channel: "telegram", ChatID: chat})
	if err != nil {
		p.rt.logger.Error("list jobs", "chat_id", chat, "err", err)
		return "Sorry, I could not read the scheduled jobs."
	}
	return text
}

func (p *proactive) Tasks(_ context.Context, chat string) string {
	list := p.tasks.Running("telegram", chat)
	if len(list) == 0 {
		return "No background tasks are running."
	}
	var b strings.Builder
	if len(list) == 1 {
		b.WriteString("1 background task running:")
	} else {
		fmt.Fprintf(&b, "%d background tasks running:", len(list))
	}
	for _, t := range list {
		fmt.Fprintf(&b, "\n- %d %q, for %s", t.ID, t.Label, t.Running.Round(time.Second))
	}
	return b.String()
}

func (p *proactive) StopTasks(_ context.Context, chat string) string {
	stopped := p.tasks.Stop("telegram", chat)
	if len(stopped) == 0 {
		return ""
	}
	labels := make([]string, len(stopped))
	for i, t := range stopped {
		labels[i] = strconv.Quote(t.Label)
	}
	if len(stopped) == 1 {
		return "Cancelled the background task " + labels[0] + "."
	}
	return fmt.Sprintf("Cancelled %d background tasks: %s.", len(stopped), strings.Join(labels, ", "))
}

// chatSession is the session of the chat a session belongs to: a job's,
// a background task's and the heartbeat's turns read and write their
// chat's memory under memory.scope: chat.
func (r *Daemon) chatSession(name string) string {
	s, err := session.Parse(name)
	switch {
	case err != nil:
		return name
	case s.Kind == session.KindHeartbeat:
		if chat := r.Config().HeartbeatChat(); chat != "" {
			return session.Chat(heartbeatChannel, chat).String()
		}
		return name
	case s.Kind != session.KindJob && s.Kind != session.KindTask:
		return name
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	channel, chat, err := r.store.SessionChat(ctx, name)
	if err != nil || chat == "" {
		return name
	}
	return session.Chat(channel, chat).String()
}
