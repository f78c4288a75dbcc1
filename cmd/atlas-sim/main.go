// Command atlas-sim serves the Site Intelligence API simulator of package atlastest on a
// local address, with deterministic synthetic data; with --month-turn-after it turns to the
// next data month while serving, as the real API does. It prints "listening on http://HOST:PORT"
// on stdout once it accepts connections, logs one line per request on stderr (never a key;
// none with --quiet), and shuts down gracefully on SIGINT or SIGTERM.
//
// Usage:
//
//	atlas-sim [--addr 127.0.0.1:8080] [--quiet] [--keys K=N,...] [--rate N] [--latency MIN[-MAX]]
//	          [--fail-rate F] [--month YYYY-MM] [--month-turn-after D] [--seed N]
//	          [--marketplace-host H --marketplace-key K [--marketplace-require-bearer]
//	           [--quota N] [--quota-reset T] [--marketplace-rate N]]
//	atlas-sim --help | --version
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"sitewatch/pipeline/atlas/atlastest"
	"sitewatch/pipeline/buildinfo"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run parses args, serves until ctx ends and returns the exit code: 0 after a clean
// shutdown, 1 when serving fails, 2 for bad usage.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	addr, quiet, opts, err := parseFlags(args, stdout, time.Now())
	if errors.Is(err, flag.ErrHelp) || errors.Is(err, errVersion) {
		return 0
	}
	if err != nil {
		complain(stderr, fmt.Errorf("%w\nRun atlas-sim --help for the flags", err))
		return 2
	}
	level := slog.LevelInfo
	if quiet {
		level = slog.LevelWarn // no line per request: a terminal shared with sitewatch stays readable
	}
	opts.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	srv, err := atlastest.Listen(addr, opts)
	if err != nil {
		complain(stderr, err)
		return 2
	}
	// Scripts wait for this line to learn the address; without it they would wait forever.
	if _, err := fmt.Fprintf(stdout, "listening on %s\n", srv.URL); err != nil {
		complain(stderr, fmt.Errorf("print the listening address: %w", err))
		srv.Close()
		return 1
	}
	<-ctx.Done()
	opts.Logger.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		complain(stderr, err)
		return 1
	}
	return 0
}

// complain prints err on stderr; if stderr itself fails there is nowhere left to say so.
func complain(stderr io.Writer, err error) {
	_, _ = fmt.Fprintf(stderr, "atlas-sim: %v\n", err)
}

// description is the head of --help: what the simulator is and how it is used.
const description = `atlas-sim serves a faithful simulator of the Site Intelligence API on a local address:
every endpoint, alias, header, error body, auth rule, credit and rate rule of the
specification, with deterministic synthetic data (same domain + same month = same body).
It serves the direct gateway (/atlas/...) and, with --marketplace-host and
--marketplace-key, a marketplace listing with its own monthly quota, reset time and rate,
from one process. It prints "listening on http://HOST:PORT" on stdout once it accepts
connections, logs one line per request on stderr (never a key; --quiet: none), and stops
cleanly on SIGINT or SIGTERM.

Usage:
  atlas-sim [flags]
  atlas-sim --addr 127.0.0.1:0 --keys demo-key=500 --rate 20 \
            --marketplace-host intel.example --marketplace-key mk --quota 100 --marketplace-rate 10

Flags:
`

// errVersion reports that --version was given and printed: exit 0, serve nothing.
var errVersion = errors.New("version printed")

// parseFlags returns the listen address, whether --quiet was given, and the simulator's options.
func parseFlags(args []string, stdout io.Writer, now time.Time) (string, bool, atlastest.Options, error) {
	sa, opts, err := parseSimFlags(args, stdout, now)
	return sa.addr, sa.quiet, opts, err
}

// simArgs are the flags that are not the simulator's options.
type simArgs struct {
	addr  string
	quiet bool
}

