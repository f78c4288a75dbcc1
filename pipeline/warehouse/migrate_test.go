package warehouse

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/marcboeker/go-duckdb"

	sqlfiles "sitewatch/sql"
)

func TestMigrateTwice(t *testing.T) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i := range 2 {
		if err := Migrate(context.Background(), db); err != nil {
			t.Fatalf("Migrate #%d: %v", i+1, err)
		}
	}
	names, err := fs.Glob(sqlfiles.FS, "migrations/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	var got, views int
	if err := db.QueryRow(`SELECT count(*) FILTER (WHERE name NOT LIKE 'views/%'), count(*) FILTER (WHERE name LIKE 'views/%') FROM schema_migrations`).Scan(&got, &views); err != nil {
		t.Fatal(err)
	}
	if got != len(names) || views != 1 {
		t.Errorf("schema_migrations has %d migration rows and %d views stamps, want %d (one per migration) and 1", got, views, len(names))
	}
}

// TestViewsCreatedOnlyWhenChanged: an open whose view definitions are those already created
// writes no DDL (it would cost hundreds of KB of log at every open); a dropped view is created
// again at the next open.
func TestViewsCreatedOnlyWhenChanged(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open("duckdb", filepath.Join(t.TempDir(), "v.duckdb"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if changed, err := migrate(ctx, db); err != nil || !changed {
		t.Fatalf("the first migration of a new file says changed %v (%v), want true: the stored lists' refresh follows it", changed, err)
	}
	var stamped string
	if err := db.QueryRow(`SELECT CAST(max(applied_at) AS VARCHAR) FROM schema_migrations WHERE name LIKE 'views/%'`).Scan(&stamped); err != nil {
		t.Fatal(err)
	}
	if changed, err := migrate(ctx, db); err != nil || changed {
		t.Fatalf("an open with nothing to migrate says changed %v (%v), want false", changed, err)
	}
	var again string
	if err := db.QueryRow(`SELECT CAST(max(applied_at) AS VARCHAR) FROM schema_migrations WHERE name LIKE 'views/%'`).Scan(&again); err != nil {
		t.Fatal(err)
	}
	if again != stamped {
		t.Errorf("an open with unchanged views created them again (stamp %s, then %s)", stamped, again)
	}
	if _, err := db.Exec(`DROP VIEW traffic_monthly CASCADE`); err != nil {
		t.Fatal(err)
	}
	if changed, err := migrate(ctx, db); err != nil || !changed {
		t.Fatalf("an open that created the views again says changed %v (%v), want true", changed, err)
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM duckdb_views() WHERE view_name = 'traffic_monthly'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("a dropped view was not created again at the next open")
	}
}

// TestMigrationRecordsDataMonths: a warehouse from before snapshots were data months keeps
// its rows, and migration 0006 records which data month each label's rows are for, so a copy
// stored under the wrong label is visible.
func TestMigrationRecordsDataMonths(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	migrateBefore(t, db, "migrations/0006")
	// The old behaviour: a run on 2026-11-02 stored the API's October data as 2026-11.
	for _, row := range [][]any{{"2026-10", "a.com", "2026-10"}, {"2026-11", "a.com", "2026-10"}, {"2026-11", "b.com", "2026-10"}} {
		if _, err := db.Exec(`INSERT INTO sites (snapshot_month, domain, traffic_period) VALUES (?, ?, ?)`, row...); err != nil {
			t.Fatal(err)
		}
	}
	if err := Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	var got []string
	rows, err := db.Query(`SELECT snapshot_month || '>' || data_month || ':' || domains FROM snapshot_data_months ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		got = append(got, s)
	}
	if want := "[2026-10>2026-10:1 2026-11>2026-10:2]"; fmt.Sprint(got) != want {
		t.Errorf("snapshot_data_months = %v, want %s", got, want)
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM sites`).Scan(&n); err != nil || n != 3 {
		t.Errorf("sites rows after the migration = %d (%v), want 3 kept", n, err)
	}
}

// migrateBefore applies the migrations sorting before first, as an older version did.
func migrateBefore(t *testing.T, db *sql.DB, first string) {
	t.Helper()
	if _, err := db.Exec(`CREATE TABLE schema_migrations (name VARCHAR NOT NULL, applied_at TIMESTAMP NOT NULL DEFAULT current_timestamp)`); err != nil {
		t.Fatal(err)
	}
	names, err := fs.Glob(sqlfiles.FS, "migrations/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if name >= first {
			break
		}
		if err := applyMigration(context.Background(), db, name); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMigrationStoresBodiesUncompressed: migration 0007 keeps every stored body, its comments
// and constraints, and from then on DuckDB stores raw_responses.body uncompressed — it no
// longer analyses the (already zstd-compressed) bodies at each checkpoint. The bodies here are
// highly compressible, so DuckDB would pick dictionary or FSST compression without it.
func TestMigrationStoresBodiesUncompressed(t *testing.T) {
	db, err := sql.Open("duckdb", filepath.Join(t.TempDir(), "w.duckdb"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	migrateBefore(t, db, "migrations/0007")
	insertBodies := func(from, to int) {
		t.Helper()
		if _, err := db.Exec(`INSERT INTO raw_responses SELECT '2026-10', 'd' || i || '.com', 'site-overview',
			TIMESTAMP '2026-11-02 06:00:00', repeat('{"a":1}', 30)::BLOB, 'identity', 'run-' || (i % 3)
			FROM range(?, ?) t(i)`, from, to); err != nil {
			t.Fatal(err)
		}
	}
	insertBodies(0, 1000)
	const digest = `SELECT count(*) || ':' || sum(hash(snapshot_month, domain, endpoint, fetched_at, body, body_encoding, run_id)) FROM raw_responses`
	before := queryRows(t, db, digest)[0]
	if err := Migrate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	if after := queryRows(t, db, digest)[0]; after != before {
		t.Errorf("raw_responses after migration 0007 = %s, want %s (every body kept)", after, before)
	}
	if c := queryRows(t, db, `SELECT comment FROM duckdb_columns() WHERE table_name = 'raw_responses' AND column_name = 'run_id'`)[0]; !strings.HasPrefix(c, `"Run that fetched`) {
		t.Errorf("raw_responses.run_id comment = %q, want it kept", c)
	}
	if _, err := db.Exec(`INSERT INTO raw_responses (snapshot_month, domain, endpoint, fetched_at, body_encoding) VALUES ('2026-10', 'x.com', 'site-overview', now()::TIMESTAMP, 'zstd')`); err == nil {
		t.Error("a NULL body was accepted: the NOT NULL constraint was lost")
	}
	insertBodies(1000, 200000)
	if _, err := db.Exec(`CHECKPOINT`); err != nil {
		t.Fatal(err)
	}
	got := queryRows(t, db, `SELECT string_agg(DISTINCT compression, ',') FROM pragma_storage_info('raw_responses')
		WHERE column_name = 'body' AND segment_type <> 'VALIDITY'`)[0]
	if got != `"Uncompressed"` {
		t.Errorf("raw_responses.body segments are stored as %q, want Uncompressed", got)
	}
}
