// Package pipeline is the run itself: which calls a snapshot still needs, fetching them
// through a Fetcher, landing the answers in a Store under the month the API's data is for, and
// the schedule that keeps the current month complete. It declares the small interfaces it
// needs (deps.go, observe.go); the adapters implement them, and pipeline/wire and cmd/sitewatch
// wire them: the core imports no adapter (docs/design.md, "Layering").
package pipeline

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"sitewatch/pipeline/config"
	"sitewatch/pipeline/model"
)

// Fetcher is what a run needs of the API client.
type Fetcher interface {
	// FetchAll makes the calls, handing each result to handle from one goroutine, and returns
	// the reason the client stopped early (nil when every call was attempted).
	FetchAll(ctx context.Context, reqs []model.Request, handle func(model.Result)) error
	// Stop ends the run's fetching: no new call starts; calls in flight finish.
	Stop(reason error)
	Stats() model.Stats
}

// QueueFetcher is a Fetcher that can also take its calls from a queue, one at a time (one
// credit source can; several split their calls up front). A run uses it when Queueable says
// so: the plan is handed out without a list of Requests, through the blind start's gate.
type QueueFetcher interface {
	Fetcher
	Queueable() bool
	// FetchFrom is FetchAll over the calls next hands out until it reports none left.
	FetchFrom(ctx context.Context, next func() (model.Request, bool), handle func(model.Result)) error
	// Stopped is closed when the fetcher stops.
	Stopped() <-chan struct{}
}

// SourceCounter is a Fetcher that says what each of its credit sources spent and has left,
// for the summary, the ledger's sources and the reserve (countries.go); a Fetcher without it
// is taken to know no balance.
type SourceCounter interface {
	Spend() []model.SourceSpend
}

// Credits opens a run's credit sources: pipeline/wire implements it over pipeline/atlas (one
// client per source, the keys from the environment) and pipeline/sources (who pays for what);
// cmd/sitewatch sets Env.Credits.
type Credits interface {
	// Open builds the clients of cfg's credit sources and, with api.sources, makes each one's
	// free probe (0 credits). Errors: *config.Error or *atlas.ConfigError (nothing was called),
	// a credit stop when every source is empty or at its reserve, a probe's failure naming its
	// source.
	Open(ctx context.Context, cfg *config.Config, env Env) (CreditSources, error)
}

// CreditSources are a run's credit sources, opened (and probed with api.sources).
type CreditSources interface {
	// Fetcher is the run's fetcher for a run that needs calls calls (0 with one source: it
	// pays for all): with api.sources who pays for what is planned now, from calls, and logged
	// with note. Every paid call passes admit right before it is sent (nil: no fence). A credit
	// stop when no source can pay.
	Fetcher(ctx context.Context, calls int, admit func(context.Context) error, note ...any) (Fetcher, error)
}

// Store is what a run needs of the warehouse.
type Store interface {
	State(ctx context.Context, month string) (*model.SnapshotState, error)
	// Outcome counts what month holds for the watchlist's domains, without State's maps.
	Outcome(ctx context.Context, month string, watchlist []string) (*model.Outcome, error)
	// Store lands one answer; storage errors may surface at a later Store or at Flush.
	Store(ctx context.Context, month string, raw model.Raw) error
	// Flush commits every answer Store accepted.
	Flush(ctx context.Context) error
	// ReleaseLoading drops what Store keeps in memory to pair answers (read again by the
	// next Store), once a run's answers are flushed.
	ReleaseLoading()
	// RecordCharge records a charged answer that was not stored, for the credit ledger.
	RecordCharge(ctx context.Context, c model.Charge) error
	RecordFetchError(ctx context.Context, e model.FetchError) error
	StartRun(ctx context.Context, r model.RunRecord) error
	FinishRun(ctx context.Context, r model.RunRecord) error
	ExportParquet(ctx context.Context, month string) error
	// ParquetMissing says whether the Parquet tree lacks a file of month.
	ParquetMissing(month string) bool
	// ExportRunHealth re-exports the runs, fetch_errors and quality_checks Parquet of month.
	ExportRunHealth(ctx context.Context, month string) error
	// RunQualityChecks records the data-quality findings of month (never blocks loading).
	RunQualityChecks(ctx context.Context, month string) ([]model.QualityFinding, error)
	// LatestMonth is the newest month with any stored answer ("" for an empty warehouse).
	LatestMonth(ctx context.Context) (string, error)
	// NewestOverview is when the newest site-overview answer of month was fetched (zero: none).
	NewestOverview(ctx context.Context, month string) (time.Time, error)
	// MonthCompleteSince says when month was first complete.
	MonthCompleteSince(ctx context.Context, month string) (time.Time, bool, error)
}

// Warehouse is the warehouse a run opened: the Store, the runs its open found abandoned, the
// bucket's pull and the answer log bound to it, and Close (which checkpoints: its error fails
// the run). The after-run effects that query it (attention, growth, the digest) are
// pipeline/wire's listeners of RunSettled (wire/observe.go), which opened it.
type Warehouse interface {
	Store
	Abandoned() []model.RunRecord
	// Pull takes the bucket's newer months in before the run plans (0 credits); it does nothing
	// without a bucket, and fails when the bucket cannot be read.
	Pull(ctx context.Context) error
	// StartLog starts the run's answer log while held carries it; stop makes a last cut and
	// ends it (a no-op without an answer log).
	StartLog(ctx context.Context, runID string, held HeldLease) (stop func())
	Close() error
}

// ReadWarehouse is the warehouse opened read-only: a dry run's plan, the schedule's history.
type ReadWarehouse interface {
	LatestMonth(ctx context.Context) (string, error)
	State(ctx context.Context, month string) (*model.SnapshotState, error)
	Runs(ctx context.Context, limit int) ([]model.RunRecord, error)
	Close() error
}

// Warehouses opens the warehouse of a config: pipeline/wire implements it over
// pipeline/warehouse and cmd/sitewatch sets Env.Warehouses.
type Warehouses interface {
	// LockForRun takes the run's writer lock beside duckdbPath, so no restore replaces the
	// file under the run; it fails at once while a restore holds it.
	LockForRun(duckdbPath string) (release func(), err error)
	// OpenRun opens cfg's warehouse for writing, waiting a little while a short command holds it.
	OpenRun(ctx context.Context, cfg *config.Config, logger *slog.Logger) (Warehouse, error)
	// OpenReadOnly opens the warehouse at duckdbPath for reading only.
	OpenReadOnly(ctx context.Context, duckdbPath string, logger *slog.Logger) (ReadWarehouse, error)
}

// errNoCredits is the error of a run whose Env names no way to open its credit sources.
var errNoCredits = errors.New("pipeline: Env.Credits is not set (cmd/sitewatch sets pipeline/wire.Credits)")

// errNoWarehouses is the error of a run or dry run whose Env names no way to open the warehouse.
var errNoWarehouses = errors.New("pipeline: Env.Warehouses is not set (cmd/sitewatch sets pipeline/wire.Warehouses)")

// Clock tells the time and waits; tests pass a controllable one. It has the method set of
// atlas.Clock, so one fake serves the client and the schedule.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

// WallClock is the real time: the schedule's default Clock. The core keeps its own rather than
// borrowing the client's (pipeline/atlas is an adapter the core does not import).
type WallClock struct{}

// Now is time.Now.
func (WallClock) Now() time.Time { return time.Now() }

// After is time.After.
func (WallClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
