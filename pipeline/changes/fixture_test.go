package changes

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sitewatch/pipeline/warehouse"
)

// openWarehouse returns a real warehouse file in a temporary directory, migrated by Open.
func openWarehouse(t *testing.T, lists ...warehouse.AttentionListSettings) *warehouse.Warehouse {
	t.Helper()
	dir := t.TempDir()
	w, err := warehouse.Open(context.Background(), warehouse.Options{
		DuckDBPath:     filepath.Join(dir, "sitewatch.duckdb"),
		ParquetDir:     filepath.Join(dir, "parquet"),
		AttentionLists: lists,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

func insert(t *testing.T, db *sql.DB, query string, rows ...[]any) {
	t.Helper()
	for _, args := range rows {
		if _, err := db.Exec(query, args...); err != nil {
			t.Fatalf("%s %v: %v", query, args, err)
		}
	}
}

var runStart = time.Date(2026, 1, 2, 6, 0, 0, 0, time.UTC)

// addRun records a finished run of month with status, loaded of total domains, started
// `order` hours after runStart (later runs of a month decide its completeness).
func addRun(t *testing.T, db *sql.DB, id, month, status string, loaded, total, order int) {
	t.Helper()
	start := runStart.Add(time.Duration(order) * time.Hour)
	insert(t, db, `INSERT INTO runs (run_id, snapshot_month, started_at, finished_at, status, domains_total,
		domains_loaded, domains_rejected, requests, credits_spent, rate_limited) VALUES (?, ?, ?, ?, ?, ?, ?, 0, 0, 0, 0)`,
		[]any{id, month, start, start.Add(time.Minute), status, total, loaded})
}

// loadTwoMonths inserts the two-snapshot fixture: 2026-01 (a.com, b.com) complete, 2026-02
// (a.com, b.com, and c.com newly on the watchlist) complete on its second run, and 2026-03
// stopped for credits with only a.com loaded. The comments at each table say what changes.
func loadTwoMonths(t *testing.T, db *sql.DB) {
	t.Helper()
	addRun(t, db, "r1", "2026-01", "complete", 2, 2, 0)
	addRun(t, db, "r2", "2026-02", "stopped_credits", 1, 3, 1)
	addRun(t, db, "r3", "2026-02", "complete", 3, 3, 2)
	addRun(t, db, "r4", "2026-03", "stopped_credits", 1, 3, 3)
	addRun(t, db, "r5", "2026-03", "running", 1, 3, 4) // still going: does not decide

	// Visits: a +50%, b -50% (the bigger move: halving weighs as much as doubling, and more
	// than +50%). Rank: a climbs 20 places, b falls 50. AI: a triples, b unchanged.
	const site = `INSERT INTO sites (snapshot_month, domain, traffic_period, snapshot_date, total_visits, global_rank,
		ai_total_visits, ai_global_traffic_share) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`
	insert(t, db, site,
		[]any{"2026-01", "a.com", "2026-01", day("2026-01-01"), 1000.0, 100, 10, 0.01},
		[]any{"2026-01", "b.com", "2026-01", day("2026-01-01"), 2000.0, 300, 20, 0.02},
		[]any{"2026-02", "a.com", "2026-02", day("2026-02-01"), 1500.0, 80, 30, 0.02},
		[]any{"2026-02", "b.com", "2026-02", day("2026-02-01"), 1000.0, 350, 20, 0.02},
		[]any{"2026-02", "c.com", "2026-02", day("2026-02-01"), 500.0, 5000, nil, nil},
		[]any{"2026-03", "a.com", "2026-03", day("2026-03-01"), 1500.0, 80, 30, 0.02},
	)
	// Channels: a shifts 12.5 points from direct to organic search; b does not move.
	insert(t, db, `INSERT INTO sources_share VALUES (?, ?, ?, ?)`,
		[]any{"2026-01", "a.com", "direct", 0.5}, []any{"2026-01", "a.com", "organic_search", 0.5},
		[]any{"2026-01", "b.com", "direct", 0.25}, []any{"2026-01", "b.com", "organic_search", 0.75},
		[]any{"2026-02", "a.com", "direct", 0.375}, []any{"2026-02", "a.com", "organic_search", 0.625},
		[]any{"2026-02", "b.com", "direct", 0.25}, []any{"2026-02", "b.com", "organic_search", 0.75},
		[]any{"2026-02", "c.com", "direct", 1.0},
		[]any{"2026-03", "a.com", "direct", 0.375}, []any{"2026-03", "a.com", "organic_search", 0.625},
	)
	// Competitors: a gains z.com (listed twice, once re-cased: one competitor) and loses x.com;
	// www.B.com and b.com are the same; b loses y.com. c.com is new: its list is no change.
	const similar = `INSERT INTO similar_sites (snapshot_month, domain, position, similar_domain, global_rank, total_visits)
		VALUES (?, ?, ?, ?, ?, ?)`
	insert(t, db, similar,
		[]any{"2026-01", "a.com", 1, "x.com", 50, 9000.0},
		[]any{"2026-01", "a.com", 2, "www.B.com", 300, 2000.0},
		[]any{"2026-01", "b.com", 1, "a.com", 100, 1000.0},
		[]any{"2026-01", "b.com", 2, "y.com", nil, nil},
		[]any{"2026-02", "a.com", 1, "b.com", 350, 1000.0},
		[]any{"2026-02", "a.com", 2, "z.com", 7000, 400.0},
		[]any{"2026-02", "a.com", 3, "Z.com", 7000, 400.0},
		[]any{"2026-02", "b.com", 1, "a.com", 80, 1500.0},
		[]any{"2026-02", "c.com", 1, "a.com", 80, 1500.0},
	)
	// AI platforms: a gains gemini and loses perplexity; b had none and now has ChatGPT
	// (compared lower-cased).
	insert(t, db, `INSERT INTO ai_platforms VALUES (?, ?, ?, ?, ?)`,
		[]any{"2026-01", "a.com", "chatgpt.com", 1, 70.0},
		[]any{"2026-01", "a.com", "perplexity.ai", 2, 30.0},
		[]any{"2026-02", "a.com", "chatgpt.com", 1, 60.0},
		[]any{"2026-02", "a.com", "gemini.google.com", 2, 40.0},
		[]any{"2026-02", "b.com", "ChatGPT.com", 1, 100.0},
	)
	// Keywords: a keeps "Shoes" (re-spelled "shoes "), gains sandals, loses boots.
	insert(t, db, `INSERT INTO keywords VALUES (?, ?, ?, ?, ?, ?, ?)`,
		[]any{"2026-01", "a.com", 1, "Shoes", 1000, 1.5, 50.0},
		[]any{"2026-01", "a.com", 2, "boots", 500, nil, 20.0},
		[]any{"2026-01", "b.com", 1, "hats", 300, 0.5, 5.0},
		[]any{"2026-02", "a.com", 1, "shoes ", 1000, 1.5, 55.0},
		[]any{"2026-02", "a.com", 2, "sandals", 800, 1.0, 30.0},
		[]any{"2026-02", "b.com", 1, "hats", 300, 0.5, 5.0},
	)
	// Countries: ties ranked by code, so 2026-01's top 5 is US DE FR GB ES (IT sixth); in
	// 2026-02 IT climbs to 3rd and ES falls to 6th.
	insert(t, db, `INSERT INTO countries VALUES (?, ?, ?, ?)`,
		[]any{"US", "USA", "840", "United States"}, []any{"DE", "DEU", "276", "Germany"},
		[]any{"FR", "FRA", "250", "France"}, []any{"GB", "GBR", "826", "United Kingdom"},
		[]any{"IT", "ITA", "380", "Italy"},
	)
	insert(t, db, `INSERT INTO geography_share VALUES (?, ?, ?, ?)`,
		[]any{"2026-01", "a.com", "US", 0.4}, []any{"2026-01", "a.com", "DE", 0.2},
		[]any{"2026-01", "a.com", "fr", 0.1}, []any{"2026-01", "a.com", "GB", 0.1},
		[]any{"2026-01", "a.com", "IT", 0.05}, []any{"2026-01", "a.com", "ES", 0.05},
		[]any{"2026-02", "a.com", "US", 0.4}, []any{"2026-02", "a.com", "DE", 0.2},
		[]any{"2026-02", "a.com", "IT", 0.15}, []any{"2026-02", "a.com", "FR", 0.1},
		[]any{"2026-02", "a.com", "GB", 0.05}, []any{"2026-02", "a.com", "ES", 0.04},
	)
}

// completeThirdMonth turns the fixture into three complete months: 2026-03 completes with
// b.com, whose direct share rises 25 points and which gains c.com as a competitor.
func completeThirdMonth(t *testing.T, db *sql.DB) {
	t.Helper()
	insert(t, db, `INSERT INTO sites (snapshot_month, domain, traffic_period, total_visits, global_rank) VALUES (?, ?, ?, ?, ?)`,
		[]any{"2026-03", "b.com", "2026-03", 1000.0, 350})
	insert(t, db, `INSERT INTO sources_share VALUES (?, ?, ?, ?)`,
		[]any{"2026-03", "b.com", "direct", 0.5}, []any{"2026-03", "b.com", "organic_search", 0.5})
	insert(t, db, `INSERT INTO similar_sites (snapshot_month, domain, position, similar_domain) VALUES (?, ?, ?, ?)`,
		[]any{"2026-03", "a.com", 1, "b.com"}, []any{"2026-03", "a.com", 2, "z.com"},
		[]any{"2026-03", "b.com", 1, "a.com"}, []any{"2026-03", "b.com", 2, "c.com"})
	addRun(t, db, "r6", "2026-03", "up_to_date", 2, 2, 5)
}

func day(s string) time.Time {
	d, err := time.Parse("2006-01-02", s)
	if err != nil {
		panic(err)
	}
	return d
}

// querier is a *sql.DB or one of its connections (*sql.Conn: temporary tables).
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// rows returns every row of q as " | "-joined strings (NULL for nulls, floats with up to 6
// decimals, dates as YYYY-MM-DD).
func rows(t *testing.T, db querier, q string, args ...any) []string {
	t.Helper()
	r, err := db.QueryContext(context.Background(), q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer r.Close()
	cols, err := r.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for r.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := r.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			switch x := v.(type) {
			case nil:
				parts[i] = "NULL"
			case float64:
				parts[i] = strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.6f", x), "0"), ".")
			case time.Time:
				parts[i] = x.Format("2006-01-02")
			default:
				parts[i] = fmt.Sprint(x)
			}
		}
		out = append(out, strings.Join(parts, " | "))
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
