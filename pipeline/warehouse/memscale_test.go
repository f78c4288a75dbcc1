package warehouse

import (
	"context"
	"testing"
	"time"
)

func TestScaleLimit(t *testing.T) {
	for _, c := range []struct {
		limit   string
		domains int64
		want    string
	}{
		{"256MB", 0, "256MB"},
		{"256MB", 100_000, "256MB"},
		{"256MB", 100_001, "257MB"},
		{"256MB", 150_000, "384MB"},
		{"256MB", 1_000_000, "2560MB"},
		{"128MB", 1_000_000, "1280MB"},
		{"1GB", 1_000_000, "1GB"},
		{"xMB", 1_000_000, "xMB"},
	} {
		if got := scaleLimit(c.limit, c.domains); got != c.want {
			t.Errorf("scaleLimit(%q, %d) = %q, want %q", c.limit, c.domains, got, c.want)
		}
	}
}

// TestLargestMonthCountedOncePerWrite: the refresh's three lists share one count of the sites,
// and a data commit makes the next ask count again.
func TestLargestMonthCountedOncePerWrite(t *testing.T) {
	ctx := context.Background()
	w := testWarehouse(t, "")
	storeFixtures(t, w, "2026-10")
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	ask := func() int {
		t.Helper()
		if got, err := w.largestMonth(ctx); err != nil || got != int64(len(fixtureDomains)) {
			t.Fatalf("largestMonth = %d, %v; want %d", got, err, len(fixtureDomains))
		}
		w.largest.mu.Lock()
		defer w.largest.mu.Unlock()
		return w.largest.counts
	}
	first := ask()
	if again := ask() + ask(); again != 2*first {
		t.Fatalf("two more asks without a write counted again (%d, then %d in all)", first, again/2)
	}
	storeFixtures(t, w, "2026-11")
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if after := ask(); after <= first {
		t.Fatalf("an ask after a data commit did not count again (%d counts before it, %d after)", first, after)
	}
}

// TestSetMemoryLimitOnlyWhenItChanges: another limit is set and restored to the one the
// warehouse opened with; asking for the limit in force then sets nothing (no SET: each one
// also purges DuckDB's arenas) and leaves it as it was.
func TestSetMemoryLimitOnlyWhenItChanges(t *testing.T) {
	w := testWarehouse(t, "")
	ctx := context.Background()
	setting := func() string { t.Helper(); return duckdbSetting(t, w, "memory_limit") }
	opened := setting()
	restore, err := w.setMemoryLimit(ctx, "300MB")
	if err != nil {
		t.Fatal(err)
	}
	if got := setting(); got == opened {
		t.Errorf("memory_limit still %s after setting 300MB", got)
	}
	if w.memoryLimit != "300MB" {
		t.Errorf("the limit in force is recorded as %q, want 300MB", w.memoryLimit)
	}
	restore()
	if got := setting(); got != opened {
		t.Errorf("memory_limit %s after the restore, want %s as opened", got, opened)
	}
	if w.memoryLimit != w.opts.LoadMemoryLimit {
		t.Errorf("the limit in force is recorded as %q after the restore, want %q", w.memoryLimit, w.opts.LoadMemoryLimit)
	}
	if _, err := w.load.ExecContext(ctx, `SET memory_limit = '200MB'`); err != nil {
		t.Fatal(err)
	}
	changed := setting()
	restore, err = w.setMemoryLimit(ctx, w.opts.LoadMemoryLimit) // recorded as in force: not set
	if err != nil {
		t.Fatal(err)
	}
	if got := setting(); got != changed {
		t.Errorf("memory_limit %s, want %s: the limit recorded as in force was set again", got, changed)
	}
	restore()
}

// duckdbSetting is the value of DuckDB's setting name on w's load connection.
func duckdbSetting(t *testing.T, w *Warehouse, name string) string {
	t.Helper()
	var v string
	if err := w.load.QueryRowContext(context.Background(), `SELECT current_setting(?)`, name).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestReleaseNativeAtMostOnceASecond: a release within a second of the last does nothing
// (each one walks every free page and makes the next query fault them in again); one two
// seconds after it releases. The last release is set, not waited for.
func TestReleaseNativeAtMostOnceASecond(t *testing.T) {
	w := testWarehouse(t, "")
	w.lastReleased.Store(0)
	w.releaseNative()
	if w.lastReleased.Load() == 0 {
		t.Fatal("the first release was skipped")
	}
	// Just now, as far as any stall of this goroutine can tell: a minute ahead.
	recent := time.Now().Add(time.Minute).UnixNano()
	w.lastReleased.Store(recent)
	w.releaseNative()
	if got := w.lastReleased.Load(); got != recent {
		t.Error("a release within a second of the last was not skipped")
	}
	old := time.Now().Add(-2 * time.Second).UnixNano()
	w.lastReleased.Store(old)
	w.releaseNative()
	if got := w.lastReleased.Load(); got == old {
		t.Error("a release two seconds after the last was skipped")
	}
}
