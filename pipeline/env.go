package pipeline

import (
	"context"
	"io"
	"log/slog"
	"time"

	"sitewatch/pipeline/config"
)

// Env is what the core takes from the outside world: the environment, the logger, the clock and
// the ports its adapters fill in (pipeline/wire); tests fill it with fakes. The terminal (stdin,
// stdout, stderr, its width) is cmd/sitewatch's: the core writes no text of its own.
type Env struct {
	Getenv func(string) string
	Logger *slog.Logger
	// Observe, when set, gives each run its Observer, built from the run's config (the
	// schedule re-reads it before each run) and the run's logger (which redacts its secrets):
	// cmd/sitewatch's progress line and pipeline/wire's metrics, live status file, webhook and
	// watchlist growth (observe.go). Without it nothing watches the run.
	Observe func(cfg *config.Config, logger *slog.Logger) Observer
	Now     func() time.Time
	// ProgressEvery is the interval of the run's progress reports (cmd/sitewatch sets a
	// second on a terminal).
	ProgressEvery time.Duration
	// Lease, when set, is taken before a run's first credit (lease.go).
	Lease Lease
	// Credits opens the run's credit sources (pipeline/wire: the API clients and the plan of
	// who pays; `check` and the dry run's balance are pipeline/wire's too).
	Credits Credits
	// Warehouses opens the warehouse (pipeline/wire; the answer log and the bucket's pull are
	// bound to the warehouse a run opens).
	Warehouses Warehouses
	// Sync, when set, tells a dry run and `check` what the bucket holds that the warehouse
	// lacks (bucketsync_hook.go); a run's pull is bound to its warehouse (Warehouses).
	Sync BucketSync
	// Publisher uploads what a run leaves in the bucket of publish.url (pipeline/wire, with the
	// formats written after the Hive layout, such as Iceberg).
	Publisher Publisher
	// PublishBound bounds the upload a run makes of the month it completed (0:
	// AutoPublishBound); tests shorten it.
	PublishBound time.Duration
	// RetryMaxElapsed bounds the time one call keeps retrying transient failures (0:
	// atlas.DefaultRetryMaxElapsed, 2 minutes); tests of what follows a failing API shorten it
	// (the client's own backoff schedule is tested in pipeline/atlas).
	RetryMaxElapsed time.Duration
}

// RunOptions are the flags of `sitewatch run`.
type RunOptions struct {
	// Snapshot is the month the caller expects the API to serve (YYYY-MM); "" takes whatever
	// month the API serves now. When the API serves another month the run stores nothing and
	// fails with a *MonthMismatchError.
	Snapshot string
	Refresh  bool
	// GrowWatchlist lets a complete month grow the watchlist per the config's discover: block
	// (pipeline/wire's listener of RunSettled); `schedule` sets it.
	GrowWatchlist bool
}

func (e Env) WithDefaults() Env {
	if e.Now == nil {
		e.Now = time.Now
	}
	if e.Logger == nil {
		e.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if e.ProgressEvery == 0 {
		e.ProgressEvery = 5 * time.Second
	}
	return e
}

// ErrInterrupted is why a run a signal (SIGINT, SIGTERM) stopped ended: the calls in flight
// were stored and a rerun resumes. errors.Is(ErrInterrupted, context.Canceled) holds, so code
// that asks "was the context cancelled" keeps working, but the message is the user's words.
var ErrInterrupted error = interrupted{}

type interrupted struct{}

func (interrupted) Error() string {
	return "interrupted by a signal (SIGINT or SIGTERM): the answers already paid for are stored; the next run resumes"
}
func (interrupted) Is(target error) bool { return target == context.Canceled }
