package pipeline

import (
	"context"
	"fmt"
	"os"

	"sitewatch/pipeline/config"
	"sitewatch/pipeline/model"
	"sitewatch/schema"
)

// DryRun returns the plan of a run without calling anything. It reads the warehouse read-only
// (and treats a missing one as empty), so it creates nothing and works while a BI tool reads
// the file. The API's month is known only from its first answer, so the plan is for the
// expected month: --snapshot, else the newest month held (Plan.MonthKnown says which). With a
// bucket (env.Sync) it counts what the bucket holds and the warehouse lacks as held, read
// without writing anything: a run pulls it first (bucketsync_hook.go).
func DryRun(ctx context.Context, cfg *config.Config, opts RunOptions, env Env) (*Plan, error) {
	env = env.WithDefaults()
	domains := config.NewWatchlist(cfg).Domains
	if env.Warehouses == nil {
		return nil, errNoWarehouses
	}
	var wh ReadWarehouse
	if _, err := os.Stat(cfg.Warehouse.DuckDB); err == nil {
		if wh, err = env.Warehouses.OpenReadOnly(ctx, cfg.Warehouse.DuckDB, env.Logger); err != nil {
			return nil, err
		}
	}
	month, state, err := expectedState(ctx, wh, opts.Snapshot)
	if wh != nil {
		_ = wh.Close() // read-only; closed before the bucket's peek opens it again
	}
	if err != nil {
		return nil, err
	}
	if env.Sync != nil {
		return withBucket(ctx, env, opts, domains, month, state), nil
	}
	return planOf(month, state, domains, opts.Refresh), nil
}

// monthReader is what a plan reads of the warehouse: its newest month and a month's state.
type monthReader interface {
	LatestMonth(ctx context.Context) (string, error)
	State(ctx context.Context, month string) (*model.SnapshotState, error)
}

// expectedPlan is the plan of the month a run expects (--snapshot, else the newest month wh
// holds) given what wh holds; a nil wh holds nothing.
func expectedPlan(ctx context.Context, wh monthReader, opts RunOptions, domains []string) (*Plan, error) {
	month, state, err := expectedState(ctx, wh, opts.Snapshot)
	if err != nil {
		return nil, err
	}
	return planOf(month, state, domains, opts.Refresh), nil
}

// expectedState is the month a run expects (snapshot, else the newest month wh holds) and what
// wh holds of it; a nil wh holds nothing.
func expectedState(ctx context.Context, wh monthReader, snapshot string) (string, *model.SnapshotState, error) {
	month := snapshot
	if wh == nil {
		return month, emptyState(), nil
	}
	var err error
	if month == "" {
		if month, err = wh.LatestMonth(ctx); err != nil {
			return "", nil, err
		}
	}
	if month == "" {
		return "", emptyState(), nil
	}
	state, err := wh.State(ctx, month)
	if err != nil {
		return "", nil, fmt.Errorf("read snapshot %s state: %w", month, err)
	}
	return month, state, nil
}

// planOf is the plan of month given state, as a dry run shows it.
func planOf(month string, state *model.SnapshotState, domains []string, refresh bool) *Plan {
	plan := BuildPlan(month, domains, state, refresh)
	if month != "" && !refresh && plan.Complete(state, domains) {
		plan.HeldComplete = true
	}
	plan.FullCredits = len(domains)*len(schema.DomainEndpoints) + 1
	return plan
}

func emptyState() *model.SnapshotState { return model.NewSnapshotState() }
