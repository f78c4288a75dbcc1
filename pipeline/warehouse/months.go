package warehouse

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// LatestMonth returns the newest snapshot month with any stored answer, or "" when the
// warehouse holds none.
func (w *Warehouse) LatestMonth(ctx context.Context) (string, error) {
	var month sql.NullString
	if err := w.db.QueryRowContext(ctx, `SELECT max(snapshot_month) FROM raw_responses`).Scan(&month); err != nil {
		return "", fmt.Errorf("read the latest snapshot month: %w", err)
	}
	return month.String, nil
}

// MonthCompleteSince returns when month was first complete: the end of its first run that
// left it complete, else (a month completed by runs that each ended early) its newest stored
// answer. ok is false when the month holds nothing.
func (w *Warehouse) MonthCompleteSince(ctx context.Context, month string) (since time.Time, ok bool, err error) {
	var t sql.NullTime
	err = w.db.QueryRowContext(ctx, `SELECT coalesce(
			(SELECT min(finished_at) FROM runs WHERE snapshot_month = ? AND status = 'complete'),
			(SELECT max(fetched_at) FROM raw_responses WHERE snapshot_month = ?))`, month, month).Scan(&t)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("read when %s was complete: %w", month, err)
	}
	return t.Time.UTC(), t.Valid, nil
}
