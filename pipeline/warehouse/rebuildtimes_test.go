package warehouse

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"sitewatch/pipeline/model"
	"sitewatch/schema/flatten"
)

// TestRebuildTimesPhases: a rebuild times each of its phases (clear, read, decode, insert,
// commit, checks, export), and the phases that do not overlap add up to its total.
func TestRebuildTimesPhases(t *testing.T) {
	w := testWarehouse(t, "")
	ctx := context.Background()
	if _, err := storeGenerated(ctx, w, snap, 60, ""); err != nil {
		t.Fatal(err)
	}
	n, times, err := w.rebuildSnapshot(ctx, snap)
	if err != nil {
		t.Fatal(err)
	}
	if n != 60 {
		t.Fatalf("rebuilt %d domains, want 60", n)
	}
	for _, p := range []struct {
		name string
		d    time.Duration
	}{
		{"Clear", times.Clear}, {"Read", times.Read}, {"Decode", times.Decode}, {"Insert", times.Insert},
		{"Commit", times.Commit}, {"Checks", times.Checks}, {"Export", times.Export},
	} {
		if p.d <= 0 {
			t.Errorf("%s = %v, want > 0 (%+v)", p.name, p.d, times)
		}
	}
	if sum := times.Clear + times.Insert + times.Wait + times.Commit + times.Checks + times.Export; times.Total() != sum {
		t.Errorf("Total() = %v, want %v", times.Total(), sum)
	}
}

// TestRebuildOneDuckDBThread: a rebuild inserts, commits, checks and exports on one DuckDB
// thread (no caller busy-polling DuckDB's task queue beside the decoders), and puts the thread
// count back after it, whether it succeeded or failed.
func TestRebuildOneDuckDBThread(t *testing.T) {
	w := testWarehouse(t, "")
	ctx := context.Background()
	if _, err := storeGenerated(ctx, w, snap, 20, ""); err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	err := w.setThreadsLocked(ctx, 3)
	w.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	threads := func() int {
		t.Helper()
		var n int
		if err := w.DB().QueryRowContext(ctx, `SELECT current_setting('threads')`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	_, times, err := w.rebuildSnapshot(ctx, snap)
	if err != nil {
		t.Fatal(err)
	}
	if times.Threads != 1 {
		t.Errorf("the rebuild ran on %d DuckDB threads up to its export, want 1", times.Threads)
	}
	if got := threads(); got != 3 {
		t.Errorf("threads after the rebuild = %d, want 3 (restored)", got)
	}
	// A rebuild failing after it set the threads: a snapshot table is gone.
	if _, err := w.DB().ExecContext(ctx, `DROP TABLE site_tags`); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.rebuildSnapshot(ctx, snap); err == nil {
		t.Fatal("rebuild without the site_tags table succeeded")
	}
	if got := threads(); got != 3 {
		t.Errorf("threads after a failed rebuild = %d, want 3 (restored)", got)
	}
}

// TestRebuildExportsWhatItRebuilt: the rebuild exports the snapshot tables beside the quality
// checks, on another connection; every file it leaves holds exactly its table's rows of the
// month, quality_checks' with the checks' findings.
func TestRebuildExportsWhatItRebuilt(t *testing.T) {
	w := testWarehouse(t, "")
	ctx := context.Background()
	if _, err := storeGenerated(ctx, w, snap, 20, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Rebuild(ctx, snap); err != nil {
		t.Fatal(err)
	}
	tables := []string{model.TableRawResponses, "quality_checks"}
	for _, tab := range flatten.SnapshotTables {
		tables = append(tables, tab.Name)
	}
	for _, table := range tables {
		file := filepath.Join(w.opts.ParquetDir, table, "snapshot_month="+snap, parquetFile)
		var rows, differ int
		err := w.DB().QueryRowContext(ctx, `SELECT (SELECT count(*) FROM `+table+` WHERE snapshot_month = $1), count(*) FROM (
			(SELECT * EXCLUDE (snapshot_month) FROM `+table+` WHERE snapshot_month = $1 EXCEPT ALL SELECT * FROM read_parquet($2, hive_partitioning = false))
			UNION ALL
			(SELECT * FROM read_parquet($2, hive_partitioning = false) EXCEPT ALL SELECT * EXCLUDE (snapshot_month) FROM `+table+` WHERE snapshot_month = $1))`,
			snap, file).Scan(&rows, &differ)
		if err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		if rows == 0 || differ != 0 {
			t.Errorf("%s: %d rows in the table, %d differ from %s", table, rows, differ, file)
		}
	}
}
