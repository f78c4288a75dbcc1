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
}

// syncBucket pulls the bucket into wh when there is a bucket.
func syncBucket(ctx context.Context, s BucketSync, wh *warehouse.Warehouse) error {
	if s == nil {
		return nil
	}
	return s.Pull(ctx, wh)
}
