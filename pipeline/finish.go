package pipeline

import (
	"context"
	"fmt"
	"runtime/debug"

	"sitewatch/pipeline/model"
)

// finish exports Parquet, fills the summary and decides the run's status and error: the
// status is returned, not written, so execute sets it in one place.
func (r *runState) finish(ctx context.Context, stopErr error) (string, error) {
	r.sum.noteSpend(r.client.Stats(), spendBySource(r.client))
	switch {
	case r.mismatch != nil:
		r.countOutcome(ctx, r.sum.Snapshot) // the month named stays as it was: say what it holds
		return StatusMonthMismatch, r.mismatch
	case r.upToDate:
		return r.finishUpToDate(ctx)
	case r.months.Month() == "":
		if stopErr == nil {
			return StatusFailed, fmt.Errorf("%w: no answer told the API's month", ErrIncomplete)
		}
		return statusOf(stopErr), stopErr
	}
	return r.finishMonth(ctx, stopErr)
}

// finishUpToDate ends a run that found the served month complete: no row is rewritten; only
// a Parquet tree left behind by a run killed before its export is completed (0 credits).
func (r *runState) finishUpToDate(ctx context.Context) (string, error) {
	r.countOutcome(ctx, r.sum.Snapshot)
	if r.store.ParquetMissing(r.sum.Snapshot) {
		if err := r.store.ExportParquet(ctx, r.sum.Snapshot); err != nil {
			return StatusFailed, fmt.Errorf("export the missing Parquet of %s to %s: %w", r.sum.Snapshot, r.cfg.Warehouse.Parquet, err)
		}
	}
	return StatusUpToDate, nil
}

// finishMonth commits the run's last answers, checks and exports the month, and says whether
// it is complete.
func (r *runState) finishMonth(ctx context.Context, stopErr error) (string, error) {
	month := r.months.Month()
	r.env.Logger.Debug("commit the last answers")
	if err := r.store.Flush(ctx); err != nil {
		r.countOutcome(ctx, month) // what earlier commits loaded stays loaded: the summary says so
		return StatusFailed, fmt.Errorf("commit the run's last answers to %s: %w", r.cfg.Warehouse.DuckDB, err)
	}
	r.releaseLoading()
	out, err := r.store.Outcome(ctx, month, r.wl.Domains)
	if err != nil {
		r.countOutcome(ctx, month) // what earlier commits loaded stays loaded: the summary says so
		return StatusFailed, fmt.Errorf("read snapshot %s state: %w", month, err)
	}
	r.sum.noteOutcome(out)
	r.env.Logger.Debug("run the quality checks", "snapshot", month)
	// Quality checks are data about the data: a failure to run them never fails the load.
	if _, err := r.store.RunQualityChecks(ctx, month); err != nil {
		r.env.Logger.Warn("quality checks could not run", "snapshot", month, "err", err)
	}
	r.env.Logger.Debug("export Parquet")
	if err := r.export(ctx, out.AnyStored); err != nil {
		return StatusFailed, err
	}
	if stopErr != nil {
		return statusOf(stopErr), stopErr
	}
	return r.completeness(out)
}

// completeness is the status of a month whose fetch ran to its end: complete only when every
// domain is loaded or rejected and the country metadata is in.
func (r *runState) completeness(out *model.Outcome) (string, error) {
	if n := out.Unloadable; n > 0 {
		return StatusFailed, fmt.Errorf("%w: %d domains hold responses that cannot be loaded (fetch_errors code %s); a rerun will not pay for them again: "+
			"`sitewatch run --refresh` refetches them, `sitewatch rebuild` loads them after an upgrade", ErrIncomplete, n, CodeMalformedBody)
	}
	if missing := r.sum.DomainsTotal - r.sum.DomainsLoaded - r.sum.DomainsRejected; missing > 0 || !out.CountriesLoaded {
		return StatusFailed, fmt.Errorf("%w: %d of %d domains not loaded (see fetch_errors); rerun `sitewatch run` to fetch only what is missing",
			ErrIncomplete, missing, r.sum.DomainsTotal)
	}
	return StatusComplete, nil
}

// releaseLoading hands back to the kernel, before the month's checks and export (DuckDB's
// peak), what only the fetch and the load needed: the plan's calls and the warehouse's pair
// index, each an entry per domain. The run's outcome is then counted without a map per
// domain (Store.Outcome): at a million domains the snapshot state read here instead added
// ~280 MB to the run's peak.
func (r *runState) releaseLoading() {
	if r.plan != nil {
		r.plan.release()
	}
	r.store.ReleaseLoading()
	debug.FreeOSMemory()
}

// export writes the Parquet of every month this run stored answers under (the run's month
// when stored says it holds any answer).
func (r *runState) export(ctx context.Context, stored bool) error {
	months := []string{}
	if stored {
		months = append(months, r.months.Month())
	}
	for m := range r.touched {
		months = append(months, m)
	}
	for _, m := range months {
		if err := r.store.ExportParquet(ctx, m); err != nil {
			return fmt.Errorf("export Parquet of %s to %s: %w (`sitewatch rebuild --snapshot %s` re-exports)", m, r.cfg.Warehouse.Parquet, err, m)
		}
	}
	if r.sum.TurnedTo != "" {
		if st, err := r.store.State(ctx, r.sum.TurnedTo); err == nil {
			r.sum.noteTurnedMonth(st)
		}
	}
	return nil
}

// countOutcome fills the loaded and rejected counts of month from the store.
func (r *runState) countOutcome(ctx context.Context, month string) {
	if out, err := r.store.Outcome(ctx, month, r.wl.Domains); err == nil {
		r.sum.noteOutcome(out)
	}
}
