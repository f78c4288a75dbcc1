package warehouse

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestAttentionCacheFollowsWrites checks that every path that changes the history leaves
// attention_visit_steps and attention_month_stats holding every complete month as of the data now: the end of a run,
// a rebuild, and a writer's open after a change made by hand. (That a stale month is computed
// at the read instead, with the same rows, is pinned in pipeline/changes.)
func TestAttentionCacheFollowsWrites(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	w := testWarehouse(t, dir)
	loadTwoRunMonths(t, w) // two runs, each ending in FinishRun
	storesOther := false   // whether the writer stores the lists of min_visits 1000, threshold 2
	cached := func(when, wantStats, wantLists string) {
		t.Helper()
		got := strings.ReplaceAll(strings.Join(queryRows(t, w.DB(), `SELECT snapshot_month || ' ' || cached FROM attention_visit_months() ORDER BY 1`), ", "), `"`, "")
		if got != "2026-01 true, 2026-02 true" {
			t.Errorf("%s: months in the cache %q, want both complete months", when, got)
		}
		got = strings.ReplaceAll(strings.Join(queryRows(t, w.DB(), `SELECT snapshot_month || ' ' || cached FROM attention_stat_months() ORDER BY 1`), ", "), `"`, "")
		if got != wantStats {
			t.Errorf("%s: months of the watchlist figures in the cache %q, want %q", when, got, wantStats)
		}
		// the whole lists: the defaults', and the config's settings a writer was given
		for _, settings := range []string{"10000, 3", "1000, 2"} {
			want := wantLists
			if settings != "10000, 3" && !storesOther {
				want = "2026-01 false, 2026-02 false"
			}
			got = strings.ReplaceAll(strings.Join(queryRows(t, w.DB(), `SELECT snapshot_month || ' ' || stored FROM attention_list_months(`+settings+`) ORDER BY 1`), ", "), `"`, "")
			if got != want {
				t.Errorf("%s: months whose list (%s) is stored %q, want %q", when, settings, got, want)
			}
		}
		if n := count(t, w.DB(), `SELECT count(*) FROM attention_visit_sources`); n != 2*26 {
			t.Errorf("%s: attention_visit_sources has %d rows, want 26 snapshots for each of 2 months", when, n)
		}
	}
	// loadTwoRunMonths UPDATEs 2026-02's sites after its run: its figures are stale until a write;
	// it runs the quality checks after the runs too (a run runs them before it ends), so both
	// months' lists are stale
	cached("after the runs", "2026-01 true, 2026-02 false", "2026-01 false, 2026-02 false")

	makeStale := func() {
		t.Helper()
		if _, err := w.DB().Exec(`UPDATE traffic_history SET visits = visits + 1 WHERE snapshot_month = '2026-01'`); err != nil {
			t.Fatal(err)
		}
		if got := count(t, w.DB(), `SELECT count(*) FROM attention_visit_months() WHERE cached`); got != 0 {
			t.Fatalf("after an UPDATE of 2026-01's history %d months still read from the cache, want 0 (2026-02 reads 2026-01's snapshot too)", got)
		}
		if _, err := w.DB().Exec(`UPDATE sites SET global_rank = global_rank + 1 WHERE snapshot_month = '2026-01'`); err != nil {
			t.Fatal(err)
		}
		if got := count(t, w.DB(), `SELECT count(*) FROM attention_stat_months() WHERE cached`); got != 0 {
			t.Fatalf("after an UPDATE of 2026-01's sites %d months' watchlist figures still read from the cache, want 0 (2026-02 compares with 2026-01)", got)
		}
		if got := count(t, w.DB(), `SELECT count(*) FROM attention_list_months(10000, 3) WHERE stored`); got != 0 {
			t.Fatalf("after those UPDATEs %d months' lists still read stored, want 0", got)
		}
	}
	makeStale()
	if _, err := w.Rebuild(ctx, "2026-01"); err != nil {
		t.Fatal(err)
	}
	cached("after a rebuild", "2026-01 true, 2026-02 true", "2026-01 true, 2026-02 true")

	// A change through the writer's pool, which no commit of its own recorded: the file no
	// longer matches what its refresh left, so its Close writes no lists mark and the next
	// writer's open refreshes (listsmark.go).
	makeStale()
	reopen := func(lists ...AttentionListSettings) {
		t.Helper()
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		w2, err := Open(ctx, Options{DuckDBPath: filepath.Join(dir, "db", "sitewatch.duckdb"), ParquetDir: filepath.Join(dir, "parquet"), AttentionLists: lists})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = w2.Close() })
		w = w2
	}
	reopen()
	cached("after a writer's open behind a write through the pool", "2026-01 true, 2026-02 true", "2026-01 true, 2026-02 true")
	// A writer that committed data and ended without refreshing (killed): the next open does.
	if err := w.inTx(ctx, func(ctx context.Context) error {
		_, err := w.load.ExecContext(ctx, `UPDATE sites SET global_rank = global_rank + 1 WHERE snapshot_month = '2026-01'`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	reopen()
	cached("after a writer's open behind a killed writer", "2026-01 true, 2026-02 true", "2026-01 true, 2026-02 true")
	// Nothing written since, but other list settings: the open stores theirs.
	reopen(AttentionListSettings{MinVisits: 1000, Threshold: 2})
	storesOther = true
	cached("after a writer's open with other list settings", "2026-01 true, 2026-02 true", "2026-01 true, 2026-02 true")
}
