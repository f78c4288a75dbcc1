package warehouse

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"sitewatch/schema"
	"sitewatch/schema/flatten"
)

// Rebuild re-derives every derived table, the countries table and the Parquet tree from
// raw_responses, for one snapshot or, with "", every stored snapshot. It calls no API. Each
// snapshot is replaced in one transaction. A domain whose stored bodies no longer flatten is
// skipped with a warning (it stays unloaded, so the next run refetches it). It returns the
// number of domains loaded.
func (w *Warehouse) Rebuild(ctx context.Context, snapshot string) (domains int, err error) {
	var snapshots []string
	if snapshot != "" {
		if err := checkSnapshot(snapshot); err != nil {
			return 0, fmt.Errorf("rebuild: %w", err)
		}
		var stored int
		if err := w.db.QueryRowContext(ctx, `SELECT count(*) FROM raw_responses WHERE snapshot_month = ?`, snapshot).Scan(&stored); err != nil {
			return 0, fmt.Errorf("rebuild: %w", err)
		}
		if stored == 0 {
			return 0, fmt.Errorf("rebuild: no stored responses for snapshot %s (see `sitewatch status` for the snapshots run so far)", snapshot)
		}
		snapshots = []string{snapshot}
	} else {
		err := QueryEach(ctx, w.db, `SELECT DISTINCT snapshot_month FROM raw_responses ORDER BY 1`, nil, func(rows *sql.Rows) error {
			var s string
			snapshots = append(snapshots, s)
			return rows.Scan(&snapshots[len(snapshots)-1])
		})
		if err != nil {
			return 0, fmt.Errorf("rebuild: list snapshots: %w", err)
		}
	}
	w.bulk.Store(true)
	defer w.bulk.Store(false)
	restore, err := w.setMemoryLimit(ctx, w.opts.BulkMemoryLimit)
	if err != nil {
		return 0, fmt.Errorf("rebuild: %w", err)
	}
	defer restore()
	if err := w.rebuildCountries(ctx); err != nil {
		return 0, fmt.Errorf("rebuild: %w", err)
	}
	for _, s := range snapshots {
		n, times, err := w.rebuildSnapshot(ctx, s)
		domains += n
		if err != nil {
			return domains, fmt.Errorf("rebuild snapshot %s: %w", s, err)
		}
		w.log.Info("rebuilt snapshot from raw responses", "snapshot", s, "domains", n, "times", times)
	}
	w.refreshStoredLists(ctx) // the rebuilt months' history, and the later months reading it
	return domains, nil
}

// rebuildSnapshot replaces snapshot's derived rows, runs its quality checks and exports its
// Parquet partitions, timing each phase.
//
// The checks and the export run on rebuildThreads too, not only the inserts: with DuckDB's two
// threads the goroutine of each statement busy-polls while the other thread works, which cost
// the whole command 1.2–1.5 s of its 9–10 s of CPU at 10,000 domains (checks 1.1 → 0.7 s, export
// 2.4–2.8 → 1.4–1.6 s).
func (w *Warehouse) rebuildSnapshot(ctx context.Context, snapshot string) (int, RebuildTimes, error) {
	restoreThreads, err := w.useRebuildThreads(ctx)
	if err != nil {
		return 0, RebuildTimes{}, err
	}
	defer restoreThreads()
	n, times, err := w.rebuildTables(ctx, snapshot)
	if err != nil {
		return n, times, err
	}
	if err := w.checkAndExport(ctx, snapshot, &times); err != nil {
		return n, times, err
	}
	err = w.load.QueryRowContext(ctx, `SELECT current_setting('threads')`).Scan(&times.Threads)
	return n, times, err
}

