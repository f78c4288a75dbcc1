package warehouse

import (
	"context"
	"fmt"
	"slices"
)

// StoredCandidates is how many of discover's candidates changes_cached_candidates keeps per
// size floor: discover.StoredPerFloor (discover's tests import the warehouse, so it cannot be
// imported here; TestStoredWorthTrackingSameAsComputed holds the two equal).
const StoredCandidates = 100

// DefaultDiscoverFloor is discover.DefaultMinVisits, the floor when the config sets none.
const DefaultDiscoverFloor = 5000

// CandidatesMemoryLimit is DuckDB's memory_limit while storeCandidates ranks the candidates,
// below AttentionMemoryLimit: it runs at the end of every run that wrote, whose peak RSS is
// bounded (README), and under 256 MB the ranking alone took a process of 100,000 domains to
// 550 MB.
const CandidatesMemoryLimit = "128MB"

// StoreWorthTracking stores the worth-tracking lists now (storeCandidates), as the refresh after
// a write does; for tests and tools.
func (w *Warehouse) StoreWorthTracking(ctx context.Context) error { return w.storeCandidates(ctx) }

// storeCandidates replaces changes_cached_candidates with discover's ranking of the latest
// complete month for every floor this writer keeps (the default and Options.DiscoverFloors).
// It runs at every refresh after a write: the ranking reads every month's similar sites and
// rejections, so no checksum of the month alone could tell it stale.
func (w *Warehouse) storeCandidates(ctx context.Context) error {
	return w.withMemoryLimit(ctx, w.listsLimit(ctx, CandidatesMemoryLimit), func() error {
		month, _, err := latestComparedMonth(ctx, w.db)
		if err != nil {
			return fmt.Errorf("stored worth-tracking list: read complete_months: %w", err)
		}
		err = w.inTx(ctx, func(ctx context.Context) error {
			if _, err := w.load.ExecContext(ctx, `DELETE FROM changes_cached_candidates`); err != nil {
				return err
			}
			if month == "" {
				return nil
			}
			for _, floor := range w.discoverFloors() {
				if _, err := w.load.ExecContext(ctx, storeCandidatesSQL, floor, floor, month, StoredCandidates); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("stored worth-tracking list of %s: %w (changes computes it at each read)", month, err)
		}
		return nil
	})
}

const storeCandidatesSQL = `INSERT INTO changes_cached_candidates
	SELECT snapshot_month, ?, discover_rank, candidate, title, category_slug, global_rank, total_visits, country_code,
		watched_by, watched_total, previous_watched_by, listed_by, reach, score, is_new, is_rising, reason
	FROM discover_candidates_in(min_visits := ?) WHERE snapshot_month = ? ORDER BY discover_rank LIMIT ?`

// discoverFloors are the default floor and Options.DiscoverFloors, each once (a floor below 0
// is none: 0).
func (w *Warehouse) discoverFloors() []int64 {
	out := []int64{DefaultDiscoverFloor}
	for _, f := range w.opts.DiscoverFloors {
		f = max(f, 0)
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}
