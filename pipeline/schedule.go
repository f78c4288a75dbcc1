package pipeline

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"time"

	"github.com/robfig/cron/v3"

	"sitewatch/pipeline/config"
	"sitewatch/pipeline/model"
)

// ScheduleOptions tune Schedule.
type ScheduleOptions struct {
	// OnRun is told each run's outcome (the CLI prints the summary); it may be nil.
	OnRun func(*Summary, error)
	// Parse parses the config's cron expression (default cron.ParseStandard, 5 fields); tests
	// pass a seconds parser so a tick comes within a second instead of a minute.
	Parse func(string) (cron.Schedule, error)
	// Clock tells the time and waits (default: the real clock); a test can pass a controllable
	// one (the same interface as atlas.Clock).
	Clock Clock
	// RetryEvery overrides the config's retry_every (tests use seconds; the config allows ≥ 1m).
	RetryEvery time.Duration
	// Started is called once the schedule has decided its first wake-up (tests, metrics).
	Started func(next time.Time)
}

// cycle is the stretch between two cron ticks. It is satisfied when a run in it left the
// month the API serves complete: a run that ended `complete`, or `up_to_date` on a month
// completed since the tick. Until then the schedule retries every retry_every: after a
// failure, a stop for credits, an interrupted run, or "no new data yet" (the API still
// serves a month completed before the tick).
type cycle struct {
	start     time.Time // the tick that began it (zero: before the first tick)
	satisfied bool
	lastRun   time.Time // end of the last attempt in it
	retryNow  bool      // the API turned mid-run: the new month is served now
}

// Schedule stays up and keeps the current month complete: it runs on the config's cron
// schedule (UTC), retries an incomplete month every retry_every until the next tick, and on
// start catches up on a tick it missed while it was down (as systemd's Persistent=true).
// Runs never overlap; each run resumes what the month lacks, so nothing is paid twice. The
// config is re-read before each run. When ctx is cancelled (SIGINT/SIGTERM) the run in flight
// lets its calls finish and commits, and Schedule returns nil.
func Schedule(ctx context.Context, cfg *config.Config, env Env, opts ScheduleOptions) error {
	env, _ = env.WithDefaults().redacting(cfg)
	if opts.Parse == nil {
		opts.Parse = cron.ParseStandard
	}
	if opts.Clock == nil {
		opts.Clock = WallClock{}
	}
	sched, err := opts.Parse(cfg.Schedule)
	if err != nil {
		return &config.Error{Path: cfg.Path, Msg: fmt.Sprintf("schedule %q: %v", cfg.Schedule, err)}
	}
	s := &scheduler{cfg: cfg, env: env, opts: opts, sched: sched}
	s.retryEvery = s.retryCadence(cfg)
	env.Logger.Info("schedule started", "cron", cfg.Schedule, "timezone", "UTC", "retry_every", s.retryEvery.String(), "config", cfg.Path)
	s.cur = s.resume(ctx)
	return s.loop(ctx)
}

type scheduler struct {
	cfg        *config.Config
	env        Env
	opts       ScheduleOptions
	sched      cron.Schedule
	retryEvery time.Duration
	cur        cycle
}

func (s *scheduler) loop(ctx context.Context) error {
	first := true
	for {
		now := s.opts.Clock.Now().UTC()
		at, why := s.nextWake(now)
		s.env.Logger.Info("next run", "at", at.Format(time.RFC3339), "why", why)
		if first && s.opts.Started != nil {
			s.opts.Started(at)
		}
		first = false
		select {
		case <-ctx.Done():
			s.env.Logger.Info("schedule stopped")
			return nil
		case <-s.opts.Clock.After(at.Sub(now)):
		}
		if tick := s.lastTick(s.opts.Clock.Now().UTC()); tick.After(s.cur.start) {
			s.cur = cycle{start: tick} // a new tick: a new month is expected
		}
		s.attempt(ctx)
		if ctx.Err() != nil {
			s.env.Logger.Info("schedule stopped")
			return nil
		}
	}
}

func (s *scheduler) retryCadence(cfg *config.Config) time.Duration {
	if s.opts.RetryEvery > 0 {
		return s.opts.RetryEvery
	}
	return cfg.RetryEvery.Duration
}

// nextWake is the next tick, or the next retry of an unsatisfied cycle if that comes first.
func (s *scheduler) nextWake(now time.Time) (time.Time, string) {
	tick := s.sched.Next(now)
	if s.cur.satisfied {
		return tick, "cron tick"
	}
	if s.cur.lastRun.IsZero() || s.cur.retryNow {
		return now, "catch-up: the month is not complete since the last tick"
	}
	if retry := s.cur.lastRun.Add(s.retryEvery); retry.Before(tick) {
		if retry.Before(now) {
			retry = now
		}
		return retry, "retry: the month is not complete"
	}
	return tick, "cron tick"
}

