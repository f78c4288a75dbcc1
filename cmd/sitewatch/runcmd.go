package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"sitewatch/pipeline"
	"sitewatch/pipeline/config"
	"sitewatch/pipeline/metrics"
	"sitewatch/pipeline/warehouse"
	"sitewatch/pipeline/wire"
)

var runHelp = help{
	summary: "fetch and load the month the API serves now; resumes where an earlier run of it stopped",
	usage:   "[--config F] [--snapshot YYYY-MM] [--dry-run] [--refresh] [--metrics-file F] [--restore-if-missing]",
	examples: []string{
		"sitewatch run --dry-run            # the plan and its credit cost; calls nothing that costs credits",
		"sitewatch run                      # the month the API serves now",
		"sitewatch run --snapshot 2026-11   # only if the API serves 2026-11 (else exit 5, nothing stored)",
		"sitewatch run --metrics-file /var/lib/node_exporter/textfile/sitewatch.prom",
	},
}

func cmdRun(ctx context.Context, args []string, env Env) error {
	f := newFlags("run", env, true, true)
	dry := f.fs.Bool("dry-run", false, "print the plan and its credit cost; call nothing that costs credits")
	refresh := f.fs.Bool("refresh", false, "refetch domains already loaded in this snapshot")
	metricsFile := f.fs.String("metrics-file", "", "write the run's Prometheus metrics to this `file` (node_exporter textfile collector)")
	restoreFirst := f.fs.Bool("restore-if-missing", false, "when the warehouse file is absent, restore it from publish.url first (runners without a disk of their own)")
	cfg, err := f.parse(args, env, 0, 0)
	if err != nil {
		return err
	}
	if *restoreFirst && !*dry {
		if err := restoreIfMissing(ctx, cfg, env); err != nil {
			return err
		}
	}
	var answers wire.AnswerLog
	if !*dry {
		if env.Lease, err = bucketLease(ctx, cfg, env, "run"); err != nil {
			return err
		}
		if answers, err = bucketAnswerLog(ctx, cfg, env); err != nil { // answerlog.go
			return err
		}
		env.Publisher = wire.Publisher{After: publishFormats()} // publish_iceberg.go
	}
	sync, err := bucketSync(ctx, cfg, env) // sync.go; a dry run only reads the bucket
	bindBucket(&env, sync, answers)
	if err != nil {
		if !*dry {
			return err
		}
		env.Logger.Warn("the bucket cannot be read: the plan counts only what this warehouse holds", "err", err)
		fmt.Fprintf(env.Stdout, "note: %s could not be read (%v): the plan counts only what this warehouse holds\n", cfg.Publish.URL, err)
	}
	opts := pipeline.RunOptions{Snapshot: f.snapshot, Refresh: *refresh}
	if err := checkMetricsFile(*metricsFile); err != nil {
		return err
	}
	if *dry {
		return dryRun(ctx, cfg, opts, env)
	}
	var rec *metrics.Recorder
	if *metricsFile != "" {
		rec = metrics.New(metrics.Options{HealthGrace: cfg.HealthGrace.Duration})
	}
	watchRuns(&env, rec)
	sum, err := pipeline.Run(ctx, cfg, opts, env.Env)
	if *metricsFile != "" {
		if werr := rec.WriteTextfile(*metricsFile); werr != nil {
			env.Logger.Warn("could not write the metrics file", "file", *metricsFile, "err", werr)
		}
	}
	if sum == nil {
		return err
	}
	PrintSummary(env.Stdout, sum, err)
	if err != nil {
		return reportedError{err}
	}
	return nil
}

// checkMetricsFile refuses, before anything is called, a --metrics-file the run could not
// write at its end: one not ending in .prom (the textfile collector reads only those) or in a
// folder that is missing or not writable.
func checkMetricsFile(path string) error {
	if path == "" {
		return nil
	}
	if !strings.HasSuffix(path, ".prom") {
		return &UsageError{Msg: fmt.Sprintf("--metrics-file %s: the name must end in .prom (node_exporter's textfile collector reads only *.prom)", path)}
	}
	dir := filepath.Dir(path)
	probe, err := os.CreateTemp(dir, ".sitewatch-probe-*")
	if err != nil {
		return &UsageError{Msg: fmt.Sprintf("--metrics-file %s: its folder %s cannot take the file (%v): create it or choose another; nothing was called", path, dir, errors.Unwrap(err))}
	}
	_ = probe.Close()
	_ = os.Remove(probe.Name()) // best effort: an empty hidden file
	return nil
}

// dryRun prints the plan; with a key set it also asks the API for free (no credit) what the
// wallet and rate limit are, and whether they cover the run. With publish.url it reads what
// the bucket holds (never writing: no pull, no lease) and counts what a run pulls as held.
func dryRun(ctx context.Context, cfg *config.Config, opts pipeline.RunOptions, env Env) error {
	plan, err := pipeline.DryRun(ctx, cfg, opts, env.Env)
	if err != nil {
		return err
	}
	printPlan(env.Stdout, plan, cfg, config.NewWatchlist(cfg))
	if err := wire.CheckCredentials(cfg, env.Getenv); err != nil {
		fmt.Fprintln(env.Stdout, "balance: not checked (no usable API key in the environment)")
		return nil
	}
	r, err := wire.CheckPlan(ctx, cfg, env.Env, plan) // the bucket was read once, for the plan
	if r == nil || r.Needed == 0 && err != nil {
		fmt.Fprintf(env.Stdout, "balance: could not ask the API (no credit spent): %v\n", err)
		return nil
	}
	printReadiness(env.Stdout, r)
	return nil
}