// checkAndExport runs the quality checks of the rebuilt snapshot and exports its Parquet
// files. On one DuckDB thread each statement uses one core, so the snapshot tables' export runs
// on the read connection beside the checks on the load connection (they write quality_checks
// only, which this export does not read); what follows the checks (quality_checks with the
// run-health tables, the raw answers, countries) exports after both. Times.Checks is the
// checks' time, times.Export the export's time beyond them.
func (w *Warehouse) checkAndExport(ctx context.Context, snapshot string, times *RebuildTimes) error {
	start := time.Now()
	if w.opts.ParquetDir == "" {
		w.checkQuietly(ctx, snapshot)
		times.Checks = time.Since(start)
		return nil
	}
	if err := checkSnapshot(snapshot); err != nil {
		return fmt.Errorf("export Parquet: %w", err)
	}
	aside := make(chan error, 1)
	go func() { aside <- w.exportSnapshotTablesAside(ctx, snapshot) }()
	w.checkQuietly(ctx, snapshot) // quality_checks follow the rebuilt rows (and are exported below)
	times.Checks = time.Since(start)
	err := <-aside
	if err == nil {
		err = w.unorderedExport(ctx, func(ctx context.Context) error { return w.exportBesideSnapshotTables(ctx, snapshot) })
	}
	times.Export = time.Since(start) - times.Checks
	if err != nil {
		return fmt.Errorf("export Parquet of snapshot %s to %s: %w", snapshot, w.opts.ParquetDir, err)
	}
	return nil
}

// exportSnapshotTablesAside exports the snapshot tables of snapshot on the read connection, in
// one read transaction of its own, so that the files agree with each other. It does not take
// mu: the caller runs it while nothing writes the snapshot tables.
func (w *Warehouse) exportSnapshotTablesAside(ctx context.Context, snapshot string) (err error) {
	written := w.snapshotTableSources(ctx, snapshot) // before BEGIN: a failed read would abort it
	// BEGIN and COMMIT run without ctx, as txLocked's: the transaction must end either way.
	if _, err := w.read.ExecContext(context.Background(), `BEGIN TRANSACTION`); err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() {
		end := "COMMIT"
		if err != nil {
			end = "ROLLBACK"
		}
		if _, eerr := w.read.ExecContext(context.Background(), end); eerr != nil {
			err = errors.Join(err, fmt.Errorf("%s: %w", strings.ToLower(end), eerr))
		}
	}()
	// A global setting, as unordered sets it (the Parquet writer streams row groups), set and
	// reset on this connection: the load connection is in the checks' transaction.
	if _, err := w.read.ExecContext(ctx, `SET preserve_insertion_order = false`); err != nil {
		return fmt.Errorf("set preserve_insertion_order: %w", err)
	}
	defer func() {
		if _, err := w.read.ExecContext(context.Background(), `RESET preserve_insertion_order`); err != nil {
			w.log.Warn("reset preserve_insertion_order", "err", err)
		}
	}()
	return w.exportSnapshotTables(ctx, w.read, snapshot, written)
}

// setMemoryLimit sets DuckDB's (global) memory_limit and returns a function restoring the
// previous value. A limit equal to the one in force is not set again: each SET memory_limit
// also purges every jemalloc arena (BufferPool::SetLimit calls Allocator::FlushAll), and the
// pages the next query needs then fault in again, zeroed (docs/internals.md, "What a release
// of memory costs").
func (w *Warehouse) setMemoryLimit(ctx context.Context, limit string) (restore func(), err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	previous := w.memoryLimit
	if limit == previous {
		return func() {}, nil
	}
	if err := w.setMemoryLimitLocked(ctx, limit); err != nil {
		return nil, err
	}
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if err := w.setMemoryLimitLocked(context.Background(), previous); err != nil {
			w.log.Warn("restore DuckDB's memory_limit", "value", previous, "err", err)
		}
	}, nil
}

// setMemoryLimitLocked sets DuckDB's memory_limit and records it as the one in force (w.mu held).
func (w *Warehouse) setMemoryLimitLocked(ctx context.Context, limit string) error {
	if _, err := w.load.ExecContext(ctx, `SET memory_limit = `+sqlString(limit)); err != nil {
		return fmt.Errorf("set DuckDB setting memory_limit to %s: %w", limit, err)
	}
	w.memoryLimit = limit
	return nil
}

