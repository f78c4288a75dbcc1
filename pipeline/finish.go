package pipeline

import (
	"context"
	"fmt"
	"runtime/debug"

	"sitewatch/pipeline/warehouse"
)

// finish exports Parquet, fills the summary and decides the run's status and error.
func (r *runState) finish(ctx context.Context, stopErr error) error {
	stats := r.client.Stats()
	r.sum.Requests, r.sum.RateLimited = int(stats.Requests), int(stats.RateLimited)
	r.sum.CreditsSpent, r.sum.CreditsRemaining = int(stats.CreditsSpent), stats.CreditsRemaining
	r.sum.Sources = spendBySource(r.client)
	switch {
	case r.mismatch != nil:
		r.sum.Status = StatusMonthMismatch
		r.countOutcome(ctx, r.sum.Snapshot) // the month named stays as it was: say what it holds
		return r.mismatch
	case r.upToDate:
		r.sum.Status = StatusUpToDate
		r.countOutcome(ctx, r.sum.Snapshot)
		// No row is rewritten; only a Parquet tree left behind by a run killed before its
		// export is completed (0 credits).
		if r.store.ParquetMissing(r.sum.Snapshot) {
			if err := r.store.ExportParquet(ctx, r.sum.Snapshot); err != nil {
				r.sum.Status = StatusFailed
				return fmt.Errorf("export the missing Parquet of %s to %s: %w", r.sum.Snapshot, r.cfg.Warehouse.Parquet, err)
			}
		}
		return nil
	case r.months.Month() == "":
		r.sum.Status = statusOf(stopErr)
		if stopErr == nil {
			stopErr = fmt.Errorf("%w: no answer told the API's month", ErrIncomplete)
			r.sum.Status = StatusFailed
		}
		return stopErr
	}
	r.env.Logger.Debug("commit the last answers")
	if err := r.store.Flush(ctx); err != nil {
		r.sum.Status = StatusFailed
		r.countOutcome(ctx, r.months.Month()) // what earlier commits loaded stays loaded: the summary says so
		return fmt.Errorf("commit the run's last answers to %s: %w", r.cfg.Warehouse.DuckDB, err)
	}
	r.releaseLoading()
	out, err := r.store.Outcome(ctx, r.months.Month(), r.wl.Domains)
	if err != nil {
		r.sum.Status = StatusFailed
		r.countOutcome(ctx, r.months.Month()) // what earlier commits loaded stays loaded: the summary says so
		return fmt.Errorf("read snapshot %s state: %w", r.months.Month(), err)
	}
	r.countLoaded(out)
	r.env.Logger.Debug("run the quality checks", "snapshot", r.months.Month())
	// Quality checks are data about the data: a failure to run them never fails the load.
	if _, err := r.store.RunQualityChecks(ctx, r.months.Month()); err != nil {
		r.env.Logger.Warn("quality checks could not run", "snapshot", r.months.Month(), "err", err)
	}
	r.env.Logger.Debug("export Parquet")
	if err := r.export(ctx, out.AnyStored); err != nil {
		r.sum.Status = StatusFailed
		return err
	}
	r.sum.Status = statusOf(stopErr)
	if stopErr != nil {
		return stopErr
	}
	if n := out.Unloadable; n > 0 {
		r.sum.Status = StatusFailed
		return fmt.Errorf("%w: %d domains hold responses that cannot be loaded (fetch_errors code %s); a rerun will not pay for them again: "+
			"`sitewatch run --refresh` refetches them, `sitewatch rebuild` loads them after an upgrade", ErrIncomplete, n, CodeMalformedBody)
	}
	if missing := r.sum.DomainsTotal - r.sum.DomainsLoaded - r.sum.DomainsRejected; missing > 0 || !out.CountriesLoaded {
		r.sum.Status = StatusFailed
		return fmt.Errorf("%w: %d of %d domains not loaded (see fetch_errors); rerun `sitewatch run` to fetch only what is missing",
			ErrIncomplete, missing, r.sum.DomainsTotal)
	}
	return nil
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
			r.sum.TurnedLoaded, r.sum.TurnedAnswers = st.LoadedCount(), storedAnswers(st)
		}
	}
	return nil
}

// countOutcome fills the loaded and rejected counts of month from the store.
func (r *runState) countOutcome(ctx context.Context, month string) {
	if out, err := r.store.Outcome(ctx, month, r.wl.Domains); err == nil {
		r.countLoaded(out)
	}
}

func (r *runState) countLoaded(out *warehouse.Outcome) {
	r.sum.APIRejections = out.Rejected
	r.sum.DomainsLoaded, r.sum.DomainsRejected = out.Loaded, len(out.Rejected)
}
