package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"math"

	"sitewatch/pipeline/atlas"
	"sitewatch/pipeline/config"
	"sitewatch/pipeline/sources"
)

// openRun gets a run going: the credit sources' free probes (several sources) run while the
// lease is taken and the warehouse is opened and migrated, so a run starts after the slower
// of the two instead of their sum (~0.4 s of a two-source run at 200–800 ms of latency). A
// failure of either returns its error with nothing held; runs the warehouse closed as
// abandoned on the way are still notified. ctx is the run's context (the lease's).
func openRun(ctx context.Context, cfg *config.Config, opts RunOptions, env Env, obs Observer) (context.Context, Fetcher, Warehouse, func(), HeldLease, error) {
	type probed struct {
		srcs *probedSources
		err  error
	}
	if env.Warehouses == nil {
		return ctx, nil, nil, nil, nil, errNoWarehouses
	}
	releaseWriter, err := env.Warehouses.LockForRun(cfg.Warehouse.DuckDB) // no restore replaces the file under this run
	if err != nil {
		return ctx, nil, nil, nil, nil, err
	}
	done := make(chan probed, 1)
	go func() {
		srcs, err := probeFetcher(ctx, cfg, env) // spend.go: one client per credit source
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
	client, err := planFetcher(runCtx, cfg, opts, env, wh, p.srcs)
	if err != nil {
		_ = wh.Close() // nothing of this run was written
		release()
		return ctx, nil, nil, nil, nil, err
	}
	fenceCalls(client, admit) // lease.go: no paid call starts unless the lease is confirmed
	return runCtx, client, wh, release, held, nil
}

// planFetcher gives the run's credit sources their shares of what the run is about to pay
// for, read from the warehouse after the bucket's pull (neededNow): the calls the month it
// expects still lacks, the probe's one when that month is held complete, a whole month when
// the warehouse holds none.
func planFetcher(ctx context.Context, cfg *config.Config, opts RunOptions, env Env, wh monthReader, srcs *probedSources) (*sources.Multi, error) {
	if !cfg.MultiSource() {
		client, _, err := srcs.fetcher(cfg, env, 0)
		return client, err
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
	client, _, err := srcs.fetcher(cfg, env, neededNow(plan), note...)
	return client, err
}

func clientConfig(cfg *config.Config, creds config.Credentials, logger *slog.Logger) atlas.Config {
	return atlas.Config{
		BaseURL:           cfg.API.BaseURL,
		Mode:              atlas.Mode(cfg.API.Mode),
		APIKey:            creds.APIKey,
		MarketplaceHost:   cfg.API.MarketplaceHost,
		MarketplaceKey:    creds.MarketplaceKey,
		RateLimit:         cfg.API.RateLimit,
		MinCredits:        cfg.API.MinCredits,
		MaxCreditsPerRun:  cfg.API.MaxCreditsPerRun,
		Timeout:           cfg.API.Timeout.Duration,
		AllowInsecureHTTP: cfg.API.AllowInsecureHTTP,
		MaxWastedCredits:  cfg.API.MaxWastedCredits,
		MaxRateLimitWait:  cfg.API.MaxRateLimitWait.Duration,
		Concurrency:       runConcurrency(cfg.API.RateLimit),
		Logger:            logger,
	}
}

// maxRunConcurrency bounds the calls a run keeps in flight (one worker goroutine each, with a
// grown stack and a connection). The client's default, three seconds of calls at the rate
// limit, grew without bound with rate_limit: 10000 meant a worker per planned call, 20,000
// goroutines and 175 MB of stacks at 10,000 domains; 1,024 still left 1,100–1,400 goroutines
// and ~95 MB of Go memory there (docs/warehouse-internals.md, "Memory"). 256 calls in flight
// keep 300 calls/s going at an API latency of 850 ms (the reference limit is 3 calls/s:
// 10 in flight).
const maxRunConcurrency = 256

// runConcurrency is the client's default concurrency for rate calls/s, capped.
func runConcurrency(rate float64) int {
	return min(int(math.Ceil(rate*3))+1, maxRunConcurrency)
}
