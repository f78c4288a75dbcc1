package pipeline

import (
	"context"
	"fmt"

	"sitewatch/pipeline/config"
)

// openRun gets a run going: the credit sources' free probes (several sources) run while the
// lease is taken and the warehouse is opened and migrated, so a run starts after the slower
// of the two instead of their sum (~0.4 s of a two-source run at 200–800 ms of latency). A
// failure of either returns its error with nothing held; runs the warehouse closed as
// abandoned on the way are still notified. ctx is the run's context (the lease's).
func openRun(ctx context.Context, cfg *config.Config, opts RunOptions, env Env, obs Observer) (context.Context, Fetcher, Warehouse, func(), HeldLease, error) {
	type probed struct {
		srcs CreditSources
		err  error
	}
	if env.Warehouses == nil {
		return ctx, nil, nil, nil, nil, errNoWarehouses
	}
	if env.Credits == nil {
		return ctx, nil, nil, nil, nil, errNoCredits
	}
	releaseWriter, err := env.Warehouses.LockForRun(cfg.Warehouse.DuckDB) // no restore replaces the file under this run
	if err != nil {
		return ctx, nil, nil, nil, nil, err
	}
	done := make(chan probed, 1)
	go func() {
		srcs, err := env.Credits.Open(ctx, cfg, env) // pipeline/wire: one client per credit source
		done <- probed{srcs, err}
	}()
	held, err := takeLease(ctx, env.Lease)
	if err != nil {
		releaseWriter()
		if p := <-done; p.err != nil {
			return ctx, nil, nil, nil, nil, p.err // what the keys or sources say comes first, as before
		}
		return ctx, nil, nil, nil, nil, err // names the holder; nothing was spent
	}
	runCtx, admit, release := ctx, (func(context.Context) error)(nil), releaseWriter
	if held != nil {
		runCtx, admit = held.Context(), held.Admit
		release = func() { held.Release(); releaseWriter() }
	}
	wh, err := env.Warehouses.OpenRun(runCtx, cfg, env.Logger)
	p := <-done
	if err == nil {
		notifyAbandoned(runCtx, obs, wh.Abandoned(), env.Logger)
	}
	switch {
	case p.err != nil:
		if wh != nil {
			_ = wh.Close() // nothing of this run was written
		}
		release()
		return ctx, nil, nil, nil, nil, p.err
	case err != nil:
		release()
		return ctx, nil, nil, nil, nil, err // the warehouse names the file and the holder
	}
	// Under the lease, before the plan: what the bucket holds is not paid for again.
	if err := wh.Pull(runCtx); err != nil {
		_ = wh.Close() // nothing of this run was written; what was pulled is committed
		release()
		return ctx, nil, nil, nil, nil, err
	}
	// Planned only now: what the bucket held is no longer counted as to be paid for.
	// No paid call starts unless the lease is confirmed (admit).
	client, err := planFetcher(runCtx, cfg, opts, wh, p.srcs, admit)
	if err != nil {
		_ = wh.Close() // nothing of this run was written
		release()
		return ctx, nil, nil, nil, nil, err
	}
	return runCtx, client, wh, release, held, nil
}

// planFetcher gives the run's credit sources their shares of what the run is about to pay
// for, read from the warehouse after the bucket's pull (NeededNow): the calls the month it
// expects still lacks, the probe's one when that month is held complete, a whole month when
// the warehouse holds none.
func planFetcher(ctx context.Context, cfg *config.Config, opts RunOptions, wh monthReader, srcs CreditSources, admit func(context.Context) error) (Fetcher, error) {
	if !cfg.MultiSource() {
		return srcs.Fetcher(ctx, 0, admit)
	}
	plan, err := expectedPlan(ctx, wh, opts, config.NewWatchlist(cfg).Domains)
	if err != nil {
		return nil, err
	}
	var note []any
	if plan.Snapshot != "" {
		note = append(note, "snapshot", plan.Snapshot)
	}
	if plan.HeldComplete {
		note = append(note, "note", fmt.Sprintf("the month is held complete: the run pays 1 call if the API still serves it, %d for a new month", plan.FullCredits))
	}
	return srcs.Fetcher(ctx, NeededNow(plan), admit, note...)
}
