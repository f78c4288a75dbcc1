package pipeline

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"sitewatch/pipeline/atlas"
	"sitewatch/pipeline/config"
	"sitewatch/pipeline/warehouse"
	"sitewatch/schema"
	"sitewatch/schema/flatten"
)

// Env is what a command reads from and writes to the outside world; tests fill it in.
type Env struct {
	Getenv     func(string) string
	Stdin      io.Reader // `sitewatch query -` reads SQL from it
	Stdout     io.Writer
	Stderr     io.Writer
	Logger     *slog.Logger
	IsTerminal bool // stderr is a terminal: draw a live progress line instead of log lines
	Now        func() time.Time
	// ProgressEvery is the interval of progress log lines when not on a terminal.
	ProgressEvery time.Duration
}

// RunOptions are the flags of `sitewatch run`.
type RunOptions struct {
	Snapshot string // YYYY-MM
	Refresh  bool
}

// Run statuses recorded in the runs table.
const (
	StatusRunning        = "running"
	StatusComplete       = "complete"
	StatusStoppedCredits = "stopped_credits"
	StatusUnauthorized   = "unauthorized"
	StatusFailed         = "failed"
	StatusInterrupted    = "interrupted"
)

// ErrIncomplete reports a run that attempted everything but left domains unloaded.
var ErrIncomplete = errors.New("snapshot incomplete")

// Summary is what one run did.
type Summary struct {
	RunID            string
	Snapshot         string
	Status           string
	DomainsTotal     int
	DomainsLoaded    int
	DomainsRejected  int // by the API (400), in this snapshot
	Requests         int
	RateLimited      int
	CreditsSpent     int
	CreditsRemaining int64 // -1 unknown
	Duration         time.Duration
	Watchlist        *config.Watchlist
	DataMonth        string            // the API's snapshot month when it differs from Snapshot, else ""
	APIRejections    map[string]string // domain -> code
	Failures         []warehouse.FetchError
}

// runState is one run in progress.
type runState struct {
	cfg        *config.Config
	env        Env
	wh         *warehouse.Warehouse
	client     *atlas.Client
	plan       *Plan
	sum        *Summary
	stopCause  error // the first storage failure, or ErrUpstreamFailing: either stops the fetch
	failStreak int
	progress   *progress
}

// Run fetches and loads one snapshot of the watchlist, resuming where an earlier run of the
// same snapshot stopped. Its error says why the snapshot is not complete; ExitCode maps it to
// the exit codes of the contract.
func Run(ctx context.Context, cfg *config.Config, opts RunOptions, env Env) (*Summary, error) {
	env = env.WithDefaults()
	wl := config.NewWatchlist(cfg)
	creds, err := CredentialsFrom(cfg, env.Getenv, false)
	if err != nil {
		return nil, err
	}
	wh, err := warehouse.Open(ctx, warehouse.Options{DuckDBPath: cfg.Warehouse.DuckDB, ParquetDir: cfg.Warehouse.Parquet, Logger: env.Logger})
	if err != nil {
		return nil, err // the warehouse names the file and the holder
	}
	defer wh.Close()
	state, err := wh.State(ctx, opts.Snapshot)
	if err != nil {
		return nil, fmt.Errorf("read snapshot %s state: %w", opts.Snapshot, err)
	}
	plan := BuildPlan(opts.Snapshot, wl.Domains, state, opts.Refresh)
	client, err := atlas.New(clientConfig(cfg, creds, env.Logger))
	if err != nil {
		return nil, &config.Error{Path: cfg.Path, Msg: err.Error()}
	}
	r := &runState{cfg: cfg, env: env, wh: wh, client: client, plan: plan, sum: &Summary{
		RunID: newRunID(env.Now()), Snapshot: opts.Snapshot, DomainsTotal: len(wl.Domains),
		Watchlist: wl, CreditsRemaining: -1,
	}}
	return r.sum, r.execute(ctx)
}

// DryRun returns the plan of a run without calling anything. It reads the warehouse read-only
// (and treats a missing one as empty), so it creates nothing and works while a BI tool reads
// the file.
func DryRun(ctx context.Context, cfg *config.Config, opts RunOptions, env Env) (*Plan, error) {
	env = env.WithDefaults()
	wl := config.NewWatchlist(cfg)
	state := &warehouse.SnapshotState{}
	if _, err := os.Stat(cfg.Warehouse.DuckDB); err == nil {
		wh, err := warehouse.Open(ctx, warehouse.Options{DuckDBPath: cfg.Warehouse.DuckDB, Logger: env.Logger, ReadOnly: true})
		if err != nil {
			return nil, err
		}
		defer wh.Close()
		if state, err = wh.State(ctx, opts.Snapshot); err != nil {
			return nil, fmt.Errorf("read snapshot %s state: %w", opts.Snapshot, err)
		}
	}
	return BuildPlan(opts.Snapshot, wl.Domains, state, opts.Refresh), nil
}

