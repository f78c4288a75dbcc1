// Command sitewatch fetches monthly snapshots of site intelligence for a watchlist of domains
// into a DuckDB warehouse and a Hive-partitioned Parquet tree. See README.md.
package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"sitewatch/pipeline"

	"golang.org/x/term"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The first signal stops gracefully (calls in flight finish and are stored); restoring
	// the default handling lets a second one end the process at once.
	context.AfterFunc(ctx, stop)
	fi, _ := os.Stderr.Stat()
	env := pipeline.Env{
		Getenv:     os.Getenv,
		Stdin:      os.Stdin,
		Stdout:     os.Stdout,
		Stderr:     os.Stderr,
		Logger:     slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: LogLevel(os.Getenv)})),
		IsTerminal: fi != nil && fi.Mode()&os.ModeCharDevice != 0,
		TermWidth: func() int {
			w, _, err := term.GetSize(int(os.Stderr.Fd()))
			if err != nil {
				return 0
			}
			return w
		},
	}
	code := Main(ctx, os.Args[1:], env)
	stop()
	os.Exit(code)
}
