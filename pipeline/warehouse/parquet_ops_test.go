package warehouse

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sitewatch/pipeline/model"
	"sitewatch/schema"
	"sitewatch/schema/flatten"
)

// TestBIViewsFileIsCurrent keeps sql/bi/parquet_views.sql generated from the table lists and
// sql/views/*.sql (-update rewrites it).
func TestBIViewsFileIsCurrent(t *testing.T) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if err := Migrate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	want, err := RenderBIViewsFile(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "..", "sql", filepath.FromSlash(BIViewsFile))
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The file on disk, not the embedded copy: the embedded one is this binary's, from before
	// -update.
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("%s is stale: a table or view changed; run `go test ./pipeline/warehouse -run TestBIViewsFileIsCurrent -update` and commit it", path)
	}
}

// loadTwoRunMonths stores the golden fixtures as two complete months with runs, a fetch error
// and quality findings, and changes 2026-02 so the changes views have rows.
func loadTwoRunMonths(t *testing.T, w *Warehouse) {
	t.Helper()
	ctx := context.Background()
	for i, m := range []string{"2026-01", "2026-02"} {
		start := time.Date(2026, time.Month(i+1), 2, 6, 0, 0, 0, time.UTC)
		run := model.RunRecord{RunID: "run-" + m, SnapshotMonth: m, StartedAt: start, Status: "running", DomainsTotal: 4}
		if err := w.StartRun(ctx, run); err != nil {
			t.Fatal(err)
		}
		storeFixtures(t, w, m)
		if err := w.RecordFetchError(ctx, model.FetchError{RunID: run.RunID, SnapshotMonth: m, Domain: "bad.example",
			Endpoint: schema.EndpointOverview, HTTPStatus: 400, Code: "INVALID_DOMAIN", Message: "invalid domain", OccurredAt: start}); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		end := start.Add(time.Minute)
		run.FinishedAt, run.Status, run.DomainsLoaded = &end, "complete", 4
		if err := w.FinishRun(ctx, run); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []string{
		`UPDATE sites SET total_visits = total_visits * 3, global_rank = global_rank + 7 WHERE snapshot_month = '2026-02'`,
		`INSERT INTO similar_sites (snapshot_month, domain, position, similar_domain, global_rank) VALUES ('2026-02', 'example.com', 9, 'newcomer.example', 42)`,
		`INSERT INTO keywords VALUES ('2026-02', 'example.com', 9, 'brand new keyword', 10, NULL, 1.5)`,
		`INSERT INTO geography_share VALUES ('2026-02', 'example.com', 'ZZ', 0.99)`,
		`INSERT INTO ai_platforms VALUES ('2026-02', 'example.com', 'newai.example', 9, 1.0)`,
		// example.com and missing.example list each other and share a keyword: keyword_overlap.
		`INSERT INTO similar_sites (snapshot_month, domain, position, similar_domain) VALUES
			('2026-02', 'example.com', 10, 'missing.example'), ('2026-02', 'missing.example', 1, 'www.example.com')`,
		`INSERT INTO keywords VALUES ('2026-02', 'missing.example', 1, 'Brand New Keyword', 10, NULL, 0.5)`,
	} {
		if _, err := w.DB().Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for _, m := range []string{"2026-01", "2026-02"} {
		if _, err := w.RunQualityChecks(ctx, m); err != nil {
			t.Fatal(err)
		}
		if err := w.ExportParquet(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
}

// TestBIViewsOverParquet exports a two-month warehouse, runs sql/bi/parquet_views.sql in a
// separate DuckDB over the tree, and compares every table and view it defines, row by row,
// with the warehouse.
func TestBIViewsOverParquet(t *testing.T) {
	dir := t.TempDir()
	w := testWarehouse(t, dir)
	loadTwoRunMonths(t, w)
	for _, table := range model.RunHealthTables {
		if _, err := os.Stat(filepath.Join(dir, "parquet", table, "snapshot_month=2026-02", parquetFile)); err != nil {
			t.Errorf("run-health table %s not exported: %v", table, err)
		}
	}

	biSQL, err := BIViews(filepath.Join(dir, "parquet"))
	if err != nil {
		t.Fatal(err)
	}
	bi, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer bi.Close()
	bi.SetMaxOpenConns(1)
	if _, err := bi.Exec(biSQL); err != nil {
		t.Fatalf("run %s over the exported tree: %v", BIViewsFile, err)
	}

	var biViews []string
	for _, r := range queryRows(t, bi, `SELECT view_name FROM duckdb_views() WHERE NOT internal ORDER BY 1`) {
		biViews = append(biViews, strings.Trim(r, `"`))
	}
	var whObjects []string
	for _, r := range queryRows(t, w.DB(), `SELECT view_name FROM duckdb_views() WHERE NOT internal
		UNION ALL SELECT table_name FROM duckdb_tables() WHERE NOT internal ORDER BY 1`) {
		whObjects = append(whObjects, strings.Trim(r, `"`))
	}
	wantInBI := map[string]bool{flatten.TableCountries: true}
	for _, tb := range flatten.SnapshotTables {
		wantInBI[tb.Name] = true
	}
	for _, tb := range model.RunHealthTables {
		wantInBI[tb] = true
	}
	for _, o := range whObjects {
		isView := count(t, w.DB(), `SELECT count(*) FROM duckdb_views() WHERE view_name = ? AND NOT internal`, o) > 0
		if (isView || wantInBI[o]) && !contains(biViews, o) {
			t.Errorf("%s defines no view %s", BIViewsFile, o)
		}
	}
	for _, v := range biViews {
		t.Run(v, func(t *testing.T) {
			q := `SELECT * FROM ` + v + ` ORDER BY ALL`
			got, want := queryRows(t, bi, q), queryRows(t, w.DB(), q)
			if len(want) == 0 {
				t.Errorf("%s is empty in the warehouse: the fixture does not exercise it", v)
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("%s over Parquet differs from the warehouse:\ngot:\n%s\nwant:\n%s", v, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestExportRunHealthAfterFinish: the runs partition written by ExportParquet shows a run
// still running; ExportRunHealth after FinishRun replaces it with the final status.
func TestExportRunHealthAfterFinish(t *testing.T) {
	dir := t.TempDir()
	w := testWarehouse(t, dir)
	ctx := context.Background()
	start := time.Date(2026, 3, 2, 6, 0, 0, 0, time.UTC)
	run := model.RunRecord{RunID: "r1", SnapshotMonth: "2026-03", StartedAt: start, Status: "running", DomainsTotal: 4}
	if err := w.StartRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	storeFixtures(t, w, "2026-03")
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.ExportParquet(ctx, "2026-03"); err != nil {
		t.Fatal(err)
	}
	runsFile := filepath.Join(dir, "parquet", "runs", "snapshot_month=2026-03", parquetFile)
	statusIn := func() string {
		t.Helper()
		rows := queryRows(t, w.DB(), `SELECT status FROM read_parquet(?)`, runsFile)
		return strings.Join(rows, ",")
	}
	if got := statusIn(); got != `"running"` {
		t.Fatalf("runs partition after ExportParquet = %s, want the running run", got)
	}
	end := start.Add(time.Minute)
	run.FinishedAt, run.Status, run.DomainsLoaded = &end, "complete", 4
	if err := w.FinishRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	if err := w.ExportRunHealth(ctx, "2026-03"); err != nil {
		t.Fatal(err)
	}
	if got := statusIn(); got != `"complete"` {
		t.Errorf("runs partition after ExportRunHealth = %s, want complete", got)
	}
	if err := w.ExportRunHealth(ctx, "2026-3"); err == nil || !strings.Contains(err.Error(), "YYYY-MM") {
		t.Errorf("bad month: err = %v", err)
	}
	entries, _ := os.ReadDir(filepath.Dir(runsFile))
	if len(entries) != 1 {
		t.Errorf("runs partition holds %d entries, want the one file (no staging leftovers)", len(entries))
	}
}

// TestExportKeepsUnchangedRawAnswers: the raw answers' partition is written once and left as
// it is by exports (a rebuild's, an up-to-date run's) while the answers stay the same; a
// changed body, a removed answer, or a file that lost its fingerprint (truncated, or written
// before it had one) is written again, with the rows the table holds.
func TestExportKeepsUnchangedRawAnswers(t *testing.T) {
	w := testWarehouse(t, "")
	ctx := context.Background()
	if _, err := storeGenerated(ctx, w, snap, 5, ""); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(w.opts.ParquetDir, model.TableRawResponses, "snapshot_month="+snap, parquetFile)
	export := func() os.FileInfo {
		t.Helper()
		if err := w.ExportParquet(ctx, snap); err != nil {
			t.Fatal(err)
		}
		info, err := os.Stat(file)
		if err != nil {
			t.Fatal(err)
		}
		return info
	}
	// sameRows fails unless the file holds exactly the table's rows of the month.
	sameRows := func() {
		t.Helper()
		var differ int
		err := w.DB().QueryRowContext(ctx, `SELECT count(*) FROM (
			(SELECT * EXCLUDE (snapshot_month) FROM raw_responses WHERE snapshot_month = ? EXCEPT ALL SELECT * FROM read_parquet(?, hive_partitioning = false))
			UNION ALL
			(SELECT * FROM read_parquet(?, hive_partitioning = false) EXCEPT ALL SELECT * EXCLUDE (snapshot_month) FROM raw_responses WHERE snapshot_month = ?))`,
			snap, file, file, snap).Scan(&differ)
		if err != nil {
			t.Fatal(err)
		}
		if differ != 0 {
			t.Errorf("%d rows differ between %s and raw_responses", differ, file)
		}
	}
	first := export()
	sameRows()
	if again := export(); !os.SameFile(first, again) {
		t.Error("an export of unchanged answers rewrote the raw answers' file")
	}

	changes := []struct {
		name   string
		change func() error
	}{
		{"ChangedBody", func() error {
			_, err := w.DB().ExecContext(ctx, `UPDATE raw_responses SET body = body || '\x00'::BLOB
				WHERE domain = (SELECT min(domain) FROM raw_responses WHERE snapshot_month = ?) AND endpoint = 'site-similar'`, snap)
			return err
		}},
		{"RemovedAnswer", func() error {
			_, err := w.DB().ExecContext(ctx, `DELETE FROM raw_responses
				WHERE domain = (SELECT max(domain) FROM raw_responses WHERE snapshot_month = ?) AND endpoint = 'site-overview'`, snap)
			return err
		}},
		{"TruncatedFile", func() error { return os.Truncate(file, 100) }},
		{"FileWithoutFingerprint", func() error {
			return w.copyParquet(ctx, `SELECT * EXCLUDE (snapshot_month) FROM raw_responses WHERE snapshot_month = '`+snap+`'`, filepath.Dir(file))
		}},
	}
	for _, c := range changes {
		t.Run(c.name, func(t *testing.T) {
			if err := c.change(); err != nil {
				t.Fatal(err)
			}
			before, err := os.Stat(file)
			if err != nil {
				t.Fatal(err)
			}
			if after := export(); os.SameFile(before, after) {
				t.Error("the raw answers' file was not written again")
			}
			sameRows()
		})
	}
}