func (e Env) WithDefaults() Env {
	if e.Now == nil {
		e.Now = time.Now
	}
	if e.Logger == nil {
		e.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if e.Stdin == nil {
		e.Stdin = strings.NewReader("")
	}
	if e.Stdout == nil {
		e.Stdout = io.Discard
	}
	if e.Stderr == nil {
		e.Stderr = io.Discard
	}
	if e.ProgressEvery == 0 {
		e.ProgressEvery = 5 * time.Second
	}
	return e
}

func newRunID(now time.Time) string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b)
}

func (r *runState) execute(ctx context.Context) error {
	started := r.env.Now().UTC()
	// Bookkeeping and loads must commit even when ctx is cancelled (SIGINT lets the calls
	// in flight finish and keeps their results).
	keep := context.WithoutCancel(ctx)
	if err := r.wh.StartRun(keep, r.record(started, nil, StatusRunning, "")); err != nil {
		return fmt.Errorf("record run start: %w", err)
	}
	r.progress = newProgress(r.env, r.client, r.plan)
	stopProgress := r.progress.start(ctx)
	// A signal stops new calls; the calls in flight finish and their results are stored, so
	// no answered (charged) call is thrown away.
	stopOnSignal := context.AfterFunc(ctx, func() {
		r.client.Stop(fmt.Errorf("interrupted by a signal: %w", context.Canceled))
	})
	stopErr := r.fetch(keep)
	stopOnSignal()
	stopProgress()
	if r.stopCause != nil {
		stopErr = r.stopCause // the cause of the stop, even if a signal or a 402 came too
	}
	runErr := r.finish(keep, stopErr)
	finished := r.env.Now().UTC()
	r.sum.Duration = finished.Sub(started)
	msg := ""
	if runErr != nil {
		msg = runErr.Error()
	}
	if err := r.wh.FinishRun(keep, r.record(started, &finished, r.sum.Status, msg)); err != nil && runErr == nil {
		runErr = fmt.Errorf("record run end: %w", err)
	}
	return runErr
}

// fetch runs the plan's calls. country-metadata goes alone first: concurrent workers would
// otherwise send calls in any order, and a run stopped for credits should not lack the
// countries every report joins to.
func (r *runState) fetch(ctx context.Context) error {
	handle := func(res atlas.Result) { r.handle(ctx, res) }
	reqs := r.plan.Requests
	if r.plan.Countries && len(reqs) > 1 {
		if err := r.client.FetchAll(ctx, reqs[:1], handle); err != nil {
			return err
		}
		reqs = reqs[1:]
	}
	return r.client.FetchAll(ctx, reqs, handle)
}

// handle lands one result: a body is stored (and its domain loaded when complete), a failure
// is recorded in fetch_errors. A storage failure stops the run.
func (r *runState) handle(ctx context.Context, res atlas.Result) {
	r.progress.finished(res)
	if res.Err != nil && (atlas.IsStop(res.Err) || errors.Is(res.Err, context.Canceled)) {
		return // the run's own stop, summarized by its status; not a failure of this call
	}
	if res.Err != nil {
		status, code := 0, ""
		var ae *atlas.Error
		if errors.As(res.Err, &ae) {
			status, code = ae.Status, ae.Code
		}
		r.recordFailure(ctx, res.Request, status, code, res.Err)
		return
	}
	// Even after a storage failure stopped the run, later answers are still offered to the
	// warehouse: they are paid for, and the failure may have been passing.
	raw := warehouse.Raw{Endpoint: res.Endpoint, Domain: res.Domain, Body: res.Body, FetchedAt: res.FetchedAt}
	err := r.wh.Store(ctx, r.plan.Snapshot, raw)
	switch {
	case err == nil:
		r.failStreak = 0
		r.checkSnapshotMonth(res)
	case isBodyError(err):
		// The body cannot be loaded (a malformed date, say): this domain's problem, not the
		// warehouse's. A pair that decodes is kept raw (*warehouse.UnloadableError), so no
		// rerun pays for the same body again.
		req := res.Request
		req.Endpoint = blamedEndpoint(err, req.Endpoint)
		r.recordFailure(ctx, req, 200, CodeMalformedBody, err)
	default:
		r.fail(fmt.Errorf("store %s %s: %w", res.Endpoint, DisplayDomain(res.Domain), err))
	}
}

