package warehouse

import (
	"context"
	"fmt"
)

// rebuildThreads is DuckDB's thread count while a rebuild inserts and commits, and (Rebuild)
// while it checks and exports. With more than
// one, the goroutine running each statement busy-polls DuckDB's task queue while DuckDB's other
// thread works (pthread mutexes, ConcurrentQueue::DequeueFromProducer: 27 % of a rebuild's CPU
// samples), on the cores the decoding workers need, and the parallel insert appends each
// statement's rows twice (PhysicalInsert::Combine). On one thread each statement runs in its
// caller's goroutine while the decoders use the other cores: 30 % less CPU and less wall time
// (docs/warehouse-internals.md, "The rebuild on one DuckDB thread (issue 29)").
// "" leaves DuckDB's default (one thread per core), as 488928e and f03e3ef ran. BenchmarkRebuild
// sets it to "" in alternate runs (withFastReleasePath), to pair this path with 488928e's in the
// same machine load; nothing else changes it.
var rebuildThreads = "1"

// rebuildRecordBuffer is how many decoded pages (one record per table each) wait for the
// inserter; 0 means one per decoding worker, so a worker that finishes while a page is being
// inserted starts its next page instead of waiting. 488928e buffered one; BenchmarkRebuild sets
// that in its runs of 488928e's path.
var rebuildRecordBuffer = 0

// useRebuildThreads sets DuckDB's threads to rebuildThreads (unless "") and returns a function
// restoring the previous count. Until then fitThreads leaves the count alone.
func (w *Warehouse) useRebuildThreads(ctx context.Context) (restore func(), err error) {
	if rebuildThreads == "" {
		return func() {}, nil
	}
	w.pinThreads(1)
	restoreSetting, err := w.setSetting(ctx, "threads", rebuildThreads)
	if err != nil {
		w.pinThreads(-1)
		return nil, err
	}
	return func() {
		restoreSetting()
		w.pinThreads(-1)
	}, nil
}

// pinThreads adds delta to the rebuilds holding DuckDB's thread count.
func (w *Warehouse) pinThreads(delta int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.threads.pinned += delta
}

// setSetting sets one of DuckDB's global settings (memory_limit, threads) and returns a function
// restoring the previous value. The caller must not hold mu.
func (w *Warehouse) setSetting(ctx context.Context, name, value string) (restore func(), err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var prev string
	if err := w.load.QueryRowContext(ctx, `SELECT current_setting(`+sqlString(name)+`)`).Scan(&prev); err != nil {
		return nil, fmt.Errorf("read DuckDB setting %s: %w", name, err)
	}
	if _, err := w.load.ExecContext(ctx, `SET `+name+` = `+sqlString(value)); err != nil {
		return nil, fmt.Errorf("set DuckDB setting %s to %s: %w", name, value, err)
	}
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if _, err := w.load.ExecContext(context.Background(), `SET `+name+` = `+sqlString(prev)); err != nil {
			w.log.Warn("restore a DuckDB setting", "setting", name, "value", prev, "err", err)
		}
	}, nil
}
