// Command sitewatch fetches monthly snapshots of site intelligence for a watchlist of domains
// into a DuckDB warehouse and a Hive-partitioned Parquet tree. See README.md.
package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"sitewatch/pipeline"

	"golang.org/x/term"
)

// defaultGCPercent is Go's GOGC for sitewatch unless the environment sets GOGC: 50 instead
// of Go's 100 lets the Go heap grow to 1.5× its live data between collections instead of 2×.
// A 100,000-domain run peaked at 356–377 MB instead of 383–398 (Go runtime 100–105 MB
// instead of 125–133); at 1,000 and 10,000 domains the peaks moved within their spread. No
// time cost showed beyond the spread (docs/internals.md, "Benchmarks"): a run mostly waits on the API,
// and the collector runs on the idle core.
const defaultGCPercent = 50

// tuneGC applies defaultGCPercent unless GOGC is set.
func tuneGC(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGCPercent)
	}
}

func main() {
	tuneGC(os.Getenv)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The first signal stops gracefully (calls in flight finish and are stored); restoring
	// the default handling lets a second one end the process at once.
	context.AfterFunc(ctx, stop)
	fi, _ := os.Stderr.Stat()
	level := new(slog.LevelVar) // set by MainLogging from the command, the flags and SITEWATCH_LOG
	env := Env{
		Env: pipeline.Env{
			Getenv: os.Getenv,
			Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})),
		},
		Stdin:      os.Stdin,
		Stdout:     os.Stdout,
		Stderr:     os.Stderr,
		IsTerminal: fi != nil && fi.Mode()&os.ModeCharDevice != 0,
		TermWidth: func() int {
			w, _, err := term.GetSize(int(os.Stderr.Fd()))
			if err != nil {
				return 0
			}
			return w
		},
	}
	code := MainLogging(ctx, os.Args[1:], env, level)
	stop()
	os.Exit(code)
}
