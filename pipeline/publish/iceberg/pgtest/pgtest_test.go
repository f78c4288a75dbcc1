package pgtest_test

import (
	"context"
	"database/sql"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"

	"sitewatch/pipeline/publish/iceberg/pgtest"
)

func TestStartAcceptsThePasswordOnly(t *testing.T) {
	s := pgtest.Start(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name, password string
		ok             bool
	}{{"OK", s.Password, true}, {"WrongPassword", "wrong", false}} {
		t.Run(tc.name, func(t *testing.T) {
			db, err := sql.Open("pgx", s.URL+"?password="+tc.password+"&sslmode=disable")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var one int
			err = db.QueryRowContext(ctx, "SELECT 1").Scan(&one)
			if got := err == nil; got != tc.ok {
				t.Fatalf("connect with %s: err %v, want ok=%v", tc.name, err, tc.ok)
			}
		})
	}
}
