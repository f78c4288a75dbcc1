package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"sitewatch/pipeline/buildinfo"
	"sitewatch/pipeline/config"
	"sitewatch/pipeline/dictionary"
	"sitewatch/pipeline/textout"
	"sitewatch/pipeline/warehouse"
	"sitewatch/pipeline/wire"
)

// command is one sitewatch subcommand: its function and its help text.
type command struct {
	name string
	run  func(context.Context, []string, Env) error
	help help
}

// help is what `sitewatch CMD --help` prints.
type help struct {
	summary  string   // one line: what the command does
	usage    string   // the flags and arguments after "sitewatch CMD"
	examples []string // whole command lines
}

// commands lists every subcommand in the order `sitewatch --help` shows them: a newcomer's
// journey (check the config, check the wallet for free, run, look at what was loaded, share it,
// then run it monthly), the maintenance commands last. A new command is one line here plus its
// function and help next to it.
var commands = []command{
	{"validate", cmdValidate, validateHelp},
	{"check", cmdCheck, checkHelp},
	{"run", cmdRun, runHelp},
	{"status", cmdStatus, statusHelp},
	{"query", cmdQuery, queryHelp},
	{"changes", cmdChanges, changesHelp},
	{"show", cmdShow, showHelp},
	{"report", cmdReport, reportHelp},
	{"discover", cmdDiscover, discoverHelp},
	{"publish", cmdPublish, publishHelp},
	{"restore", cmdRestore, restoreHelp},
	{"schedule", cmdSchedule, scheduleHelp},
	{"rebuild", cmdRebuild, rebuildHelp},
	{"schema", cmdSchema, schemaHelp},
}

