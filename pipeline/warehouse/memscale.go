package warehouse

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// limitsMeasuredAt is the watchlist size AttentionMemoryLimit and CandidatesMemoryLimit were
// measured at: 100,000 domains (issue 44).
const limitsMeasuredAt = 100_000

// listsLimit is limit (AttentionMemoryLimit or CandidatesMemoryLimit) grown in proportion to the
// largest month's domains above limitsMeasuredAt. The stored lists take medians over every
// domain's moves of the month, a holistic aggregate DuckDB 1.1 holds in memory and does not
// spill: at 1,000,000 domains the fixed 256 MB ran out ("failed to pin block") and every read
// then computed the list itself. Below 100,000 domains the limit is unchanged; a failed count
// leaves it unchanged too (the refresh then fails as before, and says so).
func (w *Warehouse) listsLimit(ctx context.Context, limit string) string {
	var domains int64
	err := w.db.QueryRowContext(ctx, `SELECT coalesce(max(n), 0) FROM (SELECT count(*) AS n FROM sites GROUP BY snapshot_month)`).Scan(&domains)
	if err != nil {
		w.log.Warn("count the domains the stored lists read; their memory limit stays "+limit, "err", err)
		return limit
	}
	return scaleLimit(limit, domains)
}

// scaleLimit returns limit ("<n>MB") × domains ÷ limitsMeasuredAt, rounded up to a megabyte,
// and limit itself for domains up to limitsMeasuredAt or a limit not written in MB.
func scaleLimit(limit string, domains int64) string {
	mb, err := strconv.ParseInt(strings.TrimSuffix(limit, "MB"), 10, 64)
	if err != nil || !strings.HasSuffix(limit, "MB") || domains <= limitsMeasuredAt {
		return limit
	}
	return fmt.Sprintf("%dMB", (mb*domains+limitsMeasuredAt-1)/limitsMeasuredAt)
}