func parseSimFlags(args []string, stdout io.Writer, now time.Time) (simArgs, atlastest.Options, error) {
	fs := flag.NewFlagSet("atlas-sim", flag.ContinueOnError)
	// Flag errors are returned and printed by run; the help is printed only when asked for,
	// on stdout (the flag package calls Usage on every parse error too).
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	var (
		opts       atlastest.Options
		version    = fs.Bool("version", false, "print the version and exit")
		quiet      = fs.Bool("quiet", false, "log no line per request: only warnings and errors on stderr (for a terminal shared with sitewatch)")
		quotaReset = fs.String("quota-reset", "", "when the listing's quota resets: RFC 3339 `T`, or a Go duration from start (default the first of next month, 00:00 UTC)")
		addr       = fs.String("addr", "127.0.0.1:8080", "listen `HOST:PORT` (port 0 picks a free one)")
		keys       = fs.String("keys", atlastest.DefaultKey+"=500", "API keys and their starting credits, `K=N[,K=N...]`")
		latency    = fs.String("latency", "0", "added latency per request, uniform in `MIN[-MAX]` (Go durations, e.g. 200ms-800ms)")
	)
	fs.IntVar(&opts.Rate, "rate", atlastest.DefaultRate, "per-key requests per second (X-RateLimit-Limit)")
	fs.Float64Var(&opts.FailRate, "fail-rate", 0, "fraction of otherwise-good requests answered 500, 502 or 504 (never charged)")
	fs.StringVar(&opts.Month, "month", "", "the `YYYY-MM` whose snapshot the data describes (default the current UTC month)")
	fs.DurationVar(&opts.MonthTurnAfter, "month-turn-after", 0, "after `D` (e.g. 30s), serve the next month's data, as the real API does when its month turns (0 = never)")
	fs.Int64Var(&opts.Seed, "seed", 1, "seed of the synthetic data and of the injected failures")
	fs.StringVar(&opts.MarketplaceHost, "marketplace-host", "", "also serve the marketplace listing to requests with this x-marketplace-host")
	fs.StringVar(&opts.MarketplaceKey, "marketplace-key", "", "the x-marketplace-key of the listing")
	fs.BoolVar(&opts.MarketplaceRequireBearer, "marketplace-require-bearer", false, "the listing also requires Authorization: Bearer <API key>")
	fs.Int64Var(&opts.MarketplaceQuota, "quota", atlastest.DefaultQuota, "the listing's monthly request quota `N` (x-ratelimit-requests-limit); each charged listing call takes one")
	fs.IntVar(&opts.MarketplaceRate, "marketplace-rate", 0, "the listing's own requests per second `N` (default --rate)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return simArgs{}, opts, printHelp(fs, stdout)
		}
		return simArgs{}, opts, err
	}
	if *version {
		_, err := fmt.Fprintf(stdout, "atlas-sim %s\n", buildinfo.Version())
		if err != nil {
			return simArgs{}, opts, fmt.Errorf("print the version: %w", err)
		}
		return simArgs{}, opts, errVersion
	}
	if opts.MarketplaceQuota < 1 {
		return simArgs{}, opts, fmt.Errorf("--quota %d: want at least 1 request a month", opts.MarketplaceQuota)
	}
	if opts.MarketplaceRate < 0 {
		return simArgs{}, opts, fmt.Errorf("--marketplace-rate %d: want at least 1 request per second", opts.MarketplaceRate)
	}
	if *quotaReset != "" {
		t, err := parseReset(*quotaReset, now)
		if err != nil {
			return simArgs{}, opts, err
		}
		opts.MarketplaceQuotaReset = t
	}
	if fs.NArg() > 0 {
		return simArgs{}, opts, fmt.Errorf("unexpected argument %q: atlas-sim takes flags only", fs.Arg(0))
	}
	if opts.Rate < 1 {
		return simArgs{}, opts, fmt.Errorf("--rate %d: want at least 1 request per second", opts.Rate)
	}
	if opts.MonthTurnAfter < 0 {
		return simArgs{}, opts, fmt.Errorf("--month-turn-after %v: want a positive duration such as 30s", opts.MonthTurnAfter)
	}
	if opts.Seed == 0 {
		return simArgs{}, opts, errors.New("--seed 0: want a non-zero seed")
	}
	var err error
	if opts.Keys, err = atlastest.ParseKeys(*keys); err != nil {
		return simArgs{}, opts, fmt.Errorf("--keys: %w", err)
	}
	if opts.LatencyMin, opts.LatencyMax, err = atlastest.ParseLatency(*latency); err != nil {
		return simArgs{}, opts, fmt.Errorf("--latency: %w", err)
	}
	if _, err := atlastest.NewHandler(opts); err != nil {
		return simArgs{}, opts, err
	}
	return simArgs{addr: *addr, quiet: *quiet}, opts, nil
}

// parseReset reads --quota-reset: an RFC 3339 time, or a Go duration after now.
func parseReset(v string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t.UTC(), nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return time.Time{}, fmt.Errorf("--quota-reset %q: want an RFC 3339 time (2026-12-01T00:00:00Z) or a positive Go duration from start (90s, 2h)", v)
	}
	return now.Add(d).UTC(), nil
}

// printHelp writes the description and the flags to stdout and returns flag.ErrHelp (exit 0).
func printHelp(fs *flag.FlagSet, stdout io.Writer) error {
	fs.SetOutput(stdout)
	defer fs.SetOutput(io.Discard)
	if _, err := fmt.Fprint(stdout, description); err != nil {
		return fmt.Errorf("print the help: %w", err)
	}
	fs.PrintDefaults()
	return flag.ErrHelp
}
