package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"sitewatch/pipeline"
	"sitewatch/pipeline/config"
	"sitewatch/pipeline/dictionary"
	"sitewatch/pipeline/report"
	"sitewatch/pipeline/warehouse"
)

const usage = `sitewatch — monthly snapshots of site intelligence into DuckDB and Parquet

usage:
  sitewatch run      [--config F] [--snapshot YYYY-MM] [--dry-run] [--refresh]
  sitewatch schedule [--config F]
  sitewatch rebuild  [--config F] [--snapshot YYYY-MM | --all]
  sitewatch validate [--config F]
  sitewatch status   [--config F] [--limit N]
  sitewatch query    [--config F] [--format table|csv|json] SQL
  sitewatch report   [--config F] [--snapshot YYYY-MM] [--out FILE]
  sitewatch schema   [--format text|markdown]
  sitewatch publish  [--config F] [--snapshot YYYY-MM | --all]

environment: ATLAS_API_KEY (required for run), ATLAS_BASE_URL, ATLAS_MARKETPLACE_KEY
exit codes of run: 0 complete, 1 failed (rerun resumes), 2 bad usage or config,
                   3 stopped for credits (rerun resumes), 4 API key rejected
`

// Main runs one sitewatch command and returns its exit code. cmd/sitewatch only wires the
// process (signals, stdio, environment) to it, so tests drive the real program in-process.
func Main(ctx context.Context, args []string, env pipeline.Env) int {
	env = env.WithDefaults()
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(env.Stdout, usage)
		if len(args) == 0 {
			return ExitUsage
		}
		return ExitOK
	}
	commands := map[string]func(context.Context, []string, pipeline.Env) error{
		"run": cmdRun, "schedule": cmdSchedule, "rebuild": cmdRebuild, "validate": cmdValidate,
		"status": cmdStatus, "query": cmdQuery, "report": cmdReport, "schema": cmdSchema,
		"publish": cmdPublish,
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(env.Stderr, "sitewatch: unknown command %q\n\n%s", args[0], usage)
		return ExitUsage
	}
	err := cmd(ctx, args[1:], env)
	if err != nil && !errors.Is(err, errReported) {
		fmt.Fprintf(env.Stderr, "sitewatch %s: %v\n", args[0], err)
	}
	return ExitCode(err)
}

// errReported marks an error already printed (with its summary) by the command.
var errReported = errors.New("reported")

type reportedError struct{ err error }

func (e reportedError) Error() string { return e.err.Error() }
func (e reportedError) Unwrap() []error {
	return []error{e.err, errReported}
}

// commonFlags are the flags every warehouse command takes.
type commonFlags struct {
	fs       *flag.FlagSet
	config   string
	snapshot string
	argsHint string       // the message when the positional arguments are wrong
	check    func() error // validates the command's own flags before anything is opened
}

func newFlags(name string, env pipeline.Env, withSnapshot bool) *commonFlags {
	f := &commonFlags{fs: flag.NewFlagSet("sitewatch "+name, flag.ContinueOnError), check: func() error { return nil }}
	f.fs.SetOutput(env.Stderr)
	f.fs.StringVar(&f.config, "config", "domains.yaml", "the config file")
	if withSnapshot {
		f.fs.StringVar(&f.snapshot, "snapshot", env.Now().UTC().Format("2006-01"), "the snapshot month, YYYY-MM (UTC)")
	}
	return f
}

// parse parses args (expecting nargs positional ones), checks the snapshot month and the
// command's own flags, and loads the config.
func (f *commonFlags) parse(args []string, env pipeline.Env, nargs int) (*config.Config, error) {
	if err := f.fs.Parse(args); err != nil {
		return nil, &UsageError{Msg: err.Error()}
	}
	switch {
	case f.fs.NArg() != nargs && f.argsHint != "":
		return nil, &UsageError{Msg: f.argsHint}
	case f.fs.NArg() > nargs:
		return nil, &UsageError{Msg: fmt.Sprintf("unexpected arguments: %s", strings.Join(f.fs.Args()[nargs:], " "))}
	}
	if err := f.check(); err != nil {
		return nil, err
	}
	if f.snapshot != "" {
		if _, err := time.Parse("2006-01", f.snapshot); err != nil {
			return nil, &UsageError{Msg: fmt.Sprintf("--snapshot %q is not a month; write YYYY-MM, e.g. %s", f.snapshot, env.Now().UTC().Format("2006-01"))}
		}
	}
	return config.Load(f.config, env.Getenv)
}

