package warehouse

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sitewatch/pipeline/model"
	"sitewatch/schema"
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

// TestRunLeavesItsListsFresh: a run ends with FinishRun, which refreshes the stored lists, then
// exports its run-health tables (ExportRunHealth) and closes. The export only reads the tables,
// so the lists stay fresh: the run's Close leaves the mark readers trust, and the next writer's
// open finds nothing to compute. (Counted as a data write, the export left every run's lists
// marked behind.) A row written after the refresh (here a fetch error) still marks them behind.
func TestRunLeavesItsListsFresh(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	opts := Options{DuckDBPath: filepath.Join(dir, "sitewatch.duckdb"), ParquetDir: filepath.Join(dir, "parquet")}
	w, err := Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 1, 2, 6, 0, 0, 0, time.UTC)
	run := model.RunRecord{RunID: "run-2026-01", SnapshotMonth: "2026-01", StartedAt: start, Status: "running", DomainsTotal: 4}
	if err := w.StartRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	storeFixtures(t, w, "2026-01")
	if err := w.ExportParquet(ctx, "2026-01"); err != nil {
		t.Fatal(err)
	}
	end := start.Add(time.Minute)
	run.FinishedAt, run.Status, run.DomainsLoaded = &end, "complete", 4
	if err := w.FinishRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	if err := w.ExportRunHealth(ctx, "2026-01"); err != nil {
		t.Fatal(err)
	}
	if !w.cachesFresh.Load() {
		t.Error("the run-health export after FinishRun marked the stored lists behind")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	reader, err := Open(ctx, Options{DuckDBPath: opts.DuckDBPath, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if !reader.StoredListsCurrent(0, 0) {
		t.Error("after a complete run a reader does not find the stored lists current: it checks them row by row")
	}
	if err := reader.Close(); err != nil {
		t.Fatal(err)
	}
	w, err = Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if !w.cachesFresh.Load() {
		t.Error("the next writer's open finds the stored lists behind and computes them again")
	}
	// A data write after the refresh still counts.
	if err := w.RecordFetchError(ctx, model.FetchError{RunID: run.RunID, SnapshotMonth: "2026-01", Domain: "late.example",
		Endpoint: schema.EndpointOverview, HTTPStatus: 400, Code: "INVALID_DOMAIN", Message: "invalid domain", OccurredAt: end}); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if w.cachesFresh.Load() {
		t.Error("a row written after the refresh left the stored lists marked fresh")
	}
}

// TestWriterRemovesAKilledMarkWrite: a writer killed while writing the lists mark (at its
// Close) leaves the mark's temporary sibling; the next writer's open removes it, and leaves
// other files alone.
func TestWriterRemovesAKilledMarkWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "db", "sitewatch.duckdb")
	w, err := Open(context.Background(), Options{DuckDBPath: path})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	leftover := filepath.Join(dir, "db", ".sitewatch.duckdb.lists-current.tmp-470032721")
	other := filepath.Join(dir, "db", "notes.txt")
	for _, f := range []string{leftover, other} {
		if err := os.WriteFile(f, []byte("{"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if r, err := Open(context.Background(), Options{DuckDBPath: path, ReadOnly: true}); err != nil {
		t.Fatal(err)
	} else if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(leftover); err != nil {
		t.Fatalf("a reader removed the leftover (a writer may be writing it): %v", err)
	}
	w, err = Open(context.Background(), Options{DuckDBPath: path})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Close() }()
	if _, err := os.Stat(leftover); !os.IsNotExist(err) {
		t.Errorf("the killed mark write's leftover %s is still there after a writer's open (%v)", leftover, err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("a writer's open removed %s: %v", other, err)
	}
}
