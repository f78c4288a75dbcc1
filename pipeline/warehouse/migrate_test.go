package warehouse

import (
	"context"
	"database/sql"
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