// withAnalysisMemory runs fn (quality checks, Parquet export) under the load's memory_limit
// (under Rebuild: BulkMemoryLimit), then hands the memory fn freed back to the kernel. Under
// MemoryLimit (256 MB) the checks' hash tables and the export's buffers grew with the month
// and made the run's peak (333 MB at 10,000 domains against 217 MB); under the load's limit
// DuckDB spills what does not fit to <file>.tmp/.
func (w *Warehouse) withAnalysisMemory(ctx context.Context, fn func() error) error {
	limit := w.opts.LoadMemoryLimit
	if w.bulk.Load() {
		limit = w.opts.BulkMemoryLimit
	}
	return w.withMemoryLimit(ctx, limit, fn)
}

// withMemoryLimit runs fn under DuckDB's memory_limit limit, then restores the writer's limit
// and hands the memory fn freed back to the kernel (releaseNative: at most once a second).
func (w *Warehouse) withMemoryLimit(ctx context.Context, limit string, fn func() error) error {
	w.fitThreads(ctx)
	restore, err := w.setMemoryLimit(ctx, limit)
	if err != nil {
		return err
	}
	err = fn()
	restore()
	w.releaseNative()
	return err
}

// releaseNative hands the native memory DuckDB freed back to the kernel (releaseNativeMemory)
// at most once a second: a release walks every free page of glibc's heap and jemalloc's
// arenas, and every page it returns faults in again, zeroed, when the next query allocates it.
// After each operation of a small command that cost more than the operation's queries
// (docs/internals.md, "What a release of memory costs"); a second bounds it at any size.
func (w *Warehouse) releaseNative() {
	now := time.Now().UnixNano()
	last := w.lastReleased.Load()
	if now-last < int64(time.Second) || !w.lastReleased.CompareAndSwap(last, now) {
		return
	}
	releaseNativeMemory()
}

// rebuildCountries reloads countries from the newest stored country-metadata response.
func (w *Warehouse) rebuildCountries(ctx context.Context) error {
	var stored []byte
	var encoding string
	err := w.db.QueryRowContext(ctx, `SELECT body, body_encoding FROM raw_responses WHERE endpoint = 'country-metadata'
		ORDER BY snapshot_month DESC, fetched_at DESC LIMIT 1`).Scan(&stored, &encoding)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read stored country-metadata: %w", err)
	}
	body, err := decompressBody(stored, encoding)
	if err != nil {
		return fmt.Errorf("stored country-metadata: %w", err)
	}
	cm, err := schema.DecodeCountries(body)
	if err != nil {
		return fmt.Errorf("stored country-metadata: %w", err)
	}
	return w.inTx(ctx, func(ctx context.Context) error { return w.replaceCountries(ctx, cm) })
}

// rebuildTables makes every derived row of snapshot what its stored bodies flatten to, in one
// transaction, by flattening the stored bodies in bounded batches: a reader pages through
// raw_responses (BatchDomains domains at a time, on its own connection), one worker per core
// decodes and flattens pages into Arrow records, and this goroutine takes the pages in order
// and writes what differs (rebuildDiff): a table's rows stay as they are while each page's new
// rows equal the stored rows of its domains, and from its first page that differs on, the
// table's stored rows are deleted and the new ones inserted. Memory is bounded by about two
// pages per worker, whatever the number of domains.
func (w *Warehouse) rebuildTables(ctx context.Context, snapshot string) (int, RebuildTimes, error) {
	var loaded atomic.Int64
	var times RebuildTimes
	restoreThreads, err := w.useRebuildThreads(ctx)
	if err != nil {
		return 0, times, err
	}
	defer restoreThreads()
	start := time.Now()
	var fnDone time.Time
	err = w.inTx(ctx, func(ctx context.Context) error {
		defer func() { fnDone = time.Now() }()
		if err := w.unordered(ctx); err != nil {
			return err
		}
		defer w.ordered()
		var domains []string
		err := QueryEach(ctx, w.load, `SELECT domain FROM raw_responses
			WHERE snapshot_month = ? AND endpoint IN ('site-overview', 'site-similar')
			GROUP BY domain HAVING count(DISTINCT endpoint) = 2 ORDER BY domain`, []any{snapshot},
			func(rows *sql.Rows) error {
				var d string
				err := rows.Scan(&d)
				domains = append(domains, d)
				return err
			})
		if err != nil {
			return fmt.Errorf("list stored domains: %w", err)
		}
		diff, err := w.newRebuildDiff(ctx, snapshot, pageLows(domains, w.opts.BatchDomains))
		if err != nil {
			return err
		}
		times.Clear = time.Since(start)
		if err := w.loadStream(ctx, snapshot, domains, diff, &loaded, &times); err != nil {
			return err
		}
		times.TablesRewritten = diff.rewritten()
		return nil
	})
	if !fnDone.IsZero() {
		times.Commit = time.Since(fnDone)
	}
	return int(loaded.Load()), times, err
}

