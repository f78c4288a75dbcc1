package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"sitewatch/pipeline/config"
	"time"

	"github.com/robfig/cron/v3"
)

// ScheduleOptions tune Schedule.
type ScheduleOptions struct {
	// OnRun is told each run's outcome (the CLI prints the summary); it may be nil.
	OnRun func(*Summary, error)
	// Parse parses the config's cron expression (default cron.ParseStandard, 5 fields); tests
	// pass a seconds parser so a tick comes within a second instead of a minute.
	Parse func(string) (cron.Schedule, error)
}

// Schedule stays up and runs the current month's snapshot on the config's cron schedule (UTC),
// one run at a time. The config is re-read before each run, so watchlist edits take effect
// without a restart. When ctx is cancelled (SIGINT/SIGTERM) the run in flight lets its calls
// finish, commits, and Schedule returns nil.
func Schedule(ctx context.Context, cfg *config.Config, env Env, opts ScheduleOptions) error {
	env = env.WithDefaults()
	if opts.Parse == nil {
		opts.Parse = cron.ParseStandard
	}
	sched, err := opts.Parse(cfg.Schedule)
	if err != nil {
		return &config.Error{Path: cfg.Path, Msg: fmt.Sprintf("schedule %q: %v", cfg.Schedule, err)}
	}
	logger := env.Logger
	c := cron.New(
		cron.WithLocation(time.UTC),
		cron.WithLogger(cronLogger{logger}),
		cron.WithChain(cron.Recover(cronLogger{logger}), cron.SkipIfStillRunning(cronLogger{logger})),
	)
	c.Schedule(sched, cron.FuncJob(func() { scheduledRun(ctx, cfg.Path, env, opts.OnRun); logNext(logger, sched, env.Now()) }))
	c.Start()
	logger.Info("schedule started", "cron", cfg.Schedule, "timezone", "UTC", "config", cfg.Path)
	logNext(logger, sched, env.Now())
	<-ctx.Done()
	logger.Info("stopping: waiting for the run in flight to commit")
	<-c.Stop().Done()
	logger.Info("schedule stopped")
	return nil
}

func logNext(logger *slog.Logger, sched cron.Schedule, now time.Time) {
	logger.Info("next run", "at", sched.Next(now.UTC()).Format(time.RFC3339))
}

// scheduledRun runs one snapshot and logs its outcome; errors do not stop the schedule.
func scheduledRun(ctx context.Context, cfgPath string, env Env, onRun func(*Summary, error)) {
	if ctx.Err() != nil {
		return
	}
	cfg, err := config.Load(cfgPath, env.Getenv)
	if err != nil {
		env.Logger.Error("scheduled run skipped: config invalid", "err", err)
		return
	}
	snapshot := env.Now().UTC().Format("2006-01")
	env.Logger.Info("scheduled run starting", "snapshot", snapshot)
	sum, err := Run(ctx, cfg, RunOptions{Snapshot: snapshot}, env)
	if sum != nil && onRun != nil {
		onRun(sum, err)
	}
	if err != nil {
		env.Logger.Error("scheduled run ended early", "snapshot", snapshot, "status", statusOf(err), "err", err)
		return
	}
	env.Logger.Info("scheduled run complete", "snapshot", snapshot)
}

// cronLogger adapts slog to cron.Logger.
type cronLogger struct{ l *slog.Logger }

func (c cronLogger) Info(msg string, kv ...any) { c.l.Debug("cron: "+msg, kv...) }
func (c cronLogger) Error(err error, msg string, kv ...any) {
	c.l.Error("cron: "+msg, append(kv, "err", err)...)
}
