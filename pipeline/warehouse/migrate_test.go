package warehouse

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
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
	var got int
	if err := db.QueryRow(`SELECT count(*) FROM schema_migrations`).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != len(names) {
		t.Errorf("schema_migrations has %d rows, want %d (one per migration)", got, len(names))
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
	if _, err := db.Exec(`CREATE TABLE schema_migrations (name VARCHAR NOT NULL, applied_at TIMESTAMP NOT NULL DEFAULT current_timestamp)`); err != nil {
		t.Fatal(err)
	}
	names, err := fs.Glob(sqlfiles.FS, "migrations/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if name >= "migrations/0006" {
			break
		}
		if err := applyMigration(ctx, db, name); err != nil {
			t.Fatal(err)
		}
	}
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
