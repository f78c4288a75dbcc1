package pipeline

import (
	"context"

	"sitewatch/pipeline/warehouse"
)

// BucketSync makes the warehouse a cache of the bucket of publish.url, the system of record:
// a run pulls, once it holds the lease and before it plans, every month the bucket holds in
// a version the warehouse has not taken in (0 credits), so it pays only for what nobody has
// paid for. pipeline/bucketsync implements it; cmd/sitewatch sets Env.Sync when publish.url
// is set.
type BucketSync interface {
	// Pull takes the bucket's newer months into wh; it fails when the bucket cannot be read
	// (then nothing is paid: the warehouse cannot tell what was paid elsewhere).
	Pull(ctx context.Context, wh *warehouse.Warehouse) error
	// CompleteNewer lists, read-only, the months the bucket holds complete in a version the
	// warehouse lacks: `check` counts them as held (a run pulls them for 0 credits).
	CompleteNewer(ctx context.Context) ([]string, error)
}

// withBucket is check's estimate with what the bucket holds: when it holds the planned month
// (or a later one) complete in a version the warehouse lacks, the next run pulls it and finds
// it up to date for the probe's 1 credit. A bucket that cannot be read leaves the estimate to
// the warehouse alone, with a warning.
func withBucket(ctx context.Context, env Env, plan *Plan) *Plan {
	if env.Sync == nil {
		return plan
	}
	months, err := env.Sync.CompleteNewer(ctx)
	if err != nil {
		env.Logger.Warn("the bucket could not be read: the estimate counts only what this warehouse holds", "err", err)
		return plan
	}
	if len(months) == 0 || months[len(months)-1] < plan.Snapshot {
		return plan
	}
	newest := months[len(months)-1]
	env.Logger.Info("the bucket holds the month complete (another machine's run): the next run takes it in for 0 credits", "month", newest)
	out := *plan
	out.Snapshot, out.HeldComplete, out.Requests = newest, true, nil
	out.Loaded, out.HalfLoaded, out.Unloadable, out.Countries = plan.Domains, 0, 0, false
	return &out
}

// syncBucket pulls the bucket into wh when there is a bucket.
func syncBucket(ctx context.Context, s BucketSync, wh *warehouse.Warehouse) error {
	if s == nil {
		return nil
	}
	return s.Pull(ctx, wh)
}
