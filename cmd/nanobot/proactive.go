package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/tools"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/telegram"
	"github.com/nanobot-go/nanobot/config"
	"github.com/nanobot-go/nanobot/heartbeat"
	"github.com/nanobot-go/nanobot/jobs"
	"github.com/nanobot-go/nanobot/memory"
	"github.com/nanobot-go/nanobot/schedule"
)

// proactive is the work the gateway does on its own: scheduled jobs, the
// heartbeat, and the message tool that lets a turn speak before its answer.
type proactive struct {
	rt        *runtime
	clock     schedule.Clock
	delivered func()        // something was queued for a chat outside the channel
	jobs      *jobs.Service // nil when cron.enabled is false
	heartbeat *heartbeat.Heartbeat
}

// newProactive builds the gateway's background work over rt; delivered is
// told when something was queued for a chat outside the channel.
func newProactive(rt *runtime, clock schedule.Clock, delivered func()) (*proactive, error) {
	cfg := rt.config()
	p := &proactive{rt: rt, clock: clock, delivered: delivered}
	if cfg.Cron.Enabled {
		jc, err := jobsConfig(cfg)
		if err != nil {
			return nil, err
		}
		p.jobs = jobs.New(jobStore{rt.store}, turnRunner{rt}, clock, jc, rt.logger, delivered)
	}
	hc, err := heartbeatConfig(cfg)
	if err != nil {
		return nil, err
	}
	warnHeartbeat(rt, cfg)
	p.heartbeat = heartbeat.New(rt.store, turnRunner{rt}, func() agent.Provider { return meteredProvider{rt} }, clock, hc,
		rt.logger, heartbeat.Hooks{Decision: rt.metrics.HeartbeatCheck, Ran: func(queued string) {
			if queued != "" {
				delivered()
			}
		}})
	return p, nil
}

// heartbeatConfig is the heartbeat's part of cfg. Without a chat to report
// to, it is off.
func heartbeatConfig(cfg *config.Config) (heartbeat.Config, error) {
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
	hc := heartbeat.Config{Interval: cfg.Heartbeat.Interval, File: file, Channel: "telegram", Chat: cfg.HeartbeatChat(),
		Owner: cfg.Owner(), Quiet: quiet, Zone: zone, ShutdownTimeout: cfg.Agent.ShutdownTimeout}
	if hc.Chat == "" {
		hc.Interval = 0
	}
	return hc, nil
}

func warnHeartbeat(rt *runtime, cfg *config.Config) {
	switch h := cfg.Heartbeat; {
	case h.Interval > 0 && cfg.HeartbeatChat() == "":
		rt.logger.Warn("heartbeat is off: no chat to report to; set heartbeat.chat or put a numeric id in channels.telegram.allow_from")
	case h.Interval > 0 && h.Interval < 5*time.Minute:
		rt.logger.Warn("heartbeat.interval is below 5m; each check with unscheduled items costs a model call", "interval", h.Interval)
	}
}

func jobsConfig(cfg *config.Config) (jobs.Config, error) {
	zone, err := schedule.Zone(cfg.Agent.Timezone, nil)
	if err != nil {
		return jobs.Config{}, &config.Error{File: cfg.Path, Key: "agent.timezone", Problem: err.Error()}
	}
	return jobs.Config{
		MaxPerChat:      cfg.Cron.MaxJobsPerChat,
		Missed:          cfg.Cron.Missed,
		Zone:            zone,
		Workers:         cfg.Agent.MaxConcurrent,
		ShutdownTimeout: cfg.Agent.ShutdownTimeout,
	}, nil
}

// resyncInterval is how often the gateway checks for jobs added or removed
// from the command line: one small read, not a look at each job.
const resyncInterval = time.Minute

// runProactive builds the gateway's background work, connects it to the
// channel and starts it. It stops when ctx ends or stop is called; stop
// returns once it has.
func (a *app) runProactive(ctx context.Context, rt *runtime, ch *telegram.Channel) (stop func(), err error) {
	p, err := newProactive(rt, a.now(), ch.OutboxChanged)
	if err != nil {
		return nil, err
	}
	if err := rt.setProactive(p); err != nil {
		return nil, err
	}
	ch.SetBackground(p)
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
// resyncInterval and at once on SIGHUP, until ctx ends.
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
		case <-tick.C:
		}
		p.resync(ctx)
	}
}

