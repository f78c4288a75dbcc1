package report

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sqlfiles "sitewatch/sql"
)

// readyQueries returns the statements of docs/queries.sql (the README's analyst queries).
func readyQueries(t *testing.T) []string {
	t.Helper()
	text, err := os.ReadFile("../../docs/queries.sql")
	if err != nil {
		t.Fatal(err)
	}
	var qs []string
	for _, stmt := range strings.Split(string(text), ";") {
		var lines []string
		for _, l := range strings.Split(stmt, "\n") {
			if !strings.HasPrefix(strings.TrimSpace(l), "--") {
				lines = append(lines, l)
			}
		}
		if q := strings.TrimSpace(strings.Join(lines, "\n")); q != "" {
			qs = append(qs, q)
		}
	}
	return qs
}

func TestReadyQueries(t *testing.T) {
	db := openWarehouse(t)
	loadFixture(t, db)
	qs := readyQueries(t)
	if len(qs) != 5 {
		t.Fatalf("docs/queries.sql has %d queries, want 5", len(qs))
	}
	for i, q := range qs {
		t.Run(fmt.Sprint(i+1), func(t *testing.T) {
			if rows := query(t, db, q); len(rows) == 0 {
				t.Errorf("query %d returned no rows on the fixture:\n%s", i+1, q)
			}
		})
	}
}

// TestViewsOverParquet follows the README's BI recipe: a scratch DuckDB that maps each table to
// the Parquet tree (hive partitioning) and runs sql/views/*.sql gets the same view results as
// the warehouse.
func TestViewsOverParquet(t *testing.T) {
	db := openWarehouse(t)
	loadFixture(t, db)
	pq := filepath.Join(t.TempDir(), "parquet")
	if err := os.MkdirAll(pq, 0o755); err != nil {
		t.Fatal(err)
	}
	// The tables the views read (ai_prompts and site_tags are empty in the fixture, and an
	// empty table has no Parquet file to glob).
	tables := []string{"sites", "traffic_history", "sources_share", "geography_share", "keywords",
		"ai_platforms", "ai_platform_history", "similar_sites"}
	for _, tb := range tables {
		// The Parquet layout of README.md ("The warehouse"): <parquet>/<table>/snapshot_month=YYYY-MM/*.parquet.
		insert(t, db, fmt.Sprintf(`COPY %s TO '%s' (FORMAT PARQUET, PARTITION_BY (snapshot_month))`, tb, filepath.Join(pq, tb)), nil)
	}
	if err := os.MkdirAll(filepath.Join(pq, "countries"), 0o755); err != nil {
		t.Fatal(err)
	}
	insert(t, db, fmt.Sprintf(`COPY countries TO '%s' (FORMAT PARQUET)`, filepath.Join(pq, "countries", "countries.parquet")), nil)

	bi := openScratch(t)
	for _, tb := range tables {
		insert(t, bi, fmt.Sprintf(`CREATE VIEW %s AS SELECT * FROM read_parquet('%s/%s/*/*.parquet', hive_partitioning = true, hive_types = {'snapshot_month': VARCHAR})`, tb, pq, tb), nil)
	}
	insert(t, bi, fmt.Sprintf(`CREATE VIEW countries AS SELECT * FROM read_parquet('%s/countries/*.parquet')`, pq), nil)
	// runs (empty here) feeds complete_months; one unpartitioned file stands in for it.
	insert(t, db, fmt.Sprintf(`COPY runs TO '%s' (FORMAT PARQUET)`, filepath.Join(pq, "runs.parquet")), nil)
	insert(t, bi, fmt.Sprintf(`CREATE VIEW runs AS SELECT * FROM read_parquet('%s/runs.parquet')`, pq), nil)
	// fetch_errors and quality_checks feed needs_attention: one unpartitioned file each, as runs.
	for _, tb := range []string{"fetch_errors", "quality_checks"} {
		insert(t, db, fmt.Sprintf(`COPY %s TO '%s' (FORMAT PARQUET)`, tb, filepath.Join(pq, tb+".parquet")), nil)
		insert(t, bi, fmt.Sprintf(`CREATE VIEW %s AS SELECT * FROM read_parquet('%s/%s.parquet')`, tb, pq, tb), nil)
	}
	names, err := sqlfilesViews()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		text, err := sqlfiles.FS.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := bi.Exec(string(text)); err != nil {
			t.Fatalf("%s over Parquet: %v", n, err)
		}
	}
	for _, q := range append(readyQueries(t), `SELECT * FROM traffic_monthly ORDER BY domain, month`,
		`SELECT * FROM competitors ORDER BY snapshot_month, domain, competitor_position`,
		`SELECT * FROM keyword_overlap ORDER BY snapshot_month, domain, keyword`) {
		if got, want := query(t, bi, q), query(t, db, q); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("over Parquet:\n%s\ngot:\n%s\nwant:\n%s", q, table(got), table(want))
		}
	}
}
