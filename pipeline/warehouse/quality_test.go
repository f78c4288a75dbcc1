package warehouse

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// breakRules breaks each quality rule once on top of the golden fixtures of month.
var breakRules = []string{
	// geography_share_sum: example.com's countries now add up to 0.61 + 0.1 + 0.5.
	`INSERT INTO geography_share VALUES ('2026-11', 'example.com', 'FR', 0.5)`,
	// share_range: a bounce rate above 1.
	`UPDATE sites SET bounce_rate = 1.5 WHERE snapshot_month = '2026-11' AND domain = 'objnull.example'`,
	// history_contiguous: example.com's history loses its middle month.
	`DELETE FROM traffic_history WHERE snapshot_month = '2026-11' AND domain = 'example.com' AND month = DATE '2026-09-01'`,
	// duplicate_keys: a keyword listed twice.
	`INSERT INTO keywords SELECT snapshot_month, domain, 99, keyword, search_volume, cpc_usd, estimated_value_usd
	 FROM keywords WHERE snapshot_month = '2026-11' AND domain = 'example.com' AND position = 1`,
	// visits_nonnegative: a competitor with negative visits.
	`UPDATE similar_sites SET total_visits = -1 WHERE snapshot_month = '2026-11' AND domain = 'example.com' AND position = 1`,
	// ai_share_range and ai_share_sum: a platform share of 120 percent.
	`UPDATE ai_platforms SET share_pct = 120 WHERE snapshot_month = '2026-11' AND domain = 'example.com' AND platform = 'perplexity.ai'`,
	// visits_jump: jump.example quadruples in its data month.
	`INSERT INTO sites (snapshot_month, domain, traffic_period) VALUES ('2026-11', 'jump.example', '2026-10')`,
	`INSERT INTO traffic_history VALUES ('2026-11', 'jump.example', DATE '2026-09-01', 100), ('2026-11', 'jump.example', DATE '2026-10-01', 400)`,
}

// TestQualityChecks breaks each rule once on top of the golden fixtures and expects exactly
// those findings (errors first), with their observed and expected text; a rerun replaces the
// month's rows instead of adding to them, and clean checks leave ok rows. It runs the checks
// in one pass per table and in passes of 2 rows, which must find the same.
func TestQualityChecks(t *testing.T) {
	for _, perPass := range []int64{qualityRowsPerPass, 2} {
		t.Run(fmt.Sprintf("%d rows per pass", perPass), func(t *testing.T) {
			defer func(old int64) { qualityRowsPerPass = old }(qualityRowsPerPass)
			qualityRowsPerPass = perPass
			testQualityChecks(t)
		})
	}
}

