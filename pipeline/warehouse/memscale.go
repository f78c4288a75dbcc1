package warehouse

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// limitsMeasuredAt is the watchlist size AttentionMemoryLimit and CandidatesMemoryLimit were
// measured at: 100,000 domains (issue 44).
const limitsMeasuredAt = 100_000

// scaleReadLimit grows a reader's memory_limit (Options.MemoryLimit: 384 MB, or a command's
// own) with the largest month above 100,000 domains, as listsLimit grows the writer's: the
// readers' limits were measured at 100,000 domains, and at 1,000,000 `discover` (300 MB) ran
// out of memory. A file it cannot count (no sites table) or set keeps the limit it opened with.
func (w *Warehouse) scaleReadLimit(ctx context.Context) {
	domains, err := w.largestMonth(ctx)
	if err != nil {
		return
	}
	limit := scaleLimit(w.opts.MemoryLimit, domains)
	if limit == w.opts.MemoryLimit {
		return
	}
	if _, err := w.load.ExecContext(ctx, `SET memory_limit = `+sqlString(limit)); err != nil {
		w.log.Warn("grow the reader's memory limit with the watchlist; it stays "+w.opts.MemoryLimit, "limit", limit, "err", err)
		return
	}
	w.opts.MemoryLimit = limit
	w.mu.Lock()
	w.memoryLimit = limit
	w.mu.Unlock()
}

// listsLimit is limit (AttentionMemoryLimit or CandidatesMemoryLimit) grown in proportion to the
// largest month's domains above limitsMeasuredAt. The stored lists take medians over every
// domain's moves of the month, a holistic aggregate DuckDB 1.1 holds in memory and does not
// spill: at 1,000,000 domains the fixed 256 MB ran out ("failed to pin block") and every read
// then computed the list itself. Below 100,000 domains the limit is unchanged; a failed count
// leaves it unchanged too (the refresh then fails as before, and says so).
func (w *Warehouse) listsLimit(ctx context.Context, limit string) string {
	domains, err := w.largestMonth(ctx)
	if err != nil {
		w.log.Warn("count the domains the stored lists read; their memory limit stays "+limit, "err", err)
		return limit
	}
	return scaleLimit(limit, domains)
}

// largestMonth is how many domains the largest month of sites holds. The count is kept until
// this writer's next data commit: a refresh asks for it once per list (three times), and at
// 1,000,000 domains each count scans both months of sites.
func (w *Warehouse) largestMonth(ctx context.Context) (int64, error) {
	w.largest.mu.Lock()
	defer w.largest.mu.Unlock()
	writes := w.dataWrites.Load()
	if w.largest.counted && w.largest.writes == writes {
		return w.largest.domains, nil
	}
	var domains int64
	err := w.db.QueryRowContext(ctx, `SELECT coalesce(max(n), 0) FROM (SELECT count(*) AS n FROM sites GROUP BY snapshot_month)`).Scan(&domains)
	if err != nil {
		return 0, err
	}
	w.largest.counted, w.largest.writes, w.largest.domains = true, writes, domains
	w.largest.counts++
	return domains, nil
}

// monthCount is largestMonth's count as of a number of data commits.
type monthCount struct {
	mu      sync.Mutex
	counted bool
	writes  uint64 // dataWrites when counted
	domains int64
	counts  int // how many times it counted (for tests)
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
