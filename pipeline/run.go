package pipeline

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"sitewatch/pipeline/config"
	"sitewatch/pipeline/model"
	"sitewatch/pipeline/secret"
	"sitewatch/schema"
)

// runState is one run in progress: what it was given, and its state by concern, each owned by
// the file that changes it. The summary is written only through its note methods
// (summary.go) and the run's status in one place (execute).
type runState struct {
	runInputs
	*monthState       // learn.go: the API's month and what the run decided about it
	stopper           // stop.go: the first cause that stopped the fetch, the failure streak
	plan        *Plan // calls.go: the calls the learned month still needs
	progress    *progress
	obs         Observer // observe.go: told what the run does
	sum         *Summary
	foldLogs    bool // the run's publish may fold the answer log (it still held the lease)
}

// runInputs are what a run is given and never changes.
type runInputs struct {
	cfg    *config.Config
	opts   RunOptions
	env    Env
	store  Store
	client Fetcher
	wl     *config.Watchlist
}

// Run fetches and loads the snapshot of the month the API serves now, resuming where an
// earlier run of that month stopped. Its error says why the snapshot is not complete;
// cmd/sitewatch maps it to the exit codes of the contract.
func Run(ctx context.Context, cfg *config.Config, opts RunOptions, env Env) (*Summary, error) {
	env, secrets := env.WithDefaults().redacting(cfg)
	wl := config.NewWatchlist(cfg)
	if len(wl.Domains) == 0 {
		return nil, &config.Error{Path: cfg.Path, Msg: ErrNothingToFetch.Error() + "; `sitewatch validate` lists why each entry was rejected"}
	}
	obs := observerOf(env, cfg, env.Logger)
	signalCtx := ctx
	ctx, client, wh, release, held, err := openRun(ctx, cfg, opts, env, obs) // runopen.go: probes beside the warehouse
	if err != nil {
		return nil, err
	}
	defer release() // after publishAfter: the lease is held until the run's answers are in the bucket
	r := newRunState(cfg, opts, env, wh, client, wl)
	r.obs = obs
	stopLog := wh.StartLog(signalCtx, r.sum.RunID, held) // pipeline/wire: the answer log bound to wh
	runErr := r.execute(ctx)
	stopLog()                     // no paid call after this: the last answers go to the bucket before the warehouse closes
	r.foldLogs = ctx.Err() == nil // under the lease: its publish may remove the segments it holds
	// The after-run effects (attention metrics, watchlist growth, the webhook) read the open warehouse.
	r.tell(ctx, RunSettled{Summary: r.sum, Err: runErr, Store: wh, Grow: opts.GrowWatchlist, At: env.Now()})
	// Closing checkpoints the WAL into the file: a failure (a full disk) leaves the run's work
	// in the WAL, which the next open replays, but this run must not report success.
	if err := wh.Close(); err != nil && runErr == nil {
		r.sum.settle(StatusFailed)
		runErr = err // names the file, the failed write and what to do
	}
	// The upload ends on a signal, not on the loss of the lease (ctx): a run whose lease was
	// deleted, replaced or taken over still saves what it paid for, or the next holder, finding
	// none of it in the bucket, pays it all again. Its writes stay conditional (If-Match and
	// GuardRuns), so a new holder's month is never overwritten.
	runErr = r.publishAfter(signalCtx, runErr) // runpublish.go: a complete month, or a restore copy
	r.sum.redactPublishError(secrets.Redact)
	return r.sum, secret.Wrap(runErr, secrets)
}

func newRunState(cfg *config.Config, opts RunOptions, env Env, store Store, client Fetcher, wl *config.Watchlist) *runState {
	r := &runState{
		runInputs:  runInputs{cfg: cfg, opts: opts, env: env, store: store, client: client, wl: wl},
		monthState: newMonthState(),
		obs:        nopObserver{},
		sum:        &Summary{RunID: newRunID(env.Now()), DomainsTotal: len(wl.Domains), Watchlist: wl, CreditsRemaining: -1},
	}
	r.stopper = stopper{fetch: client, logger: env.Logger, told: func(ev RunStopping) { r.tell(context.Background(), ev) }}
	return r
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
	candidate, err := r.candidateMonth(keep)
	if err != nil {
		return err
	}
	if err := r.store.StartRun(keep, r.record(started, nil, StatusRunning, "")); err != nil {
		return fmt.Errorf("record run start: %w", err)
	}
	r.progress = newProgress(r.env, r.client, len(r.wl.Domains)*len(schema.DomainEndpoints)+1)
	r.progress.onReport = func(rep ProgressReport) { r.tell(ctx, rep) }
	r.tell(ctx, RunStarted{RunID: r.sum.RunID, Month: candidate, Domains: len(r.wl.Domains), At: started, Now: r.progressNow})
	stopProgress := r.progress.start(ctx)
	// A signal (or the loss of the bucket lease) stops new calls; the calls in flight finish
	// and their results are stored, so no answered (charged) call is thrown away.
	stopOnSignal := context.AfterFunc(ctx, func() {
		reason := stopReason(ctx) // lease.go
		r.tell(ctx, RunStopping{Cause: reason})
		r.client.Stop(reason)
		r.progress.stop()
	})
	stopErr := r.fetch(keep, candidate)
	stopOnSignal()
	stopProgress()
	if r.cause() != nil {
		stopErr = r.cause() // the cause of the stop, even if a signal or a 402 came too
	}
	status, runErr := r.finish(keep, stopErr)
	r.sum.settle(status)
	finished := r.env.Now().UTC()
	r.sum.noteDuration(finished.Sub(started))
	msg := ""
	if runErr != nil {
		msg = runErr.Error()
	}
	if err := r.store.FinishRun(keep, r.record(started, &finished, r.sum.Status, msg)); err != nil && runErr == nil {
		runErr = fmt.Errorf("record run end: %w", err)
	}
	if r.sum.Snapshot != "" && r.mismatch == nil {
		// The runs table's Parquet now shows this run finished, not running.
		if err := r.store.ExportRunHealth(keep, r.sum.Snapshot); err != nil {
			r.env.Logger.Warn("could not export the run-health tables to Parquet", "snapshot", r.sum.Snapshot, "err", err)
		}
	}
	r.tell(ctx, RunFinished{Summary: r.sum, Message: msg, At: finished, MonthLoaded: r.mismatch == nil})
	return runErr
}

func (r *runState) record(started time.Time, finished *time.Time, status, msg string) model.RunRecord {
	rec := model.RunRecord{
		RunID: r.sum.RunID, SnapshotMonth: r.sum.Snapshot, StartedAt: started, FinishedAt: finished, Status: status,
		DomainsTotal: r.sum.DomainsTotal, DomainsLoaded: r.sum.DomainsLoaded, DomainsRejected: r.sum.DomainsRejected,
		Requests: r.sum.Requests, CreditsSpent: r.sum.CreditsSpent, RateLimited: r.sum.RateLimited, Message: msg,
		CreditsBySource: r.sum.creditsBySource(),
	}
	if r.sum.CreditsRemaining >= 0 {
		left := r.sum.CreditsRemaining
		rec.CreditsRemaining = &left
	}
	return rec
}