func lookup(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// Main runs one sitewatch command and returns its exit code. cmd/sitewatch only wires the
// process (signals, stdio, environment) to it, so tests drive the real program in-process.
func Main(ctx context.Context, args []string, env Env) int {
	return MainLogging(ctx, args, env, nil)
}

// MainLogging is Main for a process whose env.Logger filters at level: it sets level from the
// command, --log-level/--verbose, SITEWATCH_LOG and whether stderr is a terminal (LogLevel).
func MainLogging(ctx context.Context, args []string, env Env, level *slog.LevelVar) int {
	env = env.withDefaults()
	if env.Warehouses == nil {
		env.Warehouses = wire.Warehouses{} // no bucket: the commands that have one rebind it (bindBucket)
	}
	if env.Credits == nil {
		env.Credits = wire.Credits{}
	}
	if env.Publisher == nil {
		env.Publisher = wire.Publisher{} // Hive only: run and schedule add the formats (publishFormats)
	}
	args, lf, lerr := takeLogFlags(args)
	if lerr != nil {
		say(env.Stderr, "sitewatch: %v\n", lerr)
		return ExitUsage
	}
	if len(args) == 0 {
		writeUsage(env.Stderr)
		return ExitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help":
		writeUsage(env.Stdout)
		return ExitOK
	case "help":
		return cmdHelp(ctx, args[1:], env)
	case "-version", "--version", "version":
		return writeVersion(ctx, env.Stdout, env.Stderr)
	}
	cmd, ok := lookup(args[0])
	if !ok {
		say(env.Stderr, "sitewatch: unknown command %q; run `sitewatch --help` for the list\n", args[0])
		return ExitUsage
	}
	if level != nil {
		level.Set(LogLevel(cmd.name, lf, env.Getenv, env.IsTerminal))
	}
	err := cmd.run(ctx, args[1:], env)
	var hr *helpRequested
	switch {
	case errors.As(err, &hr):
		writeCommandHelp(env.Stdout, cmd, hr.fs)
		return ExitOK
	case err != nil && !errors.Is(err, errReported):
		// Packages prefix their errors with what failed ("changes: …"); the command's own
		// name is already in front, so it is not said twice.
		say(env.Stderr, "sitewatch %s: %s\n", cmd.name, strings.TrimPrefix(err.Error(), cmd.name+": "))
		var ue *UsageError
		if errors.As(err, &ue) {
			say(env.Stderr, "usage: sitewatch %s %s (more: sitewatch %s --help)\n", cmd.name, cmd.help.usage, cmd.name)
		}
	}
	return ExitCode(err)
}

// cmdHelp serves `sitewatch help [CMD]`.
func cmdHelp(ctx context.Context, args []string, env Env) int {
	if len(args) == 0 {
		writeUsage(env.Stdout)
		return ExitOK
	}
	if _, ok := lookup(args[0]); !ok {
		say(env.Stderr, "sitewatch help: unknown command %q; run `sitewatch --help` for the list\n", args[0])
		return ExitUsage
	}
	return Main(ctx, []string{args[0], "--help"}, env)
}

func writeUsage(w io.Writer) {
	say(w, "%s", "sitewatch — monthly snapshots of site intelligence into DuckDB and Parquet\n\nusage:\n")
	for _, c := range commands {
		say(w, "  sitewatch %-9s %s\n", c.name, c.help.summary)
	}
	say(w, "%s", `  sitewatch --version  module and DuckDB versions

Run "sitewatch CMD --help" for a command's flags and examples. Flags may come before or after
arguments.

environment: ATLAS_API_KEY (required for run), ATLAS_BASE_URL, ATLAS_MARKETPLACE_KEY (with
             api.sources: the variables each source's key_env names), SITEWATCH_WEBHOOK_URL,
             SITEWATCH_CATALOG_PASSWORD (Iceberg SQL catalog), AWS_ACCESS_KEY_ID,
             AWS_SECRET_ACCESS_KEY, AWS_PROFILE, AWS_REGION (the bucket: the standard AWS chain),
             SITEWATCH_LOG (debug|info|warn|error; the same as --log-level)
logging:     results on stdout; at a terminal stderr shows warnings and errors only (schedule and
             files: info too); --log-level LEVEL or --verbose (debug) in any command for more
exit codes of run: 0 complete or up to date, 1 failed (rerun resumes), 2 bad usage or config,
                   3 stopped for credits (rerun resumes), 4 API key rejected,
                   5 --snapshot M but the API serves another month (nothing stored)
`)
}

func writeCommandHelp(w io.Writer, c command, fs *flag.FlagSet) {
	say(w, "sitewatch %s — %s\n\nusage: sitewatch %s %s\n", c.name, c.help.summary, c.name, c.help.usage)
	if hasFlags(fs) {
		say(w, "%s", "\nflags:\n")
		writeFlags(w, fs)
	}
	if len(c.help.examples) > 0 {
		say(w, "%s", "\nexamples:\n")
		for _, e := range c.help.examples {
			say(w, "  %s\n", e)
		}
	}
	say(w, "%s", "\n"+logHelp)
}

// logHelp closes every command's help: the results go to stdout once; the log lines on stderr
// are for daemons and files unless asked for.
const logHelp = `results go to stdout. Log lines go to stderr: at a terminal warnings and errors only (schedule, and
stderr written to a file or pipe: info too); --log-level debug|info|warn|error or --verbose
(debug) for more, in any command; SITEWATCH_LOG sets the same level from the environment.
`

// say writes a message or help text for the user; a write to a closed terminal has nowhere
// else to be reported.
func say(w io.Writer, format string, args ...any) { _, _ = fmt.Fprintf(w, format, args...) }

// closeInto closes c when a command ends and keeps its error unless the command already
// failed: closing the warehouse checkpoints it, and a failed checkpoint is a failed command.
func closeInto(err *error, c io.Closer) {
	if cerr := c.Close(); cerr != nil && *err == nil {
		*err = cerr
	}
}

// writeFlags lists fs's flags as the usage line writes them (--config FILE), which the flag
// package's PrintDefaults does not (-config file).
func writeFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		arg, usage := flag.UnquoteUsage(f)
		if arg != "" {
			arg = " " + strings.ToUpper(arg)
		}
		line := "  --" + f.Name + arg
		// A usage that says its default in words (--top: "default 15 …") is not followed by
		// the flag's zero value too.
		if f.DefValue != "" && f.DefValue != "false" && !strings.Contains(usage, "(default") {
			usage += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		say(w, "%s\n      %s\n", line, usage)
	})
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// helpRequested is returned by a command's flag parsing for -h/--help; Main prints the
// command's help on stdout and exits 0.
type helpRequested struct{ fs *flag.FlagSet }