func testQualityChecks(t *testing.T) {
	w := testWarehouse(t, "")
	ctx := context.Background()
	const m = "2026-11"
	storeFixtures(t, w, m)
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for _, q := range breakRules {
		if _, err := w.DB().Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var first int
	for i := range 2 {
		findings, err := w.RunQualityChecks(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, f := range findings {
			got = append(got, strings.Join([]string{f.Severity, f.Check, f.Table, f.Domain, f.Observed, f.Expected}, " | "))
		}
		want := []string{
			"error | ai_share_range | ai_platforms | example.com | share_pct: 1 value 120 | 0 to 100 (percent)",
			"error | duplicate_keys | keywords | example.com | 1 key repeated, e.g. " + firstKeyword(t, w) + " (2 rows) | one row per domain and keyword",
			"error | geography_share_sum | geography_share | example.com | 1.2100 | <= 1",
			"error | share_range | sites | objnull.example | bounce_rate: 1 value 1.5 | 0 to 1 (decimal share)",
			"error | visits_nonnegative | similar_sites | example.com | total_visits: 1 value -1 | >= 0",
			"warn | ai_share_sum | ai_platforms | example.com | 182.50 | <= 100 (percent)",
			"warn | channel_share_sum | sources_share | nulls.example | 0.7500 | 1 ± 0.02",
			"warn | history_contiguous | traffic_history | example.com | months 2026-08..2026-10, 1 missing | contiguous, ending 2026-10",
			"warn | visits_jump | traffic_history | jump.example | 2026-10: 100 -> 400 visits (+300.0%) | within +50% / -33% of the month before",
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("run %d findings:\n%s\nwant:\n%s", i+1, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		n := count(t, w.DB(), `SELECT count(*) FROM quality_checks WHERE snapshot_month = ?`, m)
		if i == 0 {
			first = n
		} else if n != first {
			t.Errorf("rerun left %d rows, first run %d: not replaced", n, first)
		}
	}
	if n := count(t, w.DB(), `SELECT count(*) FROM quality_checks WHERE snapshot_month = ? AND "check" = 'ai_share_range'
		AND table_name = 'ai_platform_history' AND severity = 'ok' AND domain IS NULL`, m); n != 1 {
		t.Errorf("clean check left %d ok rows, want 1", n)
	}

	sum, err := w.QualitySummary(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, s := range sum {
		lines = append(lines, s.Check+" "+s.Severity)
	}
	wantSum := "ai_share_range error,duplicate_keys error,geography_share_sum error,share_range error,visits_nonnegative error," +
		"ai_share_sum warn,channel_share_sum warn,history_contiguous warn,visits_jump warn"
	if got := strings.Join(lines, ","); got != wantSum {
		t.Errorf("summary:\n got %s\nwant %s", got, wantSum)
	}
}

func firstKeyword(t *testing.T, w *Warehouse) string {
	t.Helper()
	var k string
	if err := w.DB().QueryRow(`SELECT keyword FROM keywords WHERE snapshot_month = '2026-11' AND domain = 'example.com' AND position = 1`).Scan(&k); err != nil {
		t.Fatal(err)
	}
	return k
}

func TestQualityChecksRefuseEmptyMonth(t *testing.T) {
	w := testWarehouse(t, "")
	ctx := context.Background()
	if _, err := w.RunQualityChecks(ctx, "2026-01"); err == nil || !strings.Contains(err.Error(), "no loaded domain") {
		t.Errorf("empty month: err = %v, want 'no loaded domain'", err)
	}
	if _, err := w.RunQualityChecks(ctx, "26-01"); err == nil || !strings.Contains(err.Error(), "YYYY-MM") {
		t.Errorf("bad month: err = %v", err)
	}
	if sum, err := w.QualitySummary(ctx, "2026-01"); err != nil || len(sum) != 0 {
		t.Errorf("summary of an unchecked month = %v, %v; want empty", sum, err)
	}
}

// TestRebuildRunsQualityChecks: a rebuild re-derives quality_checks with the tables and
// exports them with the month.
func TestRebuildRunsQualityChecks(t *testing.T) {
	dir := t.TempDir()
	w := testWarehouse(t, dir)
	ctx := context.Background()
	storeFixtures(t, w, "2026-11")
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Rebuild(ctx, "2026-11"); err != nil {
		t.Fatal(err)
	}
	if n := count(t, w.DB(), `SELECT count(*) FROM quality_checks WHERE snapshot_month = '2026-11' AND severity = 'warn'`); n != 1 {
		t.Errorf("after rebuild: %d warn findings, want 1 (nulls.example's channel shares)", n)
	}
	file := filepath.Join(dir, "parquet", "quality_checks", "snapshot_month=2026-11", parquetFile)
	if n := count(t, w.DB(), `SELECT count(*) FROM read_parquet(?) WHERE severity = 'warn'`, file); n != 1 {
		t.Errorf("exported quality_checks holds %d warn findings, want 1", n)
	}
}

// TestQualityPassesAreBounded: every pass of a check scans its whole table, so the passes of
// a table of a million domains' rows stay at maxQualityPasses instead of growing with it.
func TestQualityPassesAreBounded(t *testing.T) {
	for _, c := range []struct{ rows, want int64 }{
		{0, 1}, {1, 1}, {qualityRowsPerPass, 1}, {qualityRowsPerPass + 1, 2},
		{10 * qualityRowsPerPass, 10}, {20_000_000, maxQualityPasses}, {1 << 40, maxQualityPasses},
	} {
		if got := qualityPasses(c.rows); got != c.want {
			t.Errorf("qualityPasses(%d) = %d, want %d", c.rows, got, c.want)
		}
	}
}
