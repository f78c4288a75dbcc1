package warehouse

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"

	"sitewatch/pipeline/model"
)

// mergeKeys says how MergeMonth matches a table's incoming rows with the warehouse's: rows of
// the warehouse that share these columns' values with an incoming row are replaced by it.
// A run's ledger, errors and record travel whole (by run_id); an answer by its call.
var mergeKeys = map[string][]string{
	"runs":                  {"run_id"},
	model.TableRunCalls:     {"run_id"},
	"fetch_errors":          {"run_id"},
	model.TableRawResponses: {"domain", "endpoint"},
	"quality_checks":        nil, // the month's findings as the incoming copy ran them, whole
}

// MergeMonth takes month's rows of the archive and run-health tables from Parquet files in
// Hive layout (files maps a table to paths; a copy of the bucket's objects) into this
// warehouse, in one transaction: incoming rows replace the warehouse's of the same run (runs,
// run_calls, fetch_errors) or call (raw_responses), and what only this warehouse holds stays.
// The derived tables are left to RebuildRestored, which derives them from the merged answers.
func (w *Warehouse) MergeMonth(ctx context.Context, month string, files map[string][]string) error {
	if err := checkSnapshot(month); err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	err := w.inTx(ctx, func(ctx context.Context) error {
		for _, table := range append(append([]string{}, model.ArchiveTables...), model.RunHealthTables...) {
			if len(files[table]) == 0 {
				continue
			}
			if err := w.mergeTable(ctx, table, month, files[table]); err != nil {
				return fmt.Errorf("%s: %w", table, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("take %s from the bucket into %s: %w", month, w.opts.DuckDBPath, err)
	}
	return nil
}

func (w *Warehouse) mergeTable(ctx context.Context, table, month string, paths []string) error {
	quoted := make([]string, len(paths))
	for i, p := range paths {
		quoted[i] = sqlString(filepath.ToSlash(p))
	}
	// table comes from ArchiveTables or RunHealthTables and month matched the snapshot
	// pattern: neither is input.
	src := fmt.Sprintf(`(SELECT * FROM read_parquet([%s], hive_partitioning = true, hive_types = {'snapshot_month': VARCHAR}, union_by_name = true) WHERE snapshot_month = '%s')`,
		strings.Join(quoted, ", "), month)
	const incoming = "merge_incoming"
	stmts := []string{`CREATE OR REPLACE TEMP TABLE ` + incoming + ` AS SELECT * FROM ` + src}
	if keys := mergeKeys[table]; keys == nil {
		stmts = append(stmts, fmt.Sprintf(`DELETE FROM %s WHERE snapshot_month = '%s'`, table, month))
	} else {
		var match []string
		for _, k := range keys {
			match = append(match, fmt.Sprintf(`i.%s IS NOT DISTINCT FROM t.%s`, k, k))
		}
		stmts = append(stmts, fmt.Sprintf(`DELETE FROM %s t WHERE t.snapshot_month = '%s' AND EXISTS (SELECT 1 FROM %s i WHERE %s)`,
			table, month, incoming, strings.Join(match, " AND ")))
	}
	stmts = append(stmts, `INSERT INTO `+table+` BY NAME SELECT * FROM `+incoming, `DROP TABLE `+incoming)
	for _, q := range stmts {
		if _, err := w.load.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// StateFromParquet reads the state of month from Parquet files in Hive layout (files maps a
// table to paths: raw_responses, fetch_errors) without a warehouse file: which answers they
// hold and which domains the API rejected (400). Nothing is written: an in-memory DuckDB
// reads them. No domain is loaded (the files hold no derived table).
func StateFromParquet(ctx context.Context, month string, files map[string][]string) (*model.SnapshotState, error) {
	if err := checkSnapshot(month); err != nil {
		return nil, fmt.Errorf("state from Parquet: %w", err)
	}
	st := model.NewSnapshotState()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return nil, fmt.Errorf("state of %s from Parquet: %w", month, err)
	}
	defer func() { _ = db.Close() }() // in memory
	src := func(table string) string {
		quoted := make([]string, len(files[table]))
		for i, p := range files[table] {
			quoted[i] = sqlString(filepath.ToSlash(p))
		}
		// month matched the snapshot pattern: not input.
		return fmt.Sprintf(`(SELECT * FROM read_parquet([%s], hive_partitioning = true, hive_types = {'snapshot_month': VARCHAR}, union_by_name = true) WHERE snapshot_month = '%s')`,
			strings.Join(quoted, ", "), month)
	}
	if len(files[model.TableRawResponses]) > 0 {
		err = scanAnswers(ctx, db, `SELECT domain, endpoint FROM `+src(model.TableRawResponses), nil, st)
	}
	if err == nil && len(files["fetch_errors"]) > 0 {
		err = scanRejected(ctx, db, `SELECT domain, arg_max(coalesce(code, ''), occurred_at) FROM `+src("fetch_errors")+` WHERE http_status = 400 GROUP BY domain`, nil, st)
	}
	if err != nil {
		return nil, fmt.Errorf("state of %s from Parquet: %w", month, err)
	}
	return st, nil
}
