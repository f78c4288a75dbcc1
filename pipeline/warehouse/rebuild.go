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
	return w.exportSnapshotTables(ctx, w.read, snapshot)
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

// rebuildTables replaces every derived row of snapshot, in one transaction, by flattening the
// stored bodies in bounded batches: a reader pages through raw_responses (BatchDomains domains
// at a time, on its own connection), one worker per core decodes and flattens pages into Arrow
// records, and this goroutine inserts them. Memory is bounded by about two pages per worker,
// whatever the number of domains.
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
		for _, t := range flatten.SnapshotTables {
			if _, err := w.load.ExecContext(ctx, `DELETE FROM `+t.Name+` WHERE snapshot_month = ?`, snapshot); err != nil {
				return fmt.Errorf("clear %s: %w", t.Name, err)
			}
		}
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
		times.Clear = time.Since(start)
		return w.loadStream(ctx, snapshot, domains, &loaded, &times)
	})
	if !fnDone.IsZero() {
		times.Commit = time.Since(fnDone)
	}
	return int(loaded.Load()), times, err
}

// loadStream runs the read → flatten → insert pipeline over domains (sorted) inside the
// caller's transaction, adding the time of each stage to times.
func (w *Warehouse) loadStream(ctx context.Context, snapshot string, domains []string, loaded *atomic.Int64, times *RebuildTimes) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// One worker per core (at least two, so decoding overlaps the reader and the inserts on a
	// single core too); records buffer one batch per worker (rebuildRecordBuffer).
	workers := max(2, runtime.GOMAXPROCS(0))
	pages := make(chan []*rawDomain, 1)
	buffered := workers
	if rebuildRecordBuffer > 0 {
		buffered = rebuildRecordBuffer
	}
	records := make(chan []arrow.Record, buffered)

	var readErr error
	var read, decode stageClock
	go func() {
		defer close(pages)
		readErr = w.readPages(ctx, snapshot, domains, pages, &read)
	}()

	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.flattenPages(ctx, snapshot, pages, records, loaded, &decode)
		}()
	}
	go func() {
		wg.Wait()
		close(records)
	}()

	insertErr := w.insertAll(ctx, records, cancel, times)
	times.Read, times.Decode = read.sum(), decode.sum()
	if insertErr != nil {
		return insertErr
	}
	if readErr != nil {
		return readErr
	}
	return ctx.Err()
}

// flattenPages decodes and flattens each page of pages into one record per snapshot table and
// sends them to records; a domain whose bodies do not flatten is skipped with a warning.
func (w *Warehouse) flattenPages(ctx context.Context, snapshot string, pages <-chan []*rawDomain, records chan<- []arrow.Record, loaded *atomic.Int64, clock *stageClock) {
	batch := flatten.NewBatch(w.mem)
	defer batch.Release()
	var scratch []byte // each body is decompressed here, then decoded (addTo)
	for page := range pages {
		if ctx.Err() != nil {
			continue
		}
		start := time.Now()
		for _, d := range page {
			if err := d.addTo(batch, snapshot, &scratch); err != nil {
				w.log.Warn("rebuild: skipping a domain whose stored response does not flatten; `sitewatch run --refresh` refetches it",
					"snapshot", snapshot, "domain", d.domain, "err", err)
			}
		}
		n := batch.Domains()
		recs := batch.NewRecords()
		clock.add(time.Since(start))
		select {
		case records <- recs:
			loaded.Add(int64(n))
		case <-ctx.Done():
			release(recs)
		}
	}
}

// insertAll inserts each page's records into their tables, timing the inserts and the waits
// for the next page; on the first error it cancels the pipeline and drains it.
func (w *Warehouse) insertAll(ctx context.Context, records <-chan []arrow.Record, cancel func(), times *RebuildTimes) error {
	var insertErr error
	waitStart := time.Now()
	for recs := range records {
		start := time.Now()
		times.Wait += start.Sub(waitStart)
		if insertErr == nil {
			for i, rec := range recs {
				if err := w.insertRecord(ctx, flatten.SnapshotTables[i], rec); err != nil {
					insertErr = err
					cancel()
					break
				}
			}
		}
		release(recs)
		waitStart = time.Now()
		times.Insert += waitStart.Sub(start)
	}
	return insertErr
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

// readPages sends the stored bodies of domains, BatchDomains at a time. It reads through
// Arrow on its own connection (read), not the load connection, so it runs alongside the
// inserts; Arrow results avoid database/sql's per-value conversion, and every string is
// copied before its record is released (it points into DuckDB's memory).
func (w *Warehouse) readPages(ctx context.Context, snapshot string, domains []string, out chan<- []*rawDomain, clock *stageClock) error {
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
		select {
		case out <- page:
		case <-ctx.Done():
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
