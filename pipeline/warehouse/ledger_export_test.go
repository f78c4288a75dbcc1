package warehouse

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"sitewatch/pipeline/model"
)

// TestLedgerExportFitsTheLimit: the run-health export after a run (ExportRunHealth) streams
// like ExportParquet. Kept in insertion order, the ledger of a million-domain month did not
// fit under the 128 MB limit ("Out of Memory Error", issue 34); here a ledger of 600,000 rows
// under a 16 MB limit stands for it.
func TestLedgerExportFitsTheLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 600,000-row ledger")
	}
	ctx := context.Background()
	dir := t.TempDir()
	w, err := Open(ctx, Options{DuckDBPath: filepath.Join(dir, "w.duckdb"), ParquetDir: filepath.Join(dir, "parquet"), LoadMemoryLimit: "16MB"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	const rows = 600_000
	_, err = w.DB().ExecContext(ctx, fmt.Sprintf(`INSERT INTO run_calls
		SELECT 'run-' || (i %% 3), '2026-10', 'domain-' || i || '.example', CASE WHEN i %% 2 = 0 THEN 'site-overview' ELSE 'site-similar' END,
		       200, 1, TIMESTAMP '2026-11-01 00:00:00' + INTERVAL (i) SECOND, 'stored', 'direct'
		FROM range(%d) t(i)`, rows))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.ExportRunHealth(ctx, "2026-10"); err != nil {
		t.Fatalf("ExportRunHealth of a %d-row ledger under a 16 MB limit: %v", rows, err)
	}
	var n int
	file := filepath.Join(dir, "parquet", model.TableRunCalls, "snapshot_month=2026-10", parquetFile)
	if err := w.DB().QueryRowContext(ctx, `SELECT count(*) FROM read_parquet(?)`, file).Scan(&n); err != nil || n != rows {
		t.Errorf("the exported ledger holds %d rows (%v), want %d", n, err, rows)
	}
}
