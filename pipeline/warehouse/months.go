package warehouse

import (
	"context"
	"database/sql"
	"fmt"
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
