package warehouse

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sitewatch/pipeline/model"
	"sitewatch/schema/flatten"
	sqlfiles "sitewatch/sql"
)

// SchemaVersion is the name of the newest embedded migration: the schema a warehouse of this
// build has. Manifests record it, so a restore knows whether it can read what was published.
func SchemaVersion() string {
	names, err := fs.Glob(sqlfiles.FS, "migrations/*.sql")
	if err != nil || len(names) == 0 {
		return ""
	}
	slices.Sort(names)
	return strings.TrimPrefix(names[len(names)-1], "migrations/")
}

// RestorableTables are the tables a Parquet tree mirrors and BuildFromParquet loads: every
// table `rebuild` derives, the run-health tables and the archive tables.
func RestorableTables() []string {
	var ts []string
	for _, t := range flatten.SnapshotTables {
		ts = append(ts, t.Name)
	}
	ts = append(ts, model.RunHealthTables...)
	ts = append(ts, model.ArchiveTables...)
	return append(ts, flatten.TableCountries)
}

// BuildFromParquet creates a new DuckDB file at path (which must not exist), migrated to this
// build's schema, and loads each table from its Parquet files (files maps a table to paths;
// the partition column comes from the Hive path). DuckDB reads the files itself, one table at
// a time under memoryLimit ("" = DefaultLoadMemoryLimit), and each table is checkpointed
// before the next: what the restore holds in memory is set by the limit, not by the month's
// size. The file is closed complete, without a WAL. On error the caller removes path.
func BuildFromParquet(ctx context.Context, path string, files map[string][]string, memoryLimit string) error {
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("build %s: the file exists", path)
	}
	db, err := sql.Open("duckdb", path)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	defer func() { _ = db.Close() }() // the checkpoint below made the file complete
	if err := boundLoad(ctx, db, memoryLimit); err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	if err := Migrate(ctx, db); err != nil {
		return fmt.Errorf("create the tables of %s: %w", path, err)
	}
	for _, table := range RestorableTables() {
		if len(files[table]) == 0 {
			continue
		}
		if err := loadTable(ctx, db, table, files[table]); err != nil {
			return fmt.Errorf("load %s into %s: %w", table, path, err)
		}
		// Written to the file now: the blocks of this table need not stay cached while the
		// next one loads, and the WAL never holds more than one table.
		if _, err := db.ExecContext(ctx, `CHECKPOINT`); err != nil {
			return fmt.Errorf("checkpoint %s after %s: %w", path, table, err)
		}
	}
	return db.Close()
}

// boundLoad sets what a bulk load of Parquet needs on a fresh connection pool: one connection
// (settings are per database, and one statement at a time is all a restore runs), DuckDB's
// memory_limit (its default is 80% of the machine's memory, and it keeps every block it
// writes cached up to it), and no insertion order to preserve (INSERT … SELECT would
// otherwise buffer to keep the files' row order, which no table's meaning depends on).
func boundLoad(ctx context.Context, db *sql.DB, memoryLimit string) error {
	db.SetMaxOpenConns(1)
	if memoryLimit == "" {
		memoryLimit = DefaultLoadMemoryLimit
	}
	for _, q := range []string{`SET memory_limit = ` + sqlString(memoryLimit), `SET preserve_insertion_order = false`} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}

func loadTable(ctx context.Context, db *sql.DB, table string, paths []string) error {
	quoted := make([]string, len(paths))
	for i, p := range paths {
		quoted[i] = sqlString(filepath.ToSlash(p))
	}
	opts := ""
	if table != flatten.TableCountries {
		opts = `, hive_partitioning = true, hive_types = {'snapshot_month': VARCHAR}, union_by_name = true`
	}
	// table comes from RestorableTables, never from input.
	q := fmt.Sprintf(`INSERT INTO %s BY NAME SELECT * FROM read_parquet([%s]%s)`, table, strings.Join(quoted, ", "), opts)
	_, err := db.ExecContext(ctx, q)
	return err
}

// RebuildRestored derives month's tables from its raw answers after a restore loaded only its
// restore copy (raw answers, ledger, run health), keeping the quality_checks rows that copy
// held: they record the checks as they ran, and a rebuild would stamp them anew. It exports
// month's Parquet like Rebuild. A month without raw answers is left as it is (0, nil).
func (w *Warehouse) RebuildRestored(ctx context.Context, month string) (int, error) {
	var stored int
	if err := w.db.QueryRowContext(ctx, `SELECT count(*) FROM raw_responses WHERE snapshot_month = ?`, month).Scan(&stored); err != nil || stored == 0 {
		return 0, err
	}
	err := w.inTx(ctx, func(ctx context.Context) error {
		_, err := w.load.ExecContext(ctx, `CREATE OR REPLACE TABLE `+keptChecksTable+` AS SELECT * FROM quality_checks WHERE snapshot_month = ?`, month)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("keep the quality checks of %s: %w", month, err)
	}
	n, err := w.Rebuild(ctx, month)
	if err != nil {
		return n, err
	}
	err = w.inTx(ctx, func(ctx context.Context) error {
		if _, err := w.load.ExecContext(ctx, `DELETE FROM quality_checks WHERE snapshot_month = ?`, month); err != nil {
			return err
		}
		if _, err := w.load.ExecContext(ctx, `INSERT INTO quality_checks SELECT * FROM `+keptChecksTable); err != nil {
			return err
		}
		_, err := w.load.ExecContext(ctx, `DROP TABLE `+keptChecksTable)
		return err
	})
	if err != nil {
		return n, fmt.Errorf("put back the quality checks of %s: %w", month, err)
	}
	if w.opts.ParquetDir == "" {
		return n, nil
	}
	return n, w.ExportRunHealth(ctx, month)
}

// keptChecksTable holds a restored month's quality_checks while its tables are rebuilt.
const keptChecksTable = "restore_kept_quality_checks"

// TableChecksumSQL is a query returning one string for table: its row count and an
// order-free checksum of its rows (the sum of each whole row's hash), so two warehouses, or a
// warehouse and what was restored from its bucket, can be compared table by table.
func TableChecksumSQL(table string) string {
	// table comes from RestorableTables, never from input.
	return fmt.Sprintf(`SELECT count(*)::VARCHAR || ' rows, checksum ' || coalesce(sum(hash(t))::VARCHAR, '0') FROM %s t`, table)
}