func (h *helpRequested) Error() string { return "help requested" }

// errReported marks an error already printed (with its summary) by the command.
var errReported = errors.New("reported")

type reportedError struct{ err error }

func (e reportedError) Error() string { return e.err.Error() }
func (e reportedError) Unwrap() []error {
	return []error{e.err, errReported}
}

// commandFlags are a command's flag set with the flags most commands share.
type commandFlags struct {
	fs       *flag.FlagSet
	config   string
	snapshot string
	args     []string     // the positional arguments, wherever they stood among the flags
	check    func() error // validates the command's own flags before anything is opened
}

func newFlags(name string, env Env, withConfig, withSnapshot bool) *commandFlags {
	f := &commandFlags{fs: flag.NewFlagSet("sitewatch "+name, flag.ContinueOnError), check: func() error { return nil }}
	f.fs.SetOutput(io.Discard) // Main prints errors and help itself, each once
	f.fs.Usage = func() {}
	if withConfig {
		f.fs.StringVar(&f.config, "config", "domains.yaml", "the config `file`")
	}
	if withSnapshot {
		f.fs.StringVar(&f.snapshot, "snapshot", "", snapshotHelp(name))
	}
	return f
}

// snapshotHelp is what --snapshot means to command name (a snapshot is the month the API's data
// is for, YYYY-MM).
func snapshotHelp(name string) string {
	switch name {
	case "run":
		return "load this `month` (YYYY-MM) only if the API serves it: else exit 5, nothing stored (default: the month the API serves now)"
	case "rebuild":
		return "re-derive this `month` (YYYY-MM) from its stored answers (default: the newest month held; --all for every month)"
	case "report":
		return "report on this `month` (YYYY-MM) (default: the newest month held)"
	case "changes":
		return "compare this complete `month` (YYYY-MM) with the complete month before it (default: the latest complete month)"
	case "publish":
		return "upload this `month` (YYYY-MM) (default: the newest month held; --all for every month)"
	}
	return "the snapshot `month`, YYYY-MM: the month the API's data is for (default: the newest month held)"
}

// set reports whether the flag name was given on the command line.
func (f *commandFlags) set(name string) bool {
	found := false
	f.fs.Visit(func(fl *flag.Flag) { found = found || fl.Name == name })
	return found
}

// parseArgs parses flags wherever they stand among the positional arguments (the standard flag
// package stops at the first argument), expects between minArgs and maxArgs positional ones, and
// runs the command's own checks. A "--" ends the flags: everything after it is an argument.
func (f *commandFlags) parseArgs(args []string, minArgs, maxArgs int) error {
	f.args = nil
	for {
		if err := f.fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return &helpRequested{fs: f.fs}
			}
			return &UsageError{Msg: err.Error()}
		}
		rest := f.fs.Args()
		if len(rest) == 0 {
			break
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			f.args = append(f.args, rest...)
			break
		}
		f.args, args = append(f.args, rest[0]), rest[1:]
	}
	switch {
	case len(f.args) > maxArgs && maxArgs == 0:
		return &UsageError{Msg: fmt.Sprintf("takes no arguments, got %q", strings.Join(f.args, " "))}
	case len(f.args) > maxArgs:
		return &UsageError{Msg: fmt.Sprintf("takes at most %d argument(s), got %d: %q", maxArgs, len(f.args), strings.Join(f.args, " "))}
	case len(f.args) < minArgs:
		return &UsageError{Msg: fmt.Sprintf("needs %d argument(s), got %d", minArgs, len(f.args))}
	}
	if f.snapshot != "" {
		if _, err := time.Parse("2006-01", f.snapshot); err != nil {
			return &UsageError{Msg: fmt.Sprintf("--snapshot %q is not a month; write YYYY-MM, e.g. 2026-11", f.snapshot)}
		}
	}
	return f.check()
}