func cmdRun(ctx context.Context, args []string, env pipeline.Env) error {
	f := newFlags("run", env, true)
	dry := f.fs.Bool("dry-run", false, "print the plan and its credit cost; call nothing that costs credits")
	refresh := f.fs.Bool("refresh", false, "refetch domains already loaded in this snapshot")
	cfg, err := f.parse(args, env, 0)
	if err != nil {
		return err
	}
	opts := pipeline.RunOptions{Snapshot: f.snapshot, Refresh: *refresh}
	if *dry {
		plan, err := pipeline.DryRun(ctx, cfg, opts, env)
		if err != nil {
			return err
		}
		printPlan(env.Stdout, plan, cfg, config.NewWatchlist(cfg))
		return nil
	}
	sum, err := pipeline.Run(ctx, cfg, opts, env)
	if sum == nil {
		return err
	}
	PrintSummary(env.Stdout, sum, err)
	if err != nil {
		return reportedError{err}
	}
	return nil
}

func cmdSchedule(ctx context.Context, args []string, env pipeline.Env) error {
	f := newFlags("schedule", env, false)
	cfg, err := f.parse(args, env, 0)
	if err != nil {
		return err
	}
	if _, err := pipeline.CredentialsFrom(cfg, env.Getenv, false); err != nil {
		return err
	}
	onRun := func(sum *pipeline.Summary, err error) { PrintSummary(env.Stdout, sum, err) }
	return pipeline.Schedule(ctx, cfg, env, pipeline.ScheduleOptions{OnRun: onRun})
}

func cmdRebuild(ctx context.Context, args []string, env pipeline.Env) error {
	f := newFlags("rebuild", env, true)
	all := f.fs.Bool("all", false, "rebuild every snapshot")
	cfg, wh, err := f.parseAndOpen(ctx, args, env, 0, false)
	if err != nil {
		return err
	}
	defer wh.Close()
	snapshot := f.snapshot
	if *all {
		snapshot = ""
	}
	n, err := wh.Rebuild(ctx, snapshot)
	if err != nil {
		return fmt.Errorf("rebuild: %w", err)
	}
	what := "snapshot " + snapshot
	if snapshot == "" {
		what = "every snapshot"
	}
	fmt.Fprintf(env.Stdout, "rebuilt %s from stored responses: %d domains, 0 API calls; Parquet re-exported to %s\n", what, n, cfg.Warehouse.Parquet)
	return nil
}

func cmdValidate(_ context.Context, args []string, env pipeline.Env) error {
	f := newFlags("validate", env, false)
	cfg, err := f.parse(args, env, 0)
	if err != nil {
		return err
	}
	wl := config.NewWatchlist(cfg)
	fmt.Fprintf(env.Stdout, "%s: config valid (schedule %q, mode %s, rate_limit %g/s)\n", cfg.Path, cfg.Schedule, cfg.API.Mode, cfg.API.RateLimit)
	fmt.Fprintf(env.Stdout, "watchlist: %d entries -> %d domains (%d rewritten, %d duplicates collapsed, %d rejected)\n",
		len(cfg.Domains), len(wl.Domains), len(wl.Rewritten), len(wl.Duplicates), len(wl.Rejected))
	for _, r := range wl.Rewritten {
		fmt.Fprintf(env.Stdout, "  rewritten  line %d: %q -> %s\n", r.Line, r.Input, r.Domain)
	}
	for _, r := range wl.Duplicates {
		fmt.Fprintf(env.Stdout, "  duplicate  line %d: %q -> %s (already listed)\n", r.Line, r.Input, r.Domain)
	}
	for _, r := range wl.Rejected {
		fmt.Fprintf(env.Stdout, "  rejected   line %d: %q: %s\n", r.Line, r.Input, r.Reason)
	}
	if env.Getenv(config.EnvAPIKey) == "" && cfg.API.Mode == "direct" {
		fmt.Fprintf(env.Stdout, "note: %s is not set; `sitewatch run` will need it\n", config.EnvAPIKey)
	}
	if len(wl.Rejected) > 0 {
		return &config.Error{Path: cfg.Path, Msg: fmt.Sprintf("%d watchlist entries are not host names and will never be sent; fix or remove them", len(wl.Rejected))}
	}
	return nil
}