// start resumes and schedules the background work; it runs until ctx ends
// and stop is called.
func (p *proactive) start(ctx context.Context) error {
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
		if jc, err := jobsConfig(cfg); err == nil {
			p.jobs.SetConfig(jc)
		}
	}
	if hc, err := heartbeatConfig(cfg); err == nil {
		p.heartbeat.SetConfig(hc)
	}
}

// status is the heartbeat's line for /status.
func (p *proactive) status(ctx context.Context) string {
	cfg := p.rt.config()
	hc, err := heartbeatConfig(cfg)
	if err != nil || hc.Interval <= 0 {
		return "Heartbeat: off"
	}
	return fmt.Sprintf("Heartbeat: every %s; %s", shortDuration(hc.Interval), heartbeat.Status(ctx, p.rt.store, hc.Zone))
}

// shortDuration writes 30m for 30m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// tools are the tools of the gateway's turns beyond the runtime's own.
func (p *proactive) tools() []agent.Tool {
	out := []agent.Tool{tools.Message{Outbox: chatOutbox{p}, MayReach: p.mayReach}}
	if p.jobs != nil {
		out = append(out, tools.Cron{Jobs: cronJobs{p.jobs}})
	}
	return out
}

// mayReach lets the owner write to another allowed user's private chat.
func (p *proactive) mayReach(t agent.Turn, chat string) error {
	cfg := p.rt.config()
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

// chatOutbox is the message tool's way out: the chat's outbox.
type chatOutbox struct{ p *proactive }

func (o chatOutbox) Send(ctx context.Context, from agent.Turn, chat, text string) error {
	session := from.Channel + ":" + chat
	if session == from.Session {
		session = "" // the conversation holds the tool call already
	}
	_, err := o.p.rt.store.Deliver(ctx, channels.OutboxItem{Channel: from.Channel, ChatID: chat, Text: text,
		State: channels.OutboxPending, CreatedAt: time.Now().UTC()}, session)
	if err != nil {
		return err
	}
	o.p.delivered()
	return nil
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

func (p *proactive) Tasks(context.Context, string) string { return "No background tasks are running." }

func (p *proactive) StopTasks(context.Context, string) string { return "" }

// setProactive gives the gateway's turns the tools of its background work.
func (r *runtime) setProactive(p *proactive) error {
	r.mu.Lock()
	r.pro = p
	r.mu.Unlock()
	return r.reconfigure(r.config())
}

func (r *runtime) proactive() *proactive {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.pro
}

// usageToday is what the chat a session belongs to used today: its own
// session and those of its jobs and background tasks, so proactive turns
// count toward agent.daily_token_budget.
func (r *runtime) usageToday(ctx context.Context, session string) (agent.Usage, error) {
	channel, chat, err := r.store.SessionChat(ctx, session)
	if err != nil {
		return agent.Usage{}, err
	}
	hbChat := r.config().HeartbeatChat()
	if session == heartbeat.Session {
		channel, chat = "telegram", hbChat
	}
	if chat == "" {
		return r.store.UsageOn(ctx, session, time.Now())
	}
	var also []string
	if channel == "telegram" && chat == hbChat {
		also = append(also, heartbeat.Session)
	}
	return r.store.ChatUsageOn(ctx, channel, chat, time.Now(), also...)
}

// scopeSession is the session whose memory scope a turn uses: a
// proactive turn uses its chat's.
func scopeSession(t agent.Turn) string {
	if t.Mirror != "" {
		return t.Mirror
	}
	return t.Session
}

// turnRunner runs the turns the daemon starts on its own, with the same
// budget, accounting and logs as a chat's.
type turnRunner struct{ rt *runtime }

func (t turnRunner) Answer(ctx context.Context, turn agent.Turn, msg agent.Message, resume bool) (agent.Result, error) {
	return t.rt.answer(ctx, turn, msg, resume)
}

// cronJobs is the cron tool's view of the jobs service: the calling turn's
// chat only.
type cronJobs struct{ s *jobs.Service }

func chatOf(t agent.Turn) jobs.Chat {
	return jobs.Chat{Channel: t.Channel, ChatID: t.ChatID, UserID: t.SenderID}
}

func (c cronJobs) Add(ctx context.Context, t agent.Turn, message string, when schedule.Input) (string, error) {
	j, err := c.s.Add(ctx, chatOf(t), message, when)
	if err != nil {
		return "", err
	}
	return "Job set up. " + jobs.Describe(j) + ". When it runs, you get its message in a turn of its own and your answer is sent to this chat.", nil
}

func (c cronJobs) List(ctx context.Context, t agent.Turn) (string, error) {
	return c.s.List(ctx, chatOf(t))
}

func (c cronJobs) Remove(ctx context.Context, t agent.Turn, id int64) (string, error) {
	if err := c.s.Remove(ctx, chatOf(t), id); err != nil {
		return "", err
	}
	return fmt.Sprintf("Job %d removed.", id), nil
}

// jobStore adapts the store to what the jobs service consumes.
type jobStore struct{ s *memory.Store }

var _ jobs.Store = jobStore{}

func jobErr(err error) error {
	switch {
	case errors.Is(err, memory.ErrLimit):
		return fmt.Errorf("%w: %w", jobs.ErrLimit, err)
	case errors.Is(err, memory.ErrNotFound):
		return fmt.Errorf("%w: %w", jobs.ErrNotFound, err)
	case errors.Is(err, memory.ErrStale):
		return fmt.Errorf("%w: %w", jobs.ErrStale, err)
	}
	return err
}

func (a jobStore) AddJob(ctx context.Context, j jobs.Job, max int) (int64, error) {
	id, err := a.s.AddJob(ctx, memory.Job(j), max)
	return id, jobErr(err)
}

func (a jobStore) Job(ctx context.Context, id int64) (jobs.Job, error) {
	j, err := a.s.Job(ctx, id)
	return jobs.Job(j), jobErr(err)
}

func (a jobStore) Jobs(ctx context.Context, channel, chat string) ([]jobs.Job, error) {
	list, err := a.s.Jobs(ctx, channel, chat)
	out := make([]jobs.Job, len(list))
	for i, j := range list {
		out[i] = jobs.Job(j)
	}
	return out, err
}

func (a jobStore) JobSlots(ctx context.Context) ([]jobs.Slot, error) {
	list, err := a.s.JobSlots(ctx)
	out := make([]jobs.Slot, len(list))
	for i, s := range list {
		out[i] = jobs.Slot(s)
	}
	return out, err
}

func (a jobStore) RemoveJob(ctx context.Context, channel, chat string, id int64) (bool, error) {
	return a.s.RemoveJob(ctx, channel, chat, id)
}

func (a jobStore) FireJob(ctx context.Context, f jobs.Firing) (int64, bool, error) {
	id, inserted, err := a.s.FireJob(ctx, memory.Firing(f))
	return id, inserted, jobErr(err)
}

func (a jobStore) SkipJob(ctx context.Context, id int64, slot, next time.Time) error {
	return jobErr(a.s.SkipJob(ctx, id, slot, next))
}

func (a jobStore) JobsVersion(ctx context.Context) (string, error) { return a.s.JobsVersion(ctx) }

func (a jobStore) PendingFirings(ctx context.Context) ([]channels.InboxItem, error) {
	return a.s.PendingFirings(ctx)
}

func (a jobStore) FinishTurn(ctx context.Context, t agent.Turn, text string) error {
	return a.s.FinishTurn(ctx, t, text)
}

// chatSession is the session of a Telegram chat id.
func chatSession(chat string) string { return "telegram:" + chat }

// parseJobID reads a job id from the command line.
func parseJobID(s string) (int64, error) {
	id, err := strconv.ParseInt(strings.TrimPrefix(s, "#"), 10, 64)
	if err != nil || id <= 0 {
		return 0, usageError{fmt.Sprintf("%q is not a job id (see nanobot cron list)", s)}
	}
	return id, nil
}