// parse parses args as parseArgs does, then loads the config.
func (f *commandFlags) parse(args []string, env Env, minArgs, maxArgs int) (*config.Config, error) {
	if err := f.parseArgs(args, minArgs, maxArgs); err != nil {
		return nil, err
	}
	return config.Load(f.config, env.Getenv)
}

// parseAndOpen parses args, loads the config and opens its warehouse: the first steps of every
// command that reads or rebuilds the warehouse.
func (f *commandFlags) parseAndOpen(ctx context.Context, args []string, env Env, minArgs, maxArgs int, readOnly bool) (*config.Config, *warehouse.Warehouse, error) {
	cfg, err := f.parse(args, env, minArgs, maxArgs)
	if err != nil {
		return nil, nil, err
	}
	wh, err := openWarehouse(ctx, cfg, env, readOnly)
	return cfg, wh, err
}

func openWarehouse(ctx context.Context, cfg *config.Config, env Env, readOnly bool) (*warehouse.Warehouse, error) {
	return openWarehouseWith(ctx, cfg, env, warehouse.Options{ReadOnly: readOnly})
}

// openWarehouseWith is openWarehouse with opts' limits (ReadOnly, MemoryLimit); the paths and
// logger come from cfg and env.
func openWarehouseWith(ctx context.Context, cfg *config.Config, env Env, opts warehouse.Options) (*warehouse.Warehouse, error) {
	if opts.ReadOnly {
		if _, err := os.Stat(cfg.Warehouse.DuckDB); errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("no warehouse at %s yet: run `sitewatch run` first", cfg.Warehouse.DuckDB)
		}
	}
	opts.DuckDBPath, opts.ParquetDir, opts.Logger = cfg.Warehouse.DuckDB, cfg.Warehouse.Parquet, env.Logger
	opts.AttentionLists, opts.DiscoverFloors = wire.AttentionLists(cfg), wire.DiscoverFloors(cfg)
	wh, err := warehouse.Open(ctx, opts)
	if err != nil {
		return nil, err // the warehouse names the file and the holder
	}
	return wh, nil
}

var rebuildHelp = help{
	summary:  "re-derive every table and Parquet file from the stored raw responses; spends no credits",
	usage:    "[--config F] [--snapshot YYYY-MM | --all]",
	examples: []string{"sitewatch rebuild --snapshot 2026-11", "sitewatch rebuild --all"},
}

func cmdRebuild(ctx context.Context, args []string, env Env) (err error) {
	f := newFlags("rebuild", env, true, true)
	all := f.fs.Bool("all", false, "rebuild every snapshot")
	f.check = func() error {
		if *all && f.set("snapshot") {
			return &UsageError{Msg: "--all and --snapshot contradict each other: pass one"}
		}
		return nil
	}
	cfg, wh, err := f.parseAndOpen(ctx, args, env, 0, 0, false)
	if err != nil {
		return err
	}
	defer closeInto(&err, wh)
	snapshot := f.snapshot
	if !*all && snapshot == "" {
		if snapshot, err = latestMonth(ctx, wh); err != nil {
			return err
		}
	}
	if *all {
		snapshot = ""
	}
	n, err := wh.Rebuild(ctx, snapshot)
	if err != nil {
		return err // the warehouse names the snapshot and the step
	}
	what := fmt.Sprintf("snapshot %s from stored responses: %s", snapshot, textout.Plural(n, "domain", "domains"))
	if snapshot == "" {
		months, domains, err := monthsAndDomains(ctx, wh)
		if err != nil {
			return err
		}
		what = fmt.Sprintf("every snapshot from stored responses: %s, %s (%s)", textout.Plural(months, "month", "months"),
			textout.Plural(domains, "domain", "domains"), textout.Plural(n, "domain-month", "domain-months"))
	}
	o := textout.New(env.Stdout)
	o.Printf("rebuilt %s, 0 API calls; Parquet re-exported to %s\n", what, cfg.Warehouse.Parquet)
	return o.Err()
}