// checkSnapshotMonth notes when the API's data month (meta.snapshot_date of an overview)
// differs from the snapshot the run stores it under: the API serves only its current month,
// so `--snapshot` of another month, or a run just after a month turns, labels data wrongly.
func (r *runState) checkSnapshotMonth(res atlas.Result) {
	if res.Endpoint != schema.EndpointOverview || r.sum.DataMonth != "" {
		return
	}
	var body struct {
		Meta struct {
			SnapshotDate string `json:"snapshot_date"`
		} `json:"meta"`
	}
	if json.Unmarshal(res.Body, &body) != nil || len(body.Meta.SnapshotDate) < 7 {
		return
	}
	if month := body.Meta.SnapshotDate[:7]; month != r.plan.Snapshot {
		r.sum.DataMonth = month
		r.env.Logger.Warn("the API's data is for another month than this snapshot",
			"snapshot", r.plan.Snapshot, "api_snapshot_date", body.Meta.SnapshotDate)
	}
}

// CodeMalformedBody is the fetch_errors code of a 200 body that could not be loaded.
const CodeMalformedBody = "MALFORMED_BODY"

// blamedEndpoint names the endpoint whose body a load error is about: a domain is flattened
// when its second body arrives, which need not be the faulty one.
func blamedEndpoint(err error, arrived schema.Endpoint) schema.Endpoint {
	var de *schema.DecodeError
	var fe *flatten.FlattenError
	switch {
	case errors.As(err, &de):
		return de.Endpoint
	case errors.As(err, &fe):
		return schema.EndpointOverview // every date the flattener parses is in the overview
	}
	return arrived
}

func isBodyError(err error) bool {
	var fe *flatten.FlattenError
	var de *schema.DecodeError
	return errors.As(err, &fe) || errors.As(err, &de)
}

// fail stops the run for err (the first such error wins): no new call starts.
func (r *runState) fail(err error) {
	if r.stopCause != nil {
		return
	}
	r.stopCause = err
	r.env.Logger.Error("stopping the run", "err", err)
	r.client.Stop(err)
}

// recordFailure records one failed call in fetch_errors and in the summary.
func (r *runState) recordFailure(ctx context.Context, req atlas.Request, status int, code string, cause error) {
	fe := warehouse.FetchError{
		RunID: r.sum.RunID, SnapshotMonth: r.plan.Snapshot, Domain: req.Domain, Endpoint: req.Endpoint,
		HTTPStatus: status, Code: code, Message: cause.Error(), OccurredAt: r.env.Now().UTC(),
	}
	r.env.Logger.Warn("call failed", "domain", req.Domain, "endpoint", string(req.Endpoint), "status", status, "code", code, "err", cause)
	if err := r.wh.RecordFetchError(ctx, fe); err != nil {
		r.fail(fmt.Errorf("record the failure of %s %s: %w", req.Endpoint, DisplayDomain(req.Domain), err))
	}
	if status == 400 {
		return
	}
	r.sum.Failures = append(r.sum.Failures, fe)
	// Each failed call already went through its retries; many in a row means the upstream is
	// down, and going on would only burn time (and, for broken 200s, credits).
	if r.failStreak++; r.failStreak >= maxFailStreak {
		r.fail(fmt.Errorf("%w: %d calls in a row failed after their retries (last: %v); try again later", ErrUpstreamFailing, r.failStreak, cause))
	}
}

// maxFailStreak is how many calls in a row may fail (after retries) before the run stops.
const maxFailStreak = 10

// ErrUpstreamFailing stops a run whose calls keep failing.
var ErrUpstreamFailing = errors.New("the API keeps failing")

func DisplayDomain(d string) string {
	if d == "" {
		return "(countries)"
	}
	return d
}

