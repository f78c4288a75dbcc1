package warehouse

import (
	"context"
	"strconv"
	"testing"
)

// TestThreadsFollowTheData: a warehouse smaller than two of DuckDB's row groups runs on one
// thread; a data commit that grows its largest table past them gives the next analysis
// DuckDB's default count; a rebuild holding its own count is left alone.
func TestThreadsFollowTheData(t *testing.T) {
	w := testWarehouse(t, "")
	ctx := context.Background()
	threads := func() int {
		t.Helper()
		n, err := strconv.Atoi(duckdbSetting(t, w, "threads"))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	storeFixtures(t, w, "2026-10")
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	w.fitThreads(ctx)
	if got := threads(); got != 1 {
		t.Fatalf("a warehouse of %d domains runs on %d threads, want 1", len(fixtureDomains), got)
	}
	// Two processors at least, so the default is not itself 1 (CI=true machines have two).
	w.mu.Lock()
	w.threads.defaults = max(w.threads.defaults, 2)
	defaults := w.threads.defaults
	w.mu.Unlock()

	grow := func(ctx context.Context) error {
		_, err := w.load.ExecContext(ctx, `INSERT INTO traffic_history (snapshot_month, domain, month, visits)
			SELECT '2026-10', 'grown' || i, DATE '2020-01-01', i FROM range(?) r(i)`, parallelRows)
		return err
	}
	if err := w.inTx(asDataWrite(ctx), grow); err != nil {
		t.Fatal(err)
	}
	if err := w.withMemoryLimit(ctx, w.opts.LoadMemoryLimit, func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	if got := threads(); got != defaults {
		t.Fatalf("with %d rows in traffic_history an analysis runs on %d threads, want DuckDB's %d", parallelRows, got, defaults)
	}
	pinned, err := w.useRebuildThreads(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.withMemoryLimit(ctx, w.opts.LoadMemoryLimit, func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	if got := threads(); got != 1 {
		t.Fatalf("an analysis inside a rebuild set %d threads, want the rebuild's 1", got)
	}
	pinned()
	if got := threads(); got != defaults || w.threads.current != got {
		t.Fatalf("after a rebuild DuckDB runs on %d threads and the record says %d, want the %d in force before it", got, w.threads.current, defaults)
	}
	sets := w.threads.sets
	w.fitThreads(ctx)
	if w.threads.sets != sets {
		t.Fatalf("fitted again without a data commit")
	}
}

func TestThreadsFor(t *testing.T) {
	for _, c := range []struct {
		rows           int64
		defaults, want int
	}{
		{0, 8, 1}, {parallelRows - 1, 8, 1}, {parallelRows, 8, 8}, {parallelRows, 1, 1}, {1 << 40, 2, 2},
	} {
		if got := threadsFor(c.rows, c.defaults); got != c.want {
			t.Errorf("threadsFor(%d, %d) = %d, want %d", c.rows, c.defaults, got, c.want)
		}
	}
}