// attempt runs one snapshot and updates the cycle from its outcome.
func (s *scheduler) attempt(ctx context.Context) {
	cfg, err := config.Load(s.cfg.Path, s.env.Getenv)
	if err != nil {
		s.env.Logger.Error("scheduled run skipped: config invalid; retrying later", "err", err)
		s.cur.lastRun, s.cur.retryNow = s.opts.Clock.Now().UTC(), false
		return
	}
	s.retryEvery = s.retryCadence(cfg)
	s.env.Logger.Info("scheduled run starting")
	// A complete month may grow the watchlist (config discover:); the next month's run fetches it.
	sum, err := Run(ctx, cfg, RunOptions{GrowWatchlist: true}, s.env)
	// The process now idles until the next tick, often for weeks. Go's scavenger returned
	// none of a run's ~100 MB of freed heap within 150 s, so hand it back now.
	debug.FreeOSMemory()
	if sum != nil && s.opts.OnRun != nil {
		s.opts.OnRun(sum, err)
	}
	s.cur.lastRun, s.cur.retryNow = s.opts.Clock.Now().UTC(), false
	if sum == nil {
		s.env.Logger.Error("scheduled run could not start; retrying later", "err", err)
		return
	}
	s.cur.satisfied = s.satisfies(sum)
	var turned *MonthTurnedError
	s.cur.retryNow = errors.As(err, &turned)
	switch {
	case s.cur.satisfied:
		s.env.Logger.Info("scheduled run complete: the month the API serves is complete", "snapshot", sum.Snapshot, "status", sum.Status)
	case sum.Status == StatusUpToDate:
		s.env.Logger.Info("scheduled run: no new data yet (the API still serves a month completed before this tick); retrying later",
			"snapshot", sum.Snapshot, "retry_every", s.retryEvery.String())
	case ctx.Err() != nil:
		// Asked to stop (SIGINT/SIGTERM): not a failure, and there is no "later" in this process.
		s.env.Logger.Info("scheduled run stopped by a signal; what it loaded is stored and the next start resumes it",
			"snapshot", sum.Snapshot, "status", sum.Status)
	default:
		s.env.Logger.Error("scheduled run ended early; retrying later", "snapshot", sum.Snapshot, "status", sum.Status, "err", err)
	}
}

// satisfies says whether a run leaves the cycle's month complete.
func (s *scheduler) satisfies(sum *Summary) bool {
	switch sum.Status {
	case StatusComplete:
		return true
	case StatusUpToDate:
		return s.cur.start.IsZero() || !sum.CompleteSince.Before(s.cur.start)
	}
	return false
}

// lastTick is the latest tick at or before now (zero if none in the past 400 days). It
// widens a look-back window until the window holds a tick, then walks forward through it, so
// it takes a few steps for a per-second and a per-month schedule alike.
func (s *scheduler) lastTick(now time.Time) time.Time {
	for _, back := range []time.Duration{time.Second, time.Minute, time.Hour, 24 * time.Hour, 32 * 24 * time.Hour, 400 * 24 * time.Hour} {
		next := s.sched.Next(now.Add(-back))
		if next.IsZero() || next.After(now) {
			continue
		}
		last := next
		for {
			n := s.sched.Next(last)
			if n.IsZero() || n.After(now) {
				return last
			}
			last = n
		}
	}
	return time.Time{}
}

// resume rebuilds the current cycle from the warehouse's runs at start: the tick missed
// while the process was down is caught up (no run since it), and a cycle left unsatisfied is
// retried on its cadence, not at once.
func (s *scheduler) resume(ctx context.Context) cycle {
	now := s.opts.Clock.Now().UTC()
	c := cycle{start: s.lastTick(now)}
	if c.start.IsZero() {
		c.satisfied = true // no tick yet: wait for the first one
		return c
	}
	runs, err := s.runsSince(ctx, c.start)
	if err != nil {
		s.env.Logger.Warn("could not read past runs; running now", "err", err)
		return c
	}
	for _, r := range runs { // newest first
		if r.FinishedAt == nil {
			continue
		}
		if c.lastRun.IsZero() {
			c.lastRun = *r.FinishedAt
		}
		if r.Status == StatusComplete {
			c.satisfied = true
		}
	}
	if c.lastRun.IsZero() {
		s.env.Logger.Info("catching up: no run since the last tick", "tick", c.start.Format(time.RFC3339))
	}
	return c
}

// runsSince reads the runs started since t, newest first, from the warehouse (read-only; none
// when it does not exist yet).
func (s *scheduler) runsSince(ctx context.Context, t time.Time) ([]model.RunRecord, error) {
	if _, err := os.Stat(s.cfg.Warehouse.DuckDB); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if s.env.Warehouses == nil {
		return nil, errNoWarehouses
	}
	wh, err := s.env.Warehouses.OpenReadOnly(ctx, s.cfg.Warehouse.DuckDB, s.env.Logger)
	if err != nil {
		return nil, err
	}
	defer func() { _ = wh.Close() }() // read-only
	runs, err := wh.Runs(ctx, 100)
	if err != nil {
		return nil, err
	}
	var out []model.RunRecord
	for _, r := range runs {
		if !r.StartedAt.Before(t) {
			out = append(out, r)
		}
	}
	return out, nil
}