// pageLows returns the lowest domain of each page of domains (sorted), pages of size domains,
// the first page's as "": page k holds every domain from lows[k] up to, not including,
// lows[k+1], so the pages cover every domain a table may hold, listed or not.
func pageLows(domains []string, size int) []string {
	var lows []string
	for start := 0; start < len(domains); start += size {
		lows = append(lows, domains[start])
	}
	if len(lows) > 0 {
		lows[0] = ""
	}
	return lows
}

// pageJob is one page of stored bodies on its way through the workers; done receives its
// records (nil when it was skipped), so the inserter can take the pages in order.
type pageJob struct {
	page []*rawDomain
	done chan []arrow.Record
}

// loadStream runs the read → flatten → write pipeline over domains (sorted) inside the
// caller's transaction, adding the time of each stage to times. The pages reach diff in the
// order of domains.
func (w *Warehouse) loadStream(ctx context.Context, snapshot string, domains []string, diff *rebuildDiff, loaded *atomic.Int64, times *RebuildTimes) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// One worker per core (at least two, so decoding overlaps the reader and the inserts on a
	// single core too); pages wait for the inserter, decoded or not, one per worker
	// (rebuildRecordBuffer).
	workers := max(2, runtime.GOMAXPROCS(0))
	jobs := make(chan *pageJob, 1)
	buffered := workers
	if rebuildRecordBuffer > 0 {
		buffered = rebuildRecordBuffer
	}
	order := make(chan *pageJob, buffered)

	var readErr error
	var read, decode stageClock
	go func() {
		defer close(order)
		defer close(jobs)
		readErr = w.readPages(ctx, snapshot, domains, jobs, order, &read)
	}()

	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() { w.flattenPages(ctx, snapshot, jobs, loaded, &decode) })
	}

	insertErr := w.writeAll(ctx, order, diff, cancel, times)
	wg.Wait() // the workers release their builders; jobs is closed before order, so they are done
	if insertErr == nil && readErr == nil && ctx.Err() == nil {
		insertErr = diff.finish(ctx)
	}
	times.Read, times.Decode = read.sum(), decode.sum()
	if insertErr != nil {
		return insertErr
	}
	if readErr != nil {
		return readErr
	}
	return ctx.Err()
}

// flattenPages decodes and flattens each page of jobs into one record per snapshot table and
// hands them to the page's done; a domain whose bodies do not flatten is skipped with a warning.
func (w *Warehouse) flattenPages(ctx context.Context, snapshot string, jobs <-chan *pageJob, loaded *atomic.Int64, clock *stageClock) {
	batch := flatten.NewBatch(w.mem)
	defer batch.Release()
	var scratch []byte // each body is decompressed here, then decoded (addTo)
	for job := range jobs {
		if ctx.Err() != nil {
			job.done <- nil
			continue
		}
		start := time.Now()
		for _, d := range job.page {
			if err := d.addTo(batch, snapshot, &scratch); err != nil {
				w.log.Warn("rebuild: skipping a domain whose stored response does not flatten; `sitewatch run --refresh` refetches it",
					"snapshot", snapshot, "domain", d.domain, "err", err)
			}
		}
		loaded.Add(int64(batch.Domains()))
		recs := batch.NewRecords()
		clock.add(time.Since(start))
		job.done <- recs // buffered: never blocks
	}
}

// writeAll hands each page's records to diff in page order, timing the writes and the waits
// for the next page; on the first error it cancels the pipeline and drains it.
func (w *Warehouse) writeAll(ctx context.Context, order <-chan *pageJob, diff *rebuildDiff, cancel func(), times *RebuildTimes) error {
	var writeErr error
	waitStart := time.Now()
	for page := 0; ; page++ {
		job, ok := <-order
		if !ok {
			return writeErr
		}
		recs := <-job.done
		start := time.Now()
		times.Wait += start.Sub(waitStart)
		if writeErr == nil && recs != nil {
			if err := diff.page(ctx, page, recs); err != nil {
				writeErr = err
				cancel()
			}
		}
		release(recs)
		waitStart = time.Now()
		times.Insert += waitStart.Sub(start)
	}
}

