package warehouse

import (
	"context"
	"database/sql"
	_ "github.com/marcboeker/go-duckdb"
	"testing"
)

func TestMigrate(t *testing.T) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := Migrate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	if err := Migrate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	var n int
	db.QueryRow("select count(*) from schema_migrations").Scan(&n)
	if n != 1 {
		t.Fatal(n)
	}
}
