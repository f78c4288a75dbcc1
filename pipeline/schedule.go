package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/robfig/cron/v3"
)

// parseSchedule parses the config's 5-field expression; tests swap in a seconds parser so a
// tick comes within a second instead of a minute.
var parseSchedule = cron.ParseStandard

// Schedule stays up and runs the current month's snapshot on the config's cron schedule (UTC),
// one run at a time. The config is re-read before each run, so watchlist edits take effect
// without a restart. When ctx is cancelled (SIGINT/SIGTERM) the run in flight lets its calls
// finish, commits, and Schedule returns nil.
func Schedule(ctx context.Context, cfg *Config, env Env) error {
	env = env.withDefaults()
	sched, err := parseSchedule(cfg.Schedule)
	if err != nil {
		return &ConfigError{Path: cfg.Path, Msg: fmt.Sprintf("schedule %q: %v", cfg.Schedule, err)}
	}
	logger := env.Logger
	c := cron.New(
		cron.WithLocation(time.UTC),
		cron.WithLogger(cronLogger{logger}),
		cron.WithChain(cron.Recover(cronLogger{logger}), cron.SkipIfStillRunning(cronLogger{logger})),
	)
	c.Schedule(sched, cron.FuncJob(func() { scheduledRun(ctx, cfg.Path, env); logNext(logger, sched, env.Now()) }))
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
func scheduledRun(ctx context.Context, cfgPath string, env Env) {
	if ctx.Err() != nil {
		return
	}
	cfg, err := LoadConfig(cfgPath, env.Getenv)
	if err != nil {
		env.Logger.Error("scheduled run skipped: config invalid", "err", err)
		return
	}
	snapshot := env.Now().UTC().Format("2006-01")
	env.Logger.Info("scheduled run starting", "snapshot", snapshot)
	sum, err := Run(ctx, cfg, RunOptions{Snapshot: snapshot}, env)
	if sum != nil {
		PrintSummary(env.Stdout, sum, err)
	}
	if err != nil {
		env.Logger.Error("scheduled run ended early", "snapshot", snapshot, "exit_code", ExitCode(err), "err", err)
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