func release(recs []arrow.Record) {
	for _, r := range recs {
		r.Release()
	}
}

// readDomains bounds the domains one query of raw_responses reads. DuckDB 1.1 stores bodies
// over a few KB as overflow strings and pins about 120 KB of buffer per body it reads in a
// vector, so reading 1000 domains (2000 bodies) at once needs about 250 MB of its memory.
const readDomains = 200

// readPages sends the stored bodies of domains, BatchDomains at a time, each page to order (the
// inserter's queue, in page order) and then to jobs (the workers). It reads through
// Arrow on its own connection (read), not the load connection, so it runs alongside the
// inserts; Arrow results avoid database/sql's per-value conversion, and every string is
// copied before its record is released (it points into DuckDB's memory).
func (w *Warehouse) readPages(ctx context.Context, snapshot string, domains []string, jobs, order chan<- *pageJob, clock *stageClock) error {
	size := w.opts.BatchDomains
	for start := 0; start < len(domains); start += size {
		end := min(start+size, len(domains))
		var page []*rawDomain
		began := time.Now()
		for from := start; from < end; from += readDomains {
			to := min(from+readDomains, end)
			part, err := w.readPage(ctx, snapshot, domains[from], domains[to-1], to-from)
			if err != nil {
				return fmt.Errorf("read stored responses: %w", err)
			}
			page = append(page, part...)
		}
		clock.add(time.Since(began))
		job := &pageJob{page: page, done: make(chan []arrow.Record, 1)}
		select {
		case order <- job:
		case <-ctx.Done():
			return ctx.Err()
		}
		select {
		case jobs <- job:
		case <-ctx.Done():
			job.done <- nil // the inserter waits for every job it was given
			return ctx.Err()
		}
	}
	return nil
}

// readPage returns the domains between first and last (inclusive) with both bodies stored.
func (w *Warehouse) readPage(ctx context.Context, snapshot, first, last string, sizeHint int) ([]*rawDomain, error) {
	rdr, err := w.readAr.QueryContext(ctx, `SELECT domain, endpoint, fetched_at, body, body_encoding FROM raw_responses
		WHERE snapshot_month = ? AND endpoint IN ('site-overview', 'site-similar') AND domain BETWEEN ? AND ?`,
		snapshot, first, last)
	if err != nil {
		return nil, err
	}
	defer rdr.Release()
	byDomain := make(map[string]*rawDomain, sizeHint)
	page := make([]*rawDomain, 0, sizeHint)
	for rdr.Next() {
		rec := rdr.Record()
		domainCol, ok1 := rec.Column(0).(*array.String)
		endpointCol, ok2 := rec.Column(1).(*array.String)
		fetchedCol, ok3 := rec.Column(2).(*array.Timestamp)
		bodyCol, ok4 := rec.Column(3).(*array.Binary)
		encodingCol, ok5 := rec.Column(4).(*array.String)
		if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 {
			return nil, fmt.Errorf("unexpected Arrow types of raw_responses: %s", rec.Schema())
		}
		unit := fetchedCol.DataType().(*arrow.TimestampType).Unit
		for i := range int(rec.NumRows()) {
			domain := domainCol.Value(i)
			p := byDomain[domain]
			if p == nil {
				p = &rawDomain{domain: strings.Clone(domain)}
				byDomain[p.domain] = p
				page = append(page, p)
			}
			fetched := fetchedCol.Value(i).ToTime(unit)
			p.set(schema.Endpoint(endpointCol.Value(i)), fetched, bytes.Clone(bodyCol.Value(i)), strings.Clone(encodingCol.Value(i)))
		}
	}
	if err := rdr.Err(); err != nil {
		return nil, err
	}
	complete := page[:0]
	for _, p := range page {
		if p.hasOverview && p.hasSi {
			complete = append(complete, p)
		}
	}
	return complete, nil
}