// monthsAndDomains counts the months and the distinct domains the warehouse holds, so a
// rebuild of every month does not call 28 domains × 3 months "84 domains".
func monthsAndDomains(ctx context.Context, wh *warehouse.Warehouse) (months, domains int, err error) {
	err = wh.DB().QueryRowContext(ctx, `SELECT count(DISTINCT snapshot_month), count(DISTINCT domain) FROM sites`).Scan(&months, &domains)
	if err != nil {
		return 0, 0, fmt.Errorf("count the months and domains rebuilt: %w", err)
	}
	return months, domains, nil
}

var validateHelp = help{
	summary:  "check the config and list every rewritten, collapsed or rejected watchlist entry",
	usage:    "[--config F]",
	examples: []string{"sitewatch validate", "sitewatch validate --config staging.yaml"},
}

func cmdValidate(_ context.Context, args []string, env Env) error {
	f := newFlags("validate", env, true, false)
	cfg, err := f.parse(args, env, 0, 0)
	if err != nil {
		return err
	}
	wl := config.NewWatchlist(cfg)
	o := textout.New(env.Stdout)
	o.Printf("%s: schedule %q, %s\n", cfg.Path, cfg.Schedule, apiText(cfg))
	o.Printf("watchlist: %d entries -> %d domains (%d rewritten, %d duplicates collapsed, %d rejected)\n",
		len(cfg.Domains), len(wl.Domains), len(wl.Rewritten), len(wl.Duplicates), len(wl.Rejected))
	for _, r := range wl.Rewritten {
		o.Printf("  rewritten  line %d: %q -> %s\n", r.Line, r.Input, r.Domain)
	}
	for _, r := range wl.Duplicates {
		o.Printf("  duplicate  line %d: %q -> %s (already listed)\n", r.Line, r.Input, r.Domain)
	}
	for _, r := range wl.Rejected {
		o.Printf("  rejected   line %d: %q: %s\n", r.Line, r.Input, r.Reason)
	}
	if _, err := config.CredentialsFrom(cfg, env.Getenv); err != nil {
		if !errors.Is(err, config.ErrKeyNotSet) {
			return err
		}
		o.Printf("note: %v; `sitewatch run` will need it\n", err)
	}
	if o.Err() != nil {
		return o.Err()
	}
	if len(wl.Rejected) > 0 {
		return &config.Error{Path: cfg.Path, Msg: fmt.Sprintf("config not valid: %d watchlist entries are not host names and would never be sent; fix or remove them", len(wl.Rejected))}
	}
	o.Printf("%s: config valid\n", cfg.Path)
	return o.Err()
}

// apiText is the API settings validate prints: the mode, rate and reserve, or with api.sources
// each source's own.
func apiText(cfg *config.Config) string {
	if !cfg.MultiSource() {
		return fmt.Sprintf("mode %s, rate_limit %g/s, min_credits %d", cfg.API.Mode, cfg.API.RateLimit, cfg.API.MinCredits)
	}
	parts := make([]string, 0, len(cfg.Sources()))
	for _, sc := range cfg.Sources() {
		parts = append(parts, fmt.Sprintf("%s (%s, rate_limit %g/s, min_credits %d)", sc.Name, sc.Mode, sc.RateLimit, sc.MinCredits))
	}
	return fmt.Sprintf("%s: %s", textout.Plural(len(parts), "credit source", "credit sources"), strings.Join(parts, ", "))
}

var statusHelp = help{
	summary:  "recent runs: what each loaded, requests, 429s, credits spent and left",
	usage:    "[--config F] [--limit N] [--format text|json]",
	examples: []string{"sitewatch status", "sitewatch status --limit 3", "sitewatch status --format json"},
}

// atLeast refuses an integer flag below min.
func atLeast(name string, v, minimum int) error {
	if v < minimum {
		return &UsageError{Msg: fmt.Sprintf("--%s %d is out of range: use %d or more", name, v, minimum)}
	}
	return nil
}

