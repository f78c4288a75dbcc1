package warehouse

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"sitewatch/pipeline/model"
	"sitewatch/schema"
	"sitewatch/schema/flatten"
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

// ParquetMissing says whether the Parquet tree lacks a file of month (a snapshot table's,
// or countries): a run killed after its last commit but before its export leaves the tree
// behind the tables, and an up-to-date rerun exports it then.
func (w *Warehouse) ParquetMissing(month string) bool {
	if w.opts.ParquetDir == "" {
		return false
	}
	files := []string{filepath.Join(w.opts.ParquetDir, flatten.TableCountries, parquetFile),
		filepath.Join(w.opts.ParquetDir, model.TableRawResponses, "snapshot_month="+month, parquetFile)}
	for _, t := range flatten.SnapshotTables {
		files = append(files, filepath.Join(w.opts.ParquetDir, t.Name, "snapshot_month="+month, parquetFile))
	}
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			return true
		}
	}
	return false
}

// NewestOverview returns when the newest site-overview answer stored for month was fetched,
// or the zero time when it holds none.
func (w *Warehouse) NewestOverview(ctx context.Context, month string) (time.Time, error) {
	if err := w.Flush(ctx); err != nil {
		return time.Time{}, err
	}
	var t sql.NullTime
	err := w.db.QueryRowContext(ctx, `SELECT max(fetched_at) FROM raw_responses WHERE snapshot_month = ? AND endpoint = ?`,
		month, string(schema.EndpointOverview)).Scan(&t)
	if err != nil {
		return time.Time{}, fmt.Errorf("read the newest overview of %s: %w", month, err)
	}
	return t.Time.UTC(), nil
}
