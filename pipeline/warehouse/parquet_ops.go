package warehouse

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"sitewatch/pipeline/model"
	"sitewatch/schema/flatten"
	sqlfiles "sitewatch/sql"
)

// BIViewsFile is the embedded SQL that maps the Parquet tree to views (sql/bi/parquet_views.sql).
const BIViewsFile = "bi/parquet_views.sql"

// BIRootPlaceholder stands for the Parquet root in BIViewsFile.
const BIRootPlaceholder = "@PARQUET_ROOT@"

// ExportRunHealth writes month's partition of every RunHealthTables table,
// <parquet>/<table>/snapshot_month=M/data_0.parquet, staged and renamed like ExportParquet
// (which calls it too). Call it after FinishRun so the runs partition shows the run's final
// status. It returns an error when month is not YYYY-MM, no Parquet directory is configured,
// or a file cannot be written.
func (w *Warehouse) ExportRunHealth(ctx context.Context, month string) error {
	if err := checkSnapshot(month); err != nil {
		return fmt.Errorf("export run health: %w", err)
	}
	if w.opts.ParquetDir == "" {
		return fmt.Errorf("export run health of %s: warehouse.parquet is empty: set the Parquet directory in the config", month)
	}
	err := w.unorderedExport(ctx, func(ctx context.Context) error { return w.exportRunHealth(ctx, month) })
	if err != nil {
		return fmt.Errorf("export run health of %s to %s: %w", month, w.opts.ParquetDir, err)
	}
	return nil
}

// unorderedExport runs export in one transaction as ExportParquet does: under the analysis
// memory limit and without insertion order, so the Parquet writer streams row groups. Kept
// in order, the ledger of a million-domain month (2,000,001 run_calls rows) did not fit under
// 128 MB: "Out of Memory Error" (issue 34).
//
// The transaction only reads the tables (one snapshot for every file): it is not a data write,
// so it leaves the stored lists as fresh as they were (cachestate.go). Counted as one, the
// run-health export that follows FinishRun's refresh left every run's lists marked behind: no
// mark for the readers after the run, and the next writer's open computed them all again.
func (w *Warehouse) unorderedExport(ctx context.Context, export func(context.Context) error) error {
	return w.withAnalysisMemory(ctx, func() error {
		return w.inTx(asCacheWrite(ctx), func(ctx context.Context) error {
			if err := w.unordered(ctx); err != nil {
				return err
			}
			defer w.ordered()
			return export(ctx)
		})
	})
}

// ExportRestoreCopy writes month's partitions of the tables a restore copy holds: the raw
// answers, the ledger and the run-health tables, read in one transaction. `sitewatch publish`
// calls it for a month no run completed, since a run killed before its export left the tree
// behind the warehouse. Errors as ExportRunHealth.
func (w *Warehouse) ExportRestoreCopy(ctx context.Context, month string) error {
	if err := checkSnapshot(month); err != nil {
		return fmt.Errorf("export the restore copy: %w", err)
	}
	if w.opts.ParquetDir == "" {
		return fmt.Errorf("export the restore copy of %s: warehouse.parquet is empty: set the Parquet directory in the config", month)
	}
	err := w.unorderedExport(ctx, func(ctx context.Context) error {
		if err := w.exportRaw(ctx, month); err != nil {
			return err
		}
		return w.exportRunHealth(ctx, month)
	})
	if err != nil {
		return fmt.Errorf("export the restore copy of %s to %s: %w", month, w.opts.ParquetDir, err)
	}
	return nil
}

// exportRunHealth writes the run-health partitions of month inside the caller's transaction.
func (w *Warehouse) exportRunHealth(ctx context.Context, month string) error {
	// The ledger changes with every run, even an up-to-date one: it goes with the runs.
	for _, t := range append(slices.Clone(model.RunHealthTables), model.TableRunCalls) {
		dir := filepath.Join(w.opts.ParquetDir, t, "snapshot_month="+month)
		// month was checked against the snapshot pattern, so it is safe as a literal.
		query := fmt.Sprintf(`SELECT * EXCLUDE (snapshot_month) FROM %s WHERE snapshot_month = '%s'`, t, month)
		if err := w.copyParquet(ctx, query, dir); err != nil {
			return fmt.Errorf("%s: %w", t, err)
		}
	}
	return nil
}

