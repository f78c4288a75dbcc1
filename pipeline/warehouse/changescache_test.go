package warehouse

import (
	"context"
	"path/filepath"
	"testing"
)

// TestChangesCacheFollowsWrites checks that every path that changes a month's rows leaves
// changes_cached_* holding the latest complete month as of the tables now: a rebuild, and a
// writer's open after a change made by hand. (That stale rows are never read, and that stored
// rows equal computed ones, is pinned in pipeline/changes.)
func TestChangesCacheFollowsWrites(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	w := testWarehouse(t, dir)
	loadTwoRunMonths(t, w) // two runs, then rows changed by hand: the stored lists are stale
	stored := func(when string) {
		t.Helper()
		ok, err := ChangesCached(ctx, w.DB(), "2026-02", "2026-01")
		if err != nil || !ok {
			t.Errorf("%s: the lists of 2026-02 against 2026-01 are not stored as of the tables now (%v, %v)", when, ok, err)
		}
		if n := count(t, w.DB(), `SELECT count(*) FROM changes_cached_sources WHERE snapshot_month <> '2026-02'`); n != 0 {
			t.Errorf("%s: %d rows of other months stored, want only the latest", when, n)
		}
	}
	makeStale := func() {
		t.Helper()
		if _, err := w.DB().Exec(`UPDATE sites SET global_rank = coalesce(global_rank, 0) + 1 WHERE snapshot_month = '2026-01'`); err != nil {
			t.Fatal(err)
		}
		if ok, err := ChangesCached(ctx, w.DB(), "2026-02", "2026-01"); err != nil || ok {
			t.Fatalf("after an UPDATE of 2026-01's sites the stored lists are still current (%v, %v)", ok, err)
		}
	}
	makeStale()
	if _, err := w.Rebuild(ctx, "2026-01"); err != nil {
		t.Fatal(err)
	}
	stored("after a rebuild")

	// The stale lists of a writer that committed and ended without refreshing (killed): the
	// next writer's open stores them again.
	if err := w.inTx(ctx, func(ctx context.Context) error {
		_, err := w.load.ExecContext(ctx, `UPDATE sites SET global_rank = coalesce(global_rank, 0) + 1 WHERE snapshot_month = '2026-01'`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if ok, err := ChangesCached(ctx, w.DB(), "2026-02", "2026-01"); err != nil || ok {
		t.Fatalf("after the writer's UPDATE of 2026-01's sites the stored lists are still current (%v, %v)", ok, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w2, err := Open(ctx, Options{DuckDBPath: filepath.Join(dir, "db", "sitewatch.duckdb"), ParquetDir: filepath.Join(dir, "parquet")})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w2.Close() }()
	w = w2
	stored("after a writer's open")
}
