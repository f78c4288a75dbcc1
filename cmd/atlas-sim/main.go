// Command atlas-sim serves the Site Intelligence API simulator of package atlastest on a
// local address, with deterministic synthetic data; with --month-turn-after it turns to the
// next data month while serving, as the real API does. It prints "listening on http://HOST:PORT"
// on stdout once it accepts connections, logs one line per request on stderr (never a key),
// and shuts down gracefully on SIGINT or SIGTERM.
//
// Usage:
//
//	atlas-sim [--addr 127.0.0.1:8080] [--keys K=N,...] [--rate N] [--latency MIN[-MAX]]
//	          [--fail-rate F] [--month YYYY-MM] [--month-turn-after D] [--seed N]
//	          [--marketplace-host H --marketplace-key K [--marketplace-require-bearer]]
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
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run parses args, serves until ctx ends and returns the exit code: 0 after a clean
// shutdown, 1 when serving fails, 2 for bad usage.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	addr, opts, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		complain(stderr, fmt.Errorf("%w\nRun atlas-sim --help for the flags", err))
		return 2
	}
	opts.Logger = slog.New(slog.NewTextHandler(stderr, nil))
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

func parseFlags(args []string, stderr io.Writer) (string, atlastest.Options, error) {
	fs := flag.NewFlagSet("atlas-sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		opts    atlastest.Options
		addr    = fs.String("addr", "127.0.0.1:8080", "listen `HOST:PORT` (port 0 picks a free one)")
		keys    = fs.String("keys", atlastest.DefaultKey+"=500", "API keys and their starting credits, `K=N[,K=N...]`")
		latency = fs.String("latency", "0", "added latency per request, uniform in `MIN[-MAX]` (Go durations, e.g. 200ms-800ms)")
	)
	fs.IntVar(&opts.Rate, "rate", atlastest.DefaultRate, "per-key requests per second (X-RateLimit-Limit)")
	fs.Float64Var(&opts.FailRate, "fail-rate", 0, "fraction of otherwise-good requests answered 500, 502 or 504 (never charged)")
	fs.StringVar(&opts.Month, "month", "", "the `YYYY-MM` whose snapshot the data describes (default the current UTC month)")
	fs.DurationVar(&opts.MonthTurnAfter, "month-turn-after", 0, "after `D` (e.g. 30s), serve the next month's data, as the real API does when its month turns (0 = never)")
	fs.Int64Var(&opts.Seed, "seed", 1, "seed of the synthetic data")
	fs.StringVar(&opts.MarketplaceHost, "marketplace-host", "", "also serve the marketplace listing to requests with this x-marketplace-host")
	fs.StringVar(&opts.MarketplaceKey, "marketplace-key", "", "the x-marketplace-key of the listing")
	fs.BoolVar(&opts.MarketplaceRequireBearer, "marketplace-require-bearer", false, "the listing also requires Authorization: Bearer <API key>")
	if err := fs.Parse(args); err != nil {
		return "", opts, err
	}
	if fs.NArg() > 0 {
		return "", opts, fmt.Errorf("unexpected argument %q: atlas-sim takes flags only", fs.Arg(0))
	}
	if opts.Rate < 1 {
		return "", opts, fmt.Errorf("--rate %d: want at least 1 request per second", opts.Rate)
	}
	if opts.MonthTurnAfter < 0 {
		return "", opts, fmt.Errorf("--month-turn-after %v: want a positive duration such as 30s", opts.MonthTurnAfter)
	}
	if opts.Seed == 0 {
		return "", opts, errors.New("--seed 0: want a non-zero seed")
	}
	var err error
	if opts.Keys, err = atlastest.ParseKeys(*keys); err != nil {
		return "", opts, fmt.Errorf("--keys: %w", err)
	}
	if opts.LatencyMin, opts.LatencyMax, err = atlastest.ParseLatency(*latency); err != nil {
		return "", opts, fmt.Errorf("--latency: %w", err)
	}
	if _, err := atlastest.NewHandler(opts); err != nil {
		return "", opts, err
	}
	return *addr, opts, nil
}