// BIViews returns the SQL of BIViewsFile with root (the Parquet directory, absolute or relative
// to where DuckDB runs) in place of BIRootPlaceholder. Run it in any DuckDB to get every
// table and analyst view of the warehouse over the Parquet tree.
func BIViews(root string) (string, error) {
	text, err := fs.ReadFile(sqlfiles.FS, BIViewsFile)
	if err != nil {
		return "", fmt.Errorf("read embedded %s: %w", BIViewsFile, err)
	}
	// The root lands inside SQL string literals: double its quotes.
	return strings.ReplaceAll(string(text), BIRootPlaceholder, strings.ReplaceAll(root, "'", "''")), nil
}

// RenderBIViewsFile generates the content of BIViewsFile from the tables of db (a migrated
// warehouse, e.g. an in-memory one) and the embedded sql/views/*.sql, so the file cannot drift
// from the warehouse (a test compares them). It returns an error when the catalog cannot be read.
func RenderBIViewsFile(ctx context.Context, db *sql.DB) (string, error) {
	var b strings.Builder
	b.WriteString(biHeader)
	tables := make([]string, 0, len(flatten.SnapshotTables)+len(model.RunHealthTables))
	for _, t := range flatten.SnapshotTables {
		tables = append(tables, t.Name)
	}
	tables = append(tables, model.RunHealthTables...)
	for _, t := range tables {
		cols, err := columnList(ctx, db, t)
		if err != nil {
			return "", err
		}
		// Columns listed in the warehouse's order (the partition column is last in a Hive
		// read); union_by_name reads a month exported before a column existed as NULLs.
		fmt.Fprintf(&b, "CREATE OR REPLACE VIEW %s AS SELECT %s\nFROM read_parquet('%s/%s/*/*.parquet', %s);\n\n",
			t, cols, BIRootPlaceholder, t, `hive_partitioning = true, hive_types = {'snapshot_month': VARCHAR}, union_by_name = true`)
	}
	fmt.Fprintf(&b, "-- countries has no partition: one file for the whole table.\nCREATE OR REPLACE VIEW %s AS SELECT * FROM read_parquet('%s/%s/*.parquet');\n",
		flatten.TableCountries, BIRootPlaceholder, flatten.TableCountries)
	views, err := sqlfiles.Views()
	if err != nil {
		return "", err
	}
	for _, v := range views {
		fmt.Fprintf(&b, "\n-- ---- sql/%s ----\n%s", v.Name, strings.TrimRight(v.Text, "\n")+"\n")
	}
	return b.String(), nil
}

// columnList is table's columns in db, quoted, comma-separated, in catalog order.
func columnList(ctx context.Context, db *sql.DB, table string) (string, error) {
	var cols []string
	err := QueryEach(ctx, db, `SELECT column_name FROM duckdb_columns() WHERE table_name = ? AND schema_name = 'main' ORDER BY column_index`,
		[]any{table}, func(rows *sql.Rows) error {
			var c string
			if err := rows.Scan(&c); err != nil {
				return err
			}
			cols = append(cols, `"`+strings.ReplaceAll(c, `"`, `""`)+`"`)
			return nil
		})
	if err != nil {
		return "", fmt.Errorf("read the columns of %s: %w", table, err)
	}
	if len(cols) == 0 {
		return "", fmt.Errorf("read the columns of %s: no such table in the warehouse", table)
	}
	return strings.Join(cols, ", "), nil
}

const biHeader = `-- sitewatch BI views over the Parquet tree: one view per warehouse table, then every analyst
-- view of sql/views/, so a BI tool (or any DuckDB) queries the Parquet files exactly as it
-- would the warehouse, without ever holding the DuckDB file's lock.
--
-- Generated from the warehouse schema and sql/views/*.sql by
-- go test ./pipeline/warehouse -run TestBIViewsFileIsCurrent -update; do not edit by hand.
--
-- Usage: replace ` + BIRootPlaceholder + ` by the Parquet directory (warehouse.parquet; absolute, so
-- the views work from anywhere), then run the file once into a small DuckDB file of views:
--
--   sed "s|` + BIRootPlaceholder + `|$PWD/data/parquet|g" sql/bi/parquet_views.sql | duckdb data/bi.duckdb
--
-- The views read the files at query time: new months appear without rerunning this. Every table
-- needs at least one file: a month exported by sitewatch has a file for every table.

`