// finish exports Parquet, fills the summary and decides the run's status and error.
func (r *runState) finish(ctx context.Context, stopErr error) error {
	stats := r.client.Stats()
	r.sum.Requests, r.sum.RateLimited = int(stats.Requests), int(stats.RateLimited)
	r.sum.CreditsSpent, r.sum.CreditsRemaining = int(stats.CreditsSpent), stats.CreditsRemaining
	state, err := r.wh.State(ctx, r.plan.Snapshot)
	if err != nil {
		r.sum.Status = StatusFailed
		return fmt.Errorf("read snapshot %s state: %w", r.plan.Snapshot, err)
	}
	r.countOutcome(state)
	if len(state.Stored) == 0 && !state.CountriesLoaded {
		// Nothing of this snapshot is stored (a 401, an unreachable API): an export would
		// only publish empty partitions.
	} else if err := r.wh.ExportParquet(ctx, r.plan.Snapshot); err != nil {
		r.sum.Status = StatusFailed
		return fmt.Errorf("export Parquet of %s to %s: %w (the DuckDB tables are loaded; `sitewatch rebuild` re-exports)", r.plan.Snapshot, r.cfg.Warehouse.Parquet, err)
	}
	r.sum.Status = statusOf(stopErr)
	if stopErr != nil {
		return stopErr
	}
	if n := len(unloadable(r.sum.Watchlist.Domains, state)); n > 0 {
		r.sum.Status = StatusFailed
		return fmt.Errorf("%w: %d domains hold responses that cannot be loaded (fetch_errors code %s); a rerun will not pay for them again: "+
			"`sitewatch run --refresh` refetches them, `sitewatch rebuild` loads them after an upgrade", ErrIncomplete, n, CodeMalformedBody)
	}
	if missing := r.sum.DomainsTotal - r.sum.DomainsLoaded - r.sum.DomainsRejected; missing > 0 || !state.CountriesLoaded {
		r.sum.Status = StatusFailed
		return fmt.Errorf("%w: %d of %d domains not loaded (see fetch_errors); rerun `sitewatch run --snapshot %s` to fetch only what is missing",
			ErrIncomplete, missing, r.sum.DomainsTotal, r.plan.Snapshot)
	}
	return nil
}

func (r *runState) countOutcome(state *warehouse.SnapshotState) {
	r.sum.APIRejections = map[string]string{}
	for _, d := range r.sum.Watchlist.Domains {
		if state.Loaded[d] {
			r.sum.DomainsLoaded++
		} else if code, ok := state.Rejected[d]; ok {
			r.sum.DomainsRejected++
			r.sum.APIRejections[d] = code
		}
	}
}

// statusOf maps the client's stop reason to a run status.
func statusOf(stopErr error) string {
	switch {
	case stopErr == nil:
		return StatusComplete
	case IsCreditStop(stopErr):
		return StatusStoppedCredits
	case errors.Is(stopErr, atlas.ErrUnauthorized):
		return StatusUnauthorized
	case errors.Is(stopErr, context.Canceled):
		return StatusInterrupted
	default:
		return StatusFailed
	}
}

func IsCreditStop(err error) bool {
	return errors.Is(err, atlas.ErrOutOfCredits) || errors.Is(err, atlas.ErrCreditReserve) || errors.Is(err, atlas.ErrRunBudget)
}

func (r *runState) record(started time.Time, finished *time.Time, status, msg string) warehouse.RunRecord {
	rec := warehouse.RunRecord{
		RunID: r.sum.RunID, SnapshotMonth: r.plan.Snapshot, StartedAt: started, FinishedAt: finished, Status: status,
		DomainsTotal: r.sum.DomainsTotal, DomainsLoaded: r.sum.DomainsLoaded, DomainsRejected: r.sum.DomainsRejected,
		Requests: r.sum.Requests, CreditsSpent: r.sum.CreditsSpent, RateLimited: r.sum.RateLimited, Message: msg,
	}
	if r.sum.CreditsRemaining >= 0 {
		left := r.sum.CreditsRemaining
		rec.CreditsRemaining = &left
	}
	return rec
}

// credentials are the secrets a run needs, read from the environment only.
type credentials struct {
	apiKey, marketplaceKey string
}

func CredentialsFrom(cfg *config.Config, getenv func(string) string, dryRun bool) (credentials, error) {
	if dryRun {
		return credentials{apiKey: getenv(config.EnvAPIKey), marketplaceKey: getenv(config.EnvMarketplaceKey)}, nil
	}
	c, err := config.CredentialsFrom(cfg, getenv) // refuses a missing or malformed key, never printing it
	return credentials{apiKey: c.APIKey, marketplaceKey: c.MarketplaceKey}, err
}

func clientConfig(cfg *config.Config, creds credentials, logger *slog.Logger) atlas.Config {
	return atlas.Config{
		BaseURL:          cfg.API.BaseURL,
		Mode:             atlas.Mode(cfg.API.Mode),
		APIKey:           creds.apiKey,
		MarketplaceHost:  cfg.API.MarketplaceHost,
		MarketplaceKey:   creds.marketplaceKey,
		RateLimit:        cfg.API.RateLimit,
		MinCredits:       cfg.API.MinCredits,
		MaxCreditsPerRun: cfg.API.MaxCreditsPerRun,
		Timeout:          cfg.API.Timeout.Duration,
		Logger:           logger,
	}
}