var scheduleHelp = help{
	summary: "stay up and keep the current month complete: cron runs, retries every retry_every, catch-up after downtime",
	usage:   "[--config F] [--listen HOST:PORT] [--restore-if-missing]",
	examples: []string{
		"sitewatch schedule --config /srv/sitewatch/domains.yaml",
		"sitewatch schedule --listen 127.0.0.1:9464   # Prometheus /metrics and /healthz",
	},
}

func cmdSchedule(ctx context.Context, args []string, env Env) error {
	f := newFlags("schedule", env, true, false)
	listen := f.fs.String("listen", "", "serve Prometheus /metrics and /healthz on `HOST:PORT` (:0 picks a port)")
	restoreFirst := f.fs.Bool("restore-if-missing", false, "when the warehouse file is absent, restore it from publish.url before the first run")
	cfg, err := f.parse(args, env, 0, 0)
	if err != nil {
		return err
	}
	if err := wire.CheckCredentials(cfg, env.Getenv); err != nil {
		return err
	}
	if *restoreFirst {
		if err := restoreIfMissing(ctx, cfg, env); err != nil {
			return err
		}
	}
	if env.Lease, err = bucketLease(ctx, cfg, env, "schedule"); err != nil {
		return err
	}
	answers, err := bucketAnswerLog(ctx, cfg, env) // answerlog.go
	if err != nil {
		return err
	}
	sync, err := bucketSync(ctx, cfg, env) // sync.go: before each run
	if err != nil {
		return err
	}
	bindBucket(&env, sync, answers)
	env.Publisher = wire.Publisher{After: publishFormats()} // publish_iceberg.go
	var rec *metrics.Recorder
	if *listen != "" {
		rec = metrics.New(metrics.Options{HealthGrace: cfg.HealthGrace.Duration, Logger: env.Logger, StallBound: stallBound(cfg)})
		seedLastComplete(ctx, cfg, env, rec)
		if _, err := rec.Serve(ctx, *listen); err != nil {
			return &UsageError{Msg: fmt.Sprintf("--listen %s: %v", *listen, err)}
		}
	}
	watchRuns(&env, rec)
	onRun := func(sum *pipeline.Summary, err error) { PrintSummary(env.Stdout, sum, err) }
	return pipeline.Schedule(ctx, cfg, env.Env, pipeline.ScheduleOptions{OnRun: onRun})
}

// watchRuns makes env's runs watched (env.Observe): pipeline/wire's listeners (the recorder
// rec when not nil, the live status file, the webhook, the watchlist's growth), then the
// progress line on env's stderr, a report a second on a terminal.
func watchRuns(env *Env, rec *metrics.Recorder) {
	if env.IsTerminal {
		env.ProgressEvery = time.Second
	}
	streams := *env
	watch := wire.Watch{Metrics: rec, Getenv: env.Getenv}
	env.Observe = func(cfg *config.Config, logger *slog.Logger) pipeline.Observer {
		return pipeline.Observers{watch.Observer(cfg, logger), newProgressLine(streams, logger)}
	}
}

// stallBound is how long a run may show no progress before /healthz calls it stuck: the
// longest silence of a healthy run (its 429 waits and a few timed-out attempts), at least
// metrics.DefaultStallBound.
func stallBound(cfg *config.Config) time.Duration {
	return max(metrics.DefaultStallBound, cfg.API.MaxRateLimitWait.Duration+5*cfg.API.Timeout.Duration)
}

// seedLastComplete tells the recorder the newest complete month held, so /healthz is right
// before the daemon's first run.
func seedLastComplete(ctx context.Context, cfg *config.Config, env Env, rec *metrics.Recorder) {
	if _, err := os.Stat(cfg.Warehouse.DuckDB); errors.Is(err, os.ErrNotExist) {
		return
	}
	wh, err := warehouse.Open(ctx, warehouse.Options{DuckDBPath: cfg.Warehouse.DuckDB, Logger: env.Logger, ReadOnly: true})
	if err != nil {
		env.Logger.Warn("could not read the last complete month for /healthz", "err", err)
		return
	}
	defer func() { _ = wh.Close() }() // read-only
	var month string
	var finished time.Time
	err = wh.DB().QueryRowContext(ctx, `SELECT snapshot_month, max(finished_at) FROM runs
		WHERE status IN ('complete', 'up_to_date') GROUP BY snapshot_month ORDER BY snapshot_month DESC LIMIT 1`).Scan(&month, &finished)
	if err == nil {
		_ = rec.MonthComplete(month, finished)
	}
}

// printReadiness writes the balance, rate and duration lines of check and --dry-run.
func printReadiness(w io.Writer, r *wire.Readiness) {
	if r.Spend != nil {
		printSpend(w, r) // check.go: api.sources
		return
	}
	balance := "unknown"
	if r.Probe.Balance >= 0 {
		balance = fmt.Sprint(r.Probe.Balance)
	}
	rows := [][2]string{{"balance (credits)", balance}}
	if r.Probe.QuotaRemaining >= 0 {
		rows = append(rows, [2]string{"marketplace quota left", fmt.Sprintf("%d of %d", r.Probe.QuotaRemaining, r.Probe.QuotaLimit)})
	}
	covers := "yes"
	if !r.Covered {
		covers = "NO"
	}
	rows = append(rows,
		[2]string{"rate limit", fmt.Sprintf("%g requests/s", r.RateLimit)},
		[2]string{"next run needs", neededText(r)},
		[2]string{"usable (balance − min_credits)", fmt.Sprint(max(r.Available, 0))},
		[2]string{"covered", covers},
		[2]string{"expected duration", r.Duration.Round(time.Second).String()},
	)
	printRows(w, rows)
}
