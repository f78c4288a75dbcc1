package pipeline

import (
	"context"

	"sitewatch/pipeline/model"
	"sitewatch/schema"
)

// BucketSync makes the warehouse a cache of the bucket of publish.url, the system of record:
// a run pulls, once it holds the lease and before it plans, every month the bucket holds in
// a version the warehouse has not taken in (0 credits), so it pays only for what nobody has
// paid for (Warehouse.Pull, bound by pipeline/wire). This is its read-only side, for plans;
// pipeline/bucketsync implements it and cmd/sitewatch sets Env.Sync when publish.url is set.
type BucketSync interface {
	// Peek reads, writing nothing (no lease, no pull), the version of month ("" = the newest
	// month) the bucket holds that the warehouse lacks: `run --dry-run` and `check` count
	// what a run would pull first as held.
	Peek(ctx context.Context, month string) (BucketPeek, error)
}

// BucketPeek is what a run's pull would take in of one month.
type BucketPeek struct {
	URL      string // publish.url
	Month    string // "" when the bucket holds nothing the warehouse lacks
	Complete bool   // the bucket holds Month complete
	// State is what a restore copy of the incomplete month holds (answers, rejections);
	// nil when Complete.
	State   *model.SnapshotState
	Answers int64 // the answers of the bucket's version
}

// withBucket is the plan of a dry run (and of `check`) with what the bucket holds and the
// warehouse (whose state of month is state) lacks: a run pulls that first for 0 credits, so
// its answers are counted as held. A bucket that cannot be read leaves the plan to the
// warehouse alone, with a warning the plan repeats.
func withBucket(ctx context.Context, env Env, opts RunOptions, domains []string, month string, state *model.SnapshotState) *Plan {
	peek, err := env.Sync.Peek(ctx, opts.Snapshot)
	if err != nil {
		env.Logger.Warn("the bucket could not be read: the estimate counts only what this warehouse holds", "err", err)
		plan := planOf(month, state, domains, opts.Refresh)
		plan.BucketUnread = err.Error()
		return plan
	}
	if peek.Month == "" || peek.Month < month {
		return planOf(month, state, domains, opts.Refresh) // the month planned is held as the bucket holds it
	}
	if peek.Month > month {
		month, state = peek.Month, emptyState() // the warehouse holds nothing of a month newer than its newest
	}
	merged, lacking := mergeState(state, peek, domains)
	if peek.Complete {
		env.Logger.Info("the bucket holds the month complete (another machine's run): the next run takes it in for 0 credits", "month", month)
	}
	plan := planOf(month, merged, domains, opts.Refresh)
	plan.FromBucket, plan.BucketURL = lacking, peek.URL
	return plan
}

// mergeState is state with what peek holds of the same month, as a pull would leave the
// warehouse (a domain with both answers is loaded by the pull's rebuild), and how many of
// peek's answers state lacked.
func mergeState(state *model.SnapshotState, peek BucketPeek, domains []string) (*model.SnapshotState, int64) {
	held := int64(storedAnswers(state))
	out := state.Clone()
	if peek.Complete {
		// Every domain loaded or rejected, as the other machine left it: only its manifest was read.
		out.CountriesLoaded = true
		for _, d := range domains {
			if _, rejected := out.Rejected[d]; !rejected {
				out.SetLoaded(d)
			}
		}
		return out, max(peek.Answers-held, 0)
	}
	lacking := int64(0)
	if peek.State.CountriesLoaded && !out.CountriesLoaded {
		out.CountriesLoaded = true
		lacking++
	}
	peek.State.EachStored(func(d string, eps model.Endpoints) {
		for _, ep := range schema.DomainEndpoints {
			if eps.Has(ep) && !out.Stored(d).Has(ep) {
				lacking++
			}
		}
		out.AddStored(d, eps)
		if out.Stored(d).Both() {
			out.SetLoaded(d)
		}
	})
	for d, code := range peek.State.Rejected {
		if _, ok := out.Rejected[d]; !ok {
			out.Rejected[d] = code
		}
	}
	return out, lacking
}
