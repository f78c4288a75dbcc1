package main

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"sitewatch/pipeline/warehouse"
)

// domainsPerCommit is about how many domains a run at an unlimited rate commits at once (a
// 10,000-domain run makes ~60 commits); the engine floor replays its rows in as many commits.
const domainsPerCommit = 170

// floorCommits is how many commits engineFloor splits n domains' rows into.
func floorCommits(n int) int { return n/domainsPerCommit + 1 }

// engineFloor measures what DuckDB alone needs to hold the rows that the run of n domains
// stored in src: a child process (TestEngineFloorChild) copies every table of src into a new
// warehouse in n/domainsPerCommit transactions, one INSERT … SELECT per table each, under the
// run's memory limit, and reports its peak RSS in MB. No Go pipeline, decoder, Arrow or HTTP
// is involved, so the run's peak minus this is what sitewatch adds to the engine.
func engineFloor(b *testing.B, src string, n int) float64 {
	b.Helper()
	commits := floorCommits(n)
	cmd := exec.Command(os.Args[0], "-test.run=^TestEngineFloorChild$", "-test.v")
	cmd.Env = append(os.Environ(), "SITEWATCH_FLOOR_SOURCE="+src, "SITEWATCH_FLOOR_COMMITS="+strconv.Itoa(commits))
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("engine floor of %d domains: %v\n%s", n, err, tail(string(out), 3000))
	}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "floor" && f[1] == "maxrss_kib" {
			kib, err := strconv.ParseFloat(f[2], 64)
			if err == nil && kib > 0 {
				return kib / 1024
			}
		}
	}
	b.Fatalf("engine floor of %d domains printed no figure:\n%s", n, tail(string(out), 3000))
	return 0
}

// TestEngineFloorChild is not a test: it is the child process of engineFloor.
func TestEngineFloorChild(t *testing.T) {
	src := os.Getenv("SITEWATCH_FLOOR_SOURCE")
	if src == "" {
		t.Skip("child process of BenchmarkRunScale's engine floor")
	}
	commits, err := strconv.Atoi(os.Getenv("SITEWATCH_FLOOR_COMMITS"))
	if err != nil || commits < 1 {
		t.Fatalf("SITEWATCH_FLOOR_COMMITS=%q: want a positive number", os.Getenv("SITEWATCH_FLOOR_COMMITS"))
	}
	ctx := context.Background()
	limit := warehouse.DefaultLoadMemoryLimit
	if l := os.Getenv("SITEWATCH_SCALE_MEMORY_LIMIT"); l != "" {
		limit = l
	}
	db, err := sql.Open("duckdb", filepath.Join(t.TempDir(), "floor.duckdb")+"?"+url.Values{"memory_limit": {limit}}.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if err := warehouse.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(ctx) // one connection: the attachment is per database, the work serial
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, `ATTACH '`+strings.ReplaceAll(src, "'", "''")+`' AS src (READ_ONLY)`); err != nil {
		t.Fatal(err)
	}
	tables := floorTables(ctx, t, conn)
	for c := 0; c < commits; c++ {
		copyShare(ctx, t, conn, tables, c, commits)
	}
	if _, err := conn.ExecContext(ctx, `DETACH src`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, `CHECKPOINT`); err != nil { // as Close does after a run
		t.Fatal(err)
	}
	_ = conn.Close()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	printPeakRSS(t, "floor")
}

type floorTable struct {
	name string
	rows int64
}

// floorTables lists src's tables with their row counts and empties the new warehouse's
// copies (migrations may seed rows).
func floorTables(ctx context.Context, t *testing.T, conn *sql.Conn) []floorTable {
	rows, err := conn.QueryContext(ctx, `SELECT table_name FROM duckdb_tables() WHERE database_name = 'src' AND schema_name = 'main' ORDER BY table_name`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []floorTable
	for rows.Next() {
		var x floorTable
		if err := rows.Scan(&x.name); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, x)
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	for i := range tables {
		if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM src.main.`+tables[i].name).Scan(&tables[i].rows); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.ExecContext(ctx, `DELETE FROM main.`+tables[i].name); err != nil {
			t.Fatal(err)
		}
	}
	return tables
}

// copyShare copies the c-th of commits equal shares of every table's rows, in storage order
// (the order the run appended them), in one transaction.
func copyShare(ctx context.Context, t *testing.T, conn *sql.Conn, tables []floorTable, c, commits int) {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range tables {
		lo, hi := x.rows*int64(c)/int64(commits), x.rows*int64(c+1)/int64(commits)
		q := fmt.Sprintf(`INSERT INTO main.%[1]s SELECT * FROM src.main.%[1]s WHERE rowid >= %[2]d AND rowid < %[3]d`, x.name, lo, hi)
		if _, err := tx.ExecContext(ctx, q); err != nil {
			t.Fatalf("copy %s rows %d–%d: %v", x.name, lo, hi, err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}
