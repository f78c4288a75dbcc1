package warehouse

import (
	"context"
)

// rebuildThreads is DuckDB's thread count while a rebuild inserts and commits, and (Rebuild)
// while it checks and exports. With more than
// one, the goroutine running each statement busy-polls DuckDB's task queue while DuckDB's other
// thread works (pthread mutexes, ConcurrentQueue::DequeueFromProducer: 27 % of a rebuild's CPU
// samples), on the cores the decoding workers need, and the parallel insert appends each
// statement's rows twice (PhysicalInsert::Combine). On one thread each statement runs in its
// caller's goroutine while the decoders use the other cores: 30 % less CPU and less wall time
// (docs/warehouse-internals.md, "The rebuild on one DuckDB thread (issue 29)").
// 0 leaves DuckDB's default (one thread per core), as 488928e and f03e3ef ran. BenchmarkRebuild
// sets it to 0 in alternate runs (withFastReleasePath), to pair this path with 488928e's in the
// same machine load; nothing else changes it.
var rebuildThreads = 1

// rebuildRecordBuffer is how many decoded pages (one record per table each) wait for the
// inserter; 0 means one per decoding worker, so a worker that finishes while a page is being
// inserted starts its next page instead of waiting. 488928e buffered one; BenchmarkRebuild sets
// that in its runs of 488928e's path.
var rebuildRecordBuffer = 0

// useRebuildThreads sets DuckDB's threads to rebuildThreads (unless 0) and returns a function
// restoring the count it found. Until then fitThreads leaves the count alone. The count lives in
// one record, w.threads.current, which this and fitThreads both keep true.
func (w *Warehouse) useRebuildThreads(ctx context.Context) (restore func(), err error) {
	if rebuildThreads == 0 {
		return func() {}, nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	saved := w.threads.current
	if err := w.setThreadsLocked(ctx, rebuildThreads); err != nil {
		return nil, err
	}
	w.threads.pinned++
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.threads.pinned--
		if err := w.setThreadsLocked(context.Background(), saved); err != nil {
			w.log.Warn("restore DuckDB's threads after a rebuild; they stay as the rebuild set them", "threads", w.threads.current, "want", saved, "err", err)
		}
	}, nil
}