var reportHelp = help{
	summary:  "write a self-contained HTML report with charts for one snapshot",
	usage:    "[--config F] [--snapshot YYYY-MM] [--out FILE] [--force]",
	examples: []string{"sitewatch report --snapshot 2026-11 --out report.html"},
}

func cmdReport(ctx context.Context, args []string, env Env) (err error) {
	f := newFlags("report", env, true, true)
	out := f.fs.String("out", "", "the HTML `file` to write (default report-YYYY-MM.html)")
	force := f.fs.Bool("force", false, "replace an existing --out file even if it is not an HTML page")
	cfg, wh, err := f.parseAndOpen(ctx, args, env, 0, 0, true)
	if err != nil {
		return err
	}
	defer closeInto(&err, wh)
	if f.snapshot == "" {
		if f.snapshot, err = latestMonth(ctx, wh); err != nil {
			return err
		}
	}
	if *out == "" {
		*out = "report-" + f.snapshot + ".html"
	}
	csvPath, err := checkReportTargets(*out, cfg, *force) // reportout.go
	if err != nil {
		return err
	}
	if err := writeReport(ctx, wh, f.snapshot, cfg, *out, csvPath); err != nil {
		return err // report names the snapshot; file errors name the file
	}
	o := textout.New(env.Stdout)
	o.Printf("wrote %s and %s\n", *out, csvPath)
	return o.Err()
}

var schemaHelp = help{
	summary:  "print the data dictionary: every table, view and column with its meaning, unit and scale",
	usage:    "[--format text|markdown]",
	examples: []string{"sitewatch schema", "sitewatch schema --format markdown > docs/data-dictionary.md"},
}

func cmdSchema(ctx context.Context, args []string, env Env) (err error) {
	f := newFlags("schema", env, false, false)
	format := f.fs.String("format", "text", "text or markdown")
	f.check = func() error {
		if *format != "text" && *format != "markdown" && *format != "md" {
			return &UsageError{Msg: fmt.Sprintf("--format %q: use text or markdown", *format)}
		}
		return nil
	}
	if err := f.parseArgs(args, 0, 0); err != nil {
		return err
	}
	// The dictionary comes from the DDL itself, so it needs no warehouse file.
	d, err := dictionary.Default(ctx)
	if err != nil {
		return err
	}
	if *format == "text" {
		return d.WriteText(env.Stdout)
	}
	return d.WriteMarkdown(env.Stdout)
}

// latestMonth is the newest month the warehouse holds, the default of --snapshot for the
// commands that read the warehouse.
func latestMonth(ctx context.Context, wh *warehouse.Warehouse) (string, error) {
	month, err := wh.LatestMonth(ctx)
	if err != nil {
		return "", err
	}
	if month == "" {
		return "", errors.New("the warehouse holds no snapshot yet: run `sitewatch run` first")
	}
	return month, nil
}

// writeVersion prints the sitewatch version (buildinfo.Version: the string manifests and
// webhooks carry too) and the version of the DuckDB library linked in, which decides the SQL dialect
// `query` accepts and the file format of the warehouse.
func writeVersion(ctx context.Context, stdout, stderr io.Writer) int {
	version, driver := buildinfo.Version(), "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/marcboeker/go-duckdb" {
				driver = d.Version
			}
		}
	}
	duck, err := duckDBVersion(ctx)
	if err != nil {
		say(stderr, "sitewatch --version: %v\n", err)
		return ExitFailed
	}
	say(stdout, "sitewatch %s\nDuckDB %s (go-duckdb %s)\n%s %s/%s\n", version, duck, driver, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return ExitOK
}

func duckDBVersion(ctx context.Context) (_ string, err error) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return "", fmt.Errorf("open in-memory DuckDB: %w", err)
	}
	defer closeInto(&err, db)
	var v string
	if err := db.QueryRowContext(ctx, "SELECT version()").Scan(&v); err != nil {
		return "", fmt.Errorf("read the DuckDB version: %w", err)
	}
	return v, nil
}