// parseAndOpen parses args, loads the config and opens its warehouse: the first steps of every
// command that reads or rebuilds the warehouse.
func (f *commonFlags) parseAndOpen(ctx context.Context, args []string, env pipeline.Env, nargs int, readOnly bool) (*config.Config, *warehouse.Warehouse, error) {
	cfg, err := f.parse(args, env, nargs)
	if err != nil {
		return nil, nil, err
	}
	wh, err := openWarehouse(ctx, cfg, env, readOnly)
	return cfg, wh, err
}

func openWarehouse(ctx context.Context, cfg *config.Config, env pipeline.Env, readOnly bool) (*warehouse.Warehouse, error) {
	if readOnly {
		if _, err := os.Stat(cfg.Warehouse.DuckDB); errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("no warehouse at %s yet: run `sitewatch run` first", cfg.Warehouse.DuckDB)
		}
	}
	wh, err := warehouse.Open(ctx, warehouse.Options{DuckDBPath: cfg.Warehouse.DuckDB, ParquetDir: cfg.Warehouse.Parquet, Logger: env.Logger, ReadOnly: readOnly})
	if err != nil {
		return nil, err // the warehouse names the file and the holder
	}
	return wh, nil
}

func cmdStatus(ctx context.Context, args []string, env pipeline.Env) error {
	f := newFlags("status", env, false)
	limit := f.fs.Int("limit", 10, "how many recent runs to show")
	_, wh, err := f.parseAndOpen(ctx, args, env, 0, true)
	if err != nil {
		return err
	}
	defer wh.Close()
	runs, err := wh.Runs(ctx, *limit)
	if err != nil {
		return fmt.Errorf("read runs: %w", err)
	}
	return printRuns(env.Stdout, runs)
}

func cmdQuery(ctx context.Context, args []string, env pipeline.Env) error {
	f := newFlags("query", env, false)
	format := f.fs.String("format", "table", "output format: table, csv or json")
	f.argsHint = "query needs one SQL argument, e.g. sitewatch query 'SELECT * FROM latest_sites'"
	f.check = func() error { _, err := newFormatter(*format, io.Discard); return err }
	_, wh, err := f.parseAndOpen(ctx, args, env, 1, true)
	if err != nil {
		return err
	}
	defer wh.Close()
	out, err := newFormatter(*format, env.Stdout)
	if err != nil {
		return err
	}
	return runQuery(ctx, wh.DB(), f.fs.Arg(0), out)
}

func cmdReport(ctx context.Context, args []string, env pipeline.Env) error {
	f := newFlags("report", env, true)
	out := f.fs.String("out", "", "the HTML file to write (default report-YYYY-MM.html)")
	_, wh, err := f.parseAndOpen(ctx, args, env, 0, true)
	if err != nil {
		return err
	}
	defer wh.Close()
	if *out == "" {
		*out = "report-" + f.snapshot + ".html"
	}
	err = writeFileAtomic(*out, func(w io.Writer) error { return report.Write(ctx, wh.DB(), f.snapshot, w) })
	if err != nil {
		return fmt.Errorf("report %s: %w", f.snapshot, err)
	}
	fmt.Fprintf(env.Stdout, "wrote %s\n", *out)
	return nil
}

func cmdSchema(ctx context.Context, args []string, env pipeline.Env) error {
	fs := flag.NewFlagSet("sitewatch schema", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	format := fs.String("format", "text", "text or markdown")
	if err := fs.Parse(args); err != nil {
		return &UsageError{Msg: err.Error()}
	}
	// The dictionary comes from the DDL itself, so it needs no warehouse file.
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return fmt.Errorf("open in-memory DuckDB: %w", err)
	}
	defer db.Close()
	if err := warehouse.Migrate(ctx, db); err != nil {
		return fmt.Errorf("apply the DDL: %w", err)
	}
	d, err := dictionary.Build(ctx, db)
	if err != nil {
		return err
	}
	switch *format {
	case "text":
		return d.WriteText(env.Stdout)
	case "markdown", "md":
		return d.WriteMarkdown(env.Stdout)
	}
	return &UsageError{Msg: fmt.Sprintf("--format %q: use text or markdown", *format)}
}

// writeFileAtomic writes a file through a temporary sibling and a rename, so a reader never
// sees it half-written.
func writeFileAtomic(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil { // CreateTemp makes it 0600
		return err
	}
	return os.Rename(tmp.Name(), path)
}
