package publish_test

import (
	"bytes"
	"context"
	"database/sql"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sitewatch/pipeline/model"
	"sitewatch/pipeline/publish"
	"sitewatch/pipeline/warehouse"
	"sitewatch/schema/flatten"
)

var update = flag.Bool("update", false, "rewrite docs/ddl from the schema")

// TestDDL checks that docs/ddl/{trino,athena}.sql match the Arrow schemas; -update rewrites them.
func TestDDL(t *testing.T) {
	for _, engine := range []string{publish.EngineTrino, publish.EngineAthena} {
		t.Run(engine, func(t *testing.T) {
			var b bytes.Buffer
			if err := publish.WriteDDL(&b, engine, publish.DDLLocation); err != nil {
				t.Fatal(err)
			}
			ddl := b.String()
			for _, tab := range publish.PublishedTables() {
				if !strings.Contains(ddl, "sitewatch."+tab.Name+" (") || !strings.Contains(ddl, publish.DDLLocation+"/"+tab.Name) {
					t.Errorf("%s DDL lacks table %s at its location", engine, tab.Name)
				}
			}
			if !strings.Contains(ddl, "sitewatch.complete_months AS") {
				t.Errorf("%s DDL lacks the complete_months view", engine)
			}
			path := filepath.Join("..", "..", "docs", "ddl", engine+".sql")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run `go test ./pipeline/publish -run TestDDL -update`)", err)
			}
			if string(got) != ddl {
				t.Errorf("%s is stale: run `go test ./pipeline/publish -run TestDDL -update`", path)
			}
		})
	}
	if err := publish.WriteDDL(&bytes.Buffer{}, "hive2", publish.DDLLocation); err == nil {
		t.Error("an unknown engine gave no error")
	}
}

// TestDDLCoversEveryPublishedTable: the DDL declares exactly the tables a publish writes (the
// snapshot tables, the run-health tables the export mirrors, countries), each with the columns
// and types of the warehouse table it mirrors.
func TestDDLCoversEveryPublishedTable(t *testing.T) {
	var want []string
	for _, tab := range flatten.SnapshotTables {
		want = append(want, tab.Name)
	}
	want = append(append(want, model.RunHealthTables...), flatten.CountriesTable.Name)
	var got []string
	for _, tab := range publish.PublishedTables() {
		got = append(got, tab.Name)
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("DDL tables %v, published tables %v", got, want)
	}
	db := emptyWarehouse(t)
	duckType := map[string]string{"utf8": "VARCHAR", "timestamp[us]": "TIMESTAMP", "int64": "BIGINT", "int32": "INTEGER", "float64": "DOUBLE"}
	for _, tab := range publish.RunHealthTables {
		var wantCols []string
		for _, f := range tab.Schema.Fields() {
			wantCols = append(wantCols, f.Name+" "+duckType[f.Type.String()])
		}
		gotCols := queryStrings(t, db, `SELECT column_name || ' ' || data_type FROM duckdb_columns() WHERE table_name = ? ORDER BY column_index`, tab.Name)
		if !slices.Equal(gotCols, wantCols) {
			t.Errorf("%s: warehouse columns %v, DDL columns %v", tab.Name, gotCols, wantCols)
		}
	}
}

// TestCompleteMonthsViewAgrees runs the complete_months view of each generated DDL file in
// DuckDB, over runs and sites rows covering every branch of the rule, and compares it row by row
// with the warehouse's own view: Trino and Athena users get the months DuckDB users get.
func TestCompleteMonthsViewAgrees(t *testing.T) {
	db := emptyWarehouse(t)
	for _, stmt := range []string{
		`INSERT INTO runs (run_id, snapshot_month, started_at, finished_at, status, domains_total, domains_loaded, domains_rejected) VALUES
			('r1', '2026-07', '2026-07-02 06:00', '2026-07-02 06:01', 'complete', 3, 3, 0),
			('r2', '2026-08', '2026-08-02 06:00', '2026-08-02 06:01', 'stopped_credits', 3, 1, 0),
			('r3', '2026-09', '2026-09-02 06:00', '2026-09-02 06:01', 'failed', 3, 2, 1),
			('r4', '2026-10', '2026-10-02 06:00', '2026-10-02 06:01', 'complete', 3, 3, 0),
			('r5', '2026-10', '2026-10-03 06:00', '2026-10-03 06:00', 'month_mismatch', 3, 0, 0),
			('r6', '2026-11', '2026-11-02 06:00', '2026-11-02 06:01', 'complete', 3, 3, 0),
			('r7', '2026-11', '2026-11-03 06:00', '2026-11-03 06:01', 'failed', 3, 2, 0),
			('r8', '2026-12', '2026-12-02 06:00', '2026-12-02 06:01', 'up_to_date', 3, 3, 0),
			('r9', '2026-12', '2026-12-03 06:00', NULL, 'running', 3, 0, 0)`,
		`INSERT INTO sites (snapshot_month, domain) VALUES ('2026-07', 'a.com'), ('2026-07', 'b.com'), ('2026-10', 'a.com')`,
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	const cols = `snapshot_month, previous_month, run_id, status, finished_at, domains_total, domains_loaded, domains_rejected, domains_in_warehouse`
	want := queryStrings(t, db, `SELECT concat_ws(' | ', `+cols+`) FROM complete_months ORDER BY snapshot_month`)
	if len(want) != 4 { // 2026-07, 2026-09 (counts), 2026-10 (mismatch ignored), 2026-12
		t.Fatalf("the warehouse's complete_months has %d rows, want 4: %v", len(want), want)
	}
	for engine, qual := range map[string]string{publish.EngineTrino: "hive.sitewatch.", publish.EngineAthena: "sitewatch."} {
		t.Run(engine, func(t *testing.T) {
			view := extractView(t, engine, qual)
			if _, err := db.Exec(view); err != nil {
				t.Fatalf("the %s view does not run in DuckDB: %v\n%s", engine, err, view)
			}
			got := queryStrings(t, db, `SELECT concat_ws(' | ', `+cols+`) FROM ddl_complete_months ORDER BY snapshot_month`)
			if !slices.Equal(got, want) {
				t.Errorf("%s complete_months\n%s\nwarehouse complete_months\n%s", engine, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// extractView returns the complete_months statement of docs/ddl/<engine>.sql, renamed to
// ddl_complete_months and with the engine's qualifier removed so DuckDB resolves the tables.
func extractView(t *testing.T, engine, qual string) string {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("..", "..", "docs", "ddl", engine+".sql"))
	if err != nil {
		t.Fatal(err)
	}
	_, view, ok := strings.Cut(string(text), "CREATE OR REPLACE VIEW "+qual+"complete_months AS")
	if !ok {
		t.Fatalf("%s.sql has no complete_months view", engine)
	}
	view, _, _ = strings.Cut(view, ";")
	return "CREATE OR REPLACE VIEW ddl_complete_months AS" + strings.ReplaceAll(view, qual, "")
}

// emptyWarehouse opens a new, migrated warehouse in a temporary directory.
func emptyWarehouse(t *testing.T) *sql.DB {
	t.Helper()
	w, err := warehouse.Open(context.Background(), warehouse.Options{DuckDBPath: filepath.Join(t.TempDir(), "w.duckdb")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w.DB()
}

func queryStrings(t *testing.T, db *sql.DB, q string, args ...any) []string {
	t.Helper()
	rows, err := db.Query(q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s sql.NullString
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s.String)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
