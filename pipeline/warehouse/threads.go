package warehouse

import (
	"context"
	"fmt"
	"strconv"
)

// parallelRows is the size, in rows of the warehouse's largest table, from which DuckDB gets
// more than one thread: two of its row groups (122,880 rows each). DuckDB splits a scan into
// one task per row group, so below that every pipeline is one task; the goroutine that runs a
// statement then busy-polls DuckDB's task queue (PendingQueryResult's loop: pthread mutexes,
// ConcurrentQueue::DequeueFromProducer) while the other thread does the work, a second core
// spent for nothing. Sixteen end-to-end tests took 53.5 s of CPU on DuckDB's default (two
// threads here) and 46.7 s with the count fitted (0.87; medians of 3, alternating;
// docs/internals.md, "DuckDB's threads follow the data").
const parallelRows = 2 * 122_880

// threadFit is the thread count fitThreads last set and what it was fitted to (under
// Warehouse.mu, as memory_limit: both are SETs on the load connection).
type threadFit struct {
	defaults int    // DuckDB's own thread count (one per core), read at Open
	current  int    // the count in force, as this Warehouse set it
	fitted   bool   // current was fitted to the data as of writes
	writes   uint64 // dataWrites when fitted
	pinned   int    // rebuilds holding their own count (useRebuildThreads)
	sets     int    // how many times it set the count (for tests)
}

// readDefaultThreads records DuckDB's default thread count (at Open, before any SET; w.mu not
// needed yet).
func (w *Warehouse) readDefaultThreads(ctx context.Context) error {
	var threads string
	if err := w.load.QueryRowContext(ctx, `SELECT current_setting('threads')`).Scan(&threads); err != nil {
		return fmt.Errorf("read DuckDB's threads: %w", err)
	}
	n, err := strconv.Atoi(threads)
	if err != nil || n < 1 {
		return fmt.Errorf("read DuckDB's threads: %q is not a count", threads)
	}
	w.threads.defaults, w.threads.current = n, n
	return nil
}

// fitThreads gives DuckDB one thread while the largest table is smaller than parallelRows and
// its default count from there, so a query uses a second core only where it has a second task
// for it. It runs at Open and before each analysis (checks, export, stored lists) and counts
// again only after a data commit. A failure keeps the count in force: threads change the CPU a
// query spends, never its answer.
func (w *Warehouse) fitThreads(ctx context.Context) {
	w.mu.Lock()
	defer w.mu.Unlock()
	writes := w.dataWrites.Load()
	if w.threads.pinned > 0 || (w.threads.fitted && w.threads.writes == writes) {
		return
	}
	var rows int64
	err := w.load.QueryRowContext(ctx, `SELECT coalesce(max(estimated_size), 0) FROM duckdb_tables() WHERE database_name = current_database()`).Scan(&rows)
	if err != nil {
		w.log.Warn("count the warehouse's rows to fit DuckDB's threads; they stay as they are", "threads", w.threads.current, "err", err)
		return
	}
	want := threadsFor(rows, w.threads.defaults)
	if err := w.setThreadsLocked(ctx, want); err != nil {
		w.log.Warn("fit DuckDB's threads to the warehouse's size; they stay as they are", "threads", w.threads.current, "want", want, "err", err)
		return
	}
	w.threads.fitted, w.threads.writes = true, writes
}

// setThreadsLocked sets DuckDB's thread count to n unless it is in force already (w.mu held).
func (w *Warehouse) setThreadsLocked(ctx context.Context, n int) error {
	if n == w.threads.current {
		return nil
	}
	if _, err := w.load.ExecContext(ctx, `SET threads = `+strconv.Itoa(n)); err != nil {
		return fmt.Errorf("set DuckDB's threads to %d: %w", n, err)
	}
	w.threads.current = n
	w.threads.sets++
	return nil
}

// threadsFor is the thread count for a largest table of rows: one below parallelRows, else
// DuckDB's default.
func threadsFor(rows int64, defaults int) int {
	if rows < parallelRows {
		return 1
	}
	return defaults
}
