package warehouse

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"
)

// TestListsMarkFollowsEveryWrite: a reader trusts the stored lists without their checksums only
// while the file is as a writer with fresh lists left it; a write by another program, or a
// writer's open, takes that away, and the next writer's open refreshes what another program changed.
func TestListsMarkFollowsEveryWrite(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "db", "sitewatch.duckdb")
	open := func(readOnly bool) *Warehouse {
		t.Helper()
		w, err := Open(ctx, Options{DuckDBPath: path, ParquetDir: filepath.Join(dir, "parquet"), ReadOnly: readOnly})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	closeW := func(w *Warehouse) {
		t.Helper()
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	current := func(when string, want bool) {
		t.Helper()
		r := open(true)
		defer closeW(r)
		if got := r.StoredListsCurrent(0, 0); got != want {
			t.Errorf("%s: a reader finds the stored lists current %v, want %v", when, got, want)
		}
		if r.StoredListsCurrent(1000, 2) {
			t.Errorf("%s: a reader finds lists current for settings no writer stored", when)
		}
	}
	w := open(false)
	loadTwoRunMonths(t, w) // writes after its runs' ends: the lists are behind
	closeW(w)
	current("after a writer that left its lists behind", false)
	w = open(false) // refreshes them
	if w.StoredListsCurrent(0, 0) {
		t.Error("a writer reports its lists current to itself; only readers may trust the mark")
	}
	if _, err := os.Stat(listsMarkPath(path)); err == nil {
		t.Error("the mark exists while a writer holds the file")
	}
	closeW(w)
	current("after a writer with fresh lists", true)

	// A writer that writes nothing leaves the mark as it found it.
	closeW(open(false))
	current("after a writer that wrote nothing", true)

	// Another program's write: the mark no longer matches the file.
	db, err := sql.Open("duckdb", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE sites SET global_rank = global_rank + 1 WHERE snapshot_month = '2026-01'`); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	current("after another program's UPDATE", false)

	// The next writer's open sees it and refreshes: the lists are stored as of that UPDATE.
	w = open(false)
	if n := count(t, w.DB(), `SELECT count(*) FROM attention_list_months(10000, 3) WHERE NOT stored`); n != 0 {
		t.Errorf("a writer's open after another program's write left %d months' lists stale", n)
	}
	closeW(w)
	current("after the writer that refreshed", true)

	// A write through the writer's own pool, which no commit of its own recorded: no mark.
	w = open(false)
	if _, err := w.DB().Exec(`UPDATE sites SET global_rank = global_rank + 1 WHERE snapshot_month = '2026-02'`); err != nil {
		t.Fatal(err)
	}
	closeW(w)
	current("after a write through the writer's pool", false)
	closeW(open(false)) // refreshes: the mark did not match
	current("after the writer that refreshed again", true)

	// A writer killed after a commit (its lists behind): no mark.
	w = open(false)
	if err := w.inTx(ctx, func(ctx context.Context) error {
		_, err := w.load.ExecContext(ctx, `UPDATE sites SET global_rank = global_rank + 1 WHERE snapshot_month = '2026-02'`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	closeW(w)
	current("after a writer that wrote and did not refresh", false)
}
