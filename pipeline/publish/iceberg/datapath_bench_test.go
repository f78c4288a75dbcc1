package iceberg

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"sitewatch/pipeline/publish/publishtest"
)

// BenchmarkDataPaths replaces one 10,000-domain month (SITEWATCH_BENCH_DOMAINS) of every
// table two ways, in the same run, against the same catalog and gateway:
//
//   - arrow: the publisher's path: the local files read with arrow-go, rewritten by
//     iceberg-go with the table's field IDs, overwrite by filter;
//   - duckdb_field_ids: DuckDB writes each month's file with COPY … (FIELD_IDS {…}) set to the
//     table's IDs, the file is uploaded as is and registered with ReplaceDataFiles (iceberg-go
//     reads its footer for the statistics).
//
// It reports the seconds of each (commits included, orphan cleanup excluded) and their ratio.
func BenchmarkDataPaths(b *testing.B) {
	n := 10000
	if v, err := strconv.Atoi(os.Getenv("SITEWATCH_BENCH_DOMAINS")); err == nil && v > 0 {
		n = v
	}
	root, _ := publishtest.SyntheticTree(b, n, monthB)
	e := newEnvTB(b)
	ctx := context.Background()
	lake, err := New(ctx, e.config(12), Options{Getenv: e.getenv})
	if err != nil {
		b.Fatal(err)
	}
	defer lake.Close()
	if _, err := lake.Month(ctx, root, monthB); err != nil { // creates the tables
		b.Fatal(err)
	}
	srcs, err := monthSources(root, monthB)
	if err != nil {
		b.Fatal(err)
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	b.ResetTimer()
	for i := range b.N {
		var arrowDur, duckDur time.Duration
		for _, src := range srcs {
			d, err := replaceArrow(ctx, lake, src, fmt.Sprint("bench-arrow-", i))
			if err != nil {
				b.Fatalf("%s: arrow path: %v", src.table, err)
			}
			arrowDur += d
			d, err = replaceDuckDB(ctx, lake, db, src, b.TempDir())
			if err != nil {
				b.Fatalf("%s: duckdb path: %v", src.table, err)
			}
			duckDur += d
		}
		b.ReportMetric(arrowDur.Seconds(), "arrow_s")
		b.ReportMetric(duckDur.Seconds(), "duckdb_field_ids_s")
		b.ReportMetric(duckDur.Seconds()/arrowDur.Seconds(), "ratio_duckdb/arrow")
	}
}

func replaceArrow(ctx context.Context, p *Publisher, src source, hash string) (time.Duration, error) {
	start := time.Now()
	tbl, err := p.Load(ctx, src.table)
	if err != nil {
		return 0, err
	}
	rdr, _, err := src.read(ctx, memory.DefaultAllocator)
	if err != nil {
		return 0, err
	}
	defer rdr.Release()
	_, err = p.commit(ctx, tbl, src, rdr, hashProp+cmpOr(src.month, wholeKey), hash)
	return time.Since(start), err
}

// replaceDuckDB writes src as one Parquet file with the table's field IDs (DuckDB), uploads it
// and replaces the table's current files of the month with it.
func replaceDuckDB(ctx context.Context, p *Publisher, db *sql.DB, src source, tmp string) (time.Duration, error) {
	start := time.Now()
	tbl, err := p.Load(ctx, src.table)
	if err != nil {
		return 0, err
	}
	var ids, cols []string
	for _, f := range tbl.Schema().Fields() {
		ids = append(ids, fmt.Sprintf("%q: %d", f.Name, f.ID))
		cols = append(cols, fmt.Sprintf("%q", f.Name))
	}
	sel := "*"
	if src.month != "" {
		sel = fmt.Sprintf("'%s' AS snapshot_month, *", src.month)
	}
	local := filepath.Join(tmp, src.table+".parquet")
	q := fmt.Sprintf(`COPY (SELECT %s FROM (SELECT %s FROM read_parquet(['%s'], hive_partitioning = false))) TO '%s' (FORMAT PARQUET, COMPRESSION zstd, FIELD_IDS {%s})`,
		strings.Join(cols, ", "), sel, strings.Join(src.files, "','"), local, strings.Join(ids, ", "))
	if _, err := db.ExecContext(ctx, q); err != nil {
		return 0, fmt.Errorf("duckdb copy: %w", err)
	}
	data, err := os.ReadFile(local)
	if err != nil {
		return 0, err
	}
	remote := fmt.Sprintf("%s/data/%s=%s/duckdb-%d.parquet", tbl.Location(), monthColumn, src.month, time.Now().UnixNano())
	fs, err := tbl.FS(ctx)
	if err != nil {
		return 0, err
	}
	if err := fs.(iceio.WriteFileIO).WriteFile(remote, data); err != nil {
		return 0, fmt.Errorf("upload: %w", err)
	}
	old, err := currentFiles(ctx, tbl)
	if err != nil {
		return 0, err
	}
	txn := tbl.NewTransaction()
	if err := txn.ReplaceDataFiles(ctx, old, []string{remote}, nil); err != nil {
		return 0, fmt.Errorf("replace data files: %w", err)
	}
	if _, err := txn.Commit(ctx); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

func currentFiles(ctx context.Context, tbl *table.Table) ([]string, error) {
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return nil, nil
	}
	manifests, err := snap.Manifests(fs)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range manifests {
		for en, err := range m.Entries(fs, true) {
			if err != nil {
				return nil, err
			}
			out = append(out, en.DataFile().FilePath())
		}
	}
	return out, nil
}
