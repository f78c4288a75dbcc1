package report

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"testing"
	"time"

	_ "github.com/marcboeker/go-duckdb"

	"sitewatch/pipeline/warehouse"
	sqlfiles "sitewatch/sql"
)

// openWarehouse returns a migrated DuckDB file warehouse in a temporary directory.
func openWarehouse(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("duckdb", filepath.Join(t.TempDir(), "sitewatch.duckdb"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := warehouse.Migrate(context.Background(), db); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return db
}

func insert(t *testing.T, db *sql.DB, query string, rows ...[]any) {
	t.Helper()
	for _, args := range rows {
		if _, err := db.Exec(query, args...); err != nil {
			t.Fatalf("%s %v: %v", query, args, err)
		}
	}
}

func day(s string) time.Time {
	t, err := time.Parse("2006-01-02", s)
	if err != nil {
		panic(err)
	}
	return t
}

// loadFixture inserts the fixed two-snapshot dataset the view tests assert on.
//
// Snapshots 2026-01 (a.com, b.com, c.com) and 2026-02 (a.com, b.com). Traffic history months
// overlap across the snapshots with revised values; b.com's history has a gap (no 2025-10);
// c.com has a zero month; b.com's traffic comes from analytics.
func loadFixture(t *testing.T, db *sql.DB) {
	t.Helper()
	const siteCols = `INSERT INTO sites (snapshot_month, domain, requested_url, snapshot_date, data_coverage, title,
		is_data_from_ga, global_rank, traffic_period, ai_total_visits, total_visits, bounce_rate, fetched_at)
		VALUES (?, ?, ?, ?, 'complete', ?, ?, ?, ?, ?, ?, ?, ?)`
	fetched := time.Date(2026, 2, 2, 6, 0, 0, 0, time.UTC)
	insert(t, db, siteCols,
		[]any{"2026-01", "a.com", "a.com", day("2026-01-01"), "A <Shop>", false, 100, "2025-12", 1000, 5000.0, 0.4, fetched},
		[]any{"2026-01", "b.com", "b.com", day("2026-01-01"), "B", true, 300, "2025-12", 200, 2000.0, 0.5, fetched},
		[]any{"2026-01", "c.com", "c.com", day("2026-01-01"), "C", false, 9000, "2025-12", 0, 100.0, nil, fetched},
		[]any{"2026-02", "a.com", "a.com", day("2026-02-01"), "A <Shop>", false, 90, "2026-01", 2000, 6000.0, 0.45, fetched},
		[]any{"2026-02", "b.com", "b.com", day("2026-02-01"), "B", true, 250, "2026-01", 400, 2500.0, 0.5, fetched},
	)
	insert(t, db, `INSERT INTO traffic_history VALUES (?, ?, ?, ?)`,
		[]any{"2026-01", "a.com", day("2024-12-01"), 800},
		[]any{"2026-01", "a.com", day("2025-10-01"), 900},
		[]any{"2026-01", "a.com", day("2025-11-01"), 1000},
		[]any{"2026-01", "a.com", day("2025-12-01"), 1100},
		[]any{"2026-02", "a.com", day("2025-10-01"), nil}, // NULL in the newer snapshot: 900 stays
		[]any{"2026-02", "a.com", day("2025-11-01"), 1000},
		[]any{"2026-02", "a.com", day("2025-12-01"), 1200}, // revised from 1100
		[]any{"2026-02", "a.com", day("2026-01-01"), 1500},
		[]any{"2026-01", "b.com", day("2025-09-01"), 100},
		[]any{"2026-01", "b.com", day("2025-11-01"), 200},
		[]any{"2026-02", "b.com", day("2025-12-01"), 250},
		[]any{"2026-01", "c.com", day("2025-11-01"), 0},
		[]any{"2026-01", "c.com", day("2025-12-01"), 50},
	)
	insert(t, db, `INSERT INTO sources_share VALUES (?, ?, ?, ?)`,
		[]any{"2026-01", "a.com", "direct", 0.5},
		[]any{"2026-01", "a.com", "organic_search", 0.25},
		[]any{"2026-01", "b.com", "direct", 0.25},
		[]any{"2026-01", "b.com", "organic_search", 0.5},
		[]any{"2026-01", "c.com", "direct", 0.75},
		[]any{"2026-02", "a.com", "direct", 0.375},
		[]any{"2026-02", "b.com", "direct", 0.625},
	)
	insert(t, db, `INSERT INTO countries VALUES (?, ?, ?, ?)`,
		[]any{"US", "USA", "840", "United States"},
		[]any{"DE", "DEU", "276", "Germany"},
		[]any{"FR", "FRA", "250", "France"},
	)
	insert(t, db, `INSERT INTO geography_share VALUES (?, ?, ?, ?)`,
		[]any{"2026-02", "a.com", "US", 0.5},
		[]any{"2026-02", "a.com", "fr", 0.2},
		[]any{"2026-02", "a.com", "DE", 0.2},
		[]any{"2026-02", "a.com", "ZZ", 0.1},
	)
	insert(t, db, `INSERT INTO ai_platforms VALUES (?, ?, ?, ?, ?)`,
		[]any{"2026-01", "a.com", "chatgpt.com", 1, 60.0},
		[]any{"2026-01", "a.com", "perplexity.ai", 2, 40.0},
		[]any{"2026-02", "a.com", "chatgpt.com", 1, 50.0},
		[]any{"2026-02", "a.com", "gemini.google.com", 2, 30.0},
	)
	insert(t, db, `INSERT INTO ai_platform_history VALUES (?, ?, ?, ?, ?)`,
		[]any{"2026-01", "a.com", "chatgpt.com", day("2025-11-01"), 55.0},
		[]any{"2026-01", "a.com", "chatgpt.com", day("2025-12-01"), 60.0},
		[]any{"2026-02", "a.com", "chatgpt.com", day("2025-12-01"), 58.0},
		[]any{"2026-02", "a.com", "chatgpt.com", day("2026-01-01"), 50.0},
	)
	insert(t, db, `INSERT INTO similar_sites (snapshot_month, domain, position, similar_domain, global_rank, total_visits)
		VALUES (?, ?, ?, ?, ?, ?)`,
		[]any{"2026-01", "a.com", 1, "www.B.com", 310, 2100.0},
		[]any{"2026-01", "a.com", 2, "x.com", 50, 10000.0},
		[]any{"2026-01", "b.com", 1, "a.com", 101, 5100.0},
		[]any{"2026-01", "c.com", 1, "a.com", 101, 5100.0},
		[]any{"2026-02", "a.com", 1, "b.com", 260, 2400.0},
		[]any{"2026-02", "a.com", 2, "c.com", 8000, nil},
		[]any{"2026-02", "b.com", 1, "z.com", nil, 700.0},
	)
	insert(t, db, `INSERT INTO keywords VALUES (?, ?, ?, ?, ?, ?, ?)`,
		[]any{"2026-01", "a.com", 1, "Shoes", 1000, 1.5, 50.0},
		[]any{"2026-01", "a.com", 2, "boots", 500, nil, 20.0},
		[]any{"2026-01", "b.com", 1, "hats", 300, 0.5, 5.0},
		[]any{"2026-01", "b.com", 2, "shoes ", 1100, 1.25, 70.0},
		[]any{"2026-01", "c.com", 1, "boots", 400, 1.0, 9.0},
		[]any{"2026-02", "a.com", 1, "shoes", 1000, 1.5, 55.0},
		[]any{"2026-02", "b.com", 1, "shoes", 1000, 1.5, 60.0},
	)
}

// nullable helpers render NULL-able scan targets for comparison.
func fmtNull(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case float64:
		return fmt.Sprintf("%.6f", x)
	case time.Time:
		return x.Format("2006-01-02")
	default:
		return fmt.Sprint(x)
	}
}

// query returns every row of q as strings (NULL for nulls, floats to 6 decimals, dates as
// YYYY-MM-DD), so a table can be compared exactly.
func query(t *testing.T, db *sql.DB, q string, args ...any) [][]string {
	t.Helper()
	rows, err := db.Query(q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out [][]string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		row := make([]string, len(cols))
		for i, v := range vals {
			row[i] = fmtNull(v)
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// openScratch returns an empty in-memory DuckDB (one connection, so views persist).
func openScratch(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

// sqlfilesViews lists sql/views/*.sql in the order warehouse.Migrate applies them.
func sqlfilesViews() ([]string, error) {
	names, err := fs.Glob(sqlfiles.FS, "views/*.sql")
	sort.Strings(names)
	return names, err
}
