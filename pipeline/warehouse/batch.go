package warehouse

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"sitewatch/pipeline/model"
	"sitewatch/schema"
	"sitewatch/schema/flatten"
)

// Store is buffered (docs/warehouse-internals.md, "Batched commits"): answers collect in a
// batch that one transaction commits when it is BatchWindow old or BatchAnswers large. Per
// answer, a commit cost a transaction, ten DELETE scans of tables that grow with the
// snapshot and ten Arrow view registrations (each leaking a little in go-duckdb 1.8.2);
// per batch, a first-time load deletes nothing and registers a dozen views whatever its size.

// DefaultBatchWindow bounds how long an answer Store accepted waits before its commit starts.
const DefaultBatchWindow = 250 * time.Millisecond

// DefaultBatchAnswers is the batch size that starts a commit before the window ends.
const DefaultBatchAnswers = 512

// defaultMaxHalves bounds the decoded bodies kept in memory while they wait for their
// partner (the other call of their domain): ~14 MB, a decoded overview being ~14 KB. A run
// keeps at most 256 calls in flight and plans a domain's two calls together, so its pairs
// wait far fewer; beyond the bound the longest-waiting give way and are read back from the
// database if their partner arrives.
const defaultMaxHalves = 1024

// pairState is what the warehouse knows of one (snapshot, domain)'s stored bodies, committed
// or pending: for each half (0 site-overview, 1 site-similar) whether a body is stored and the
// run_id it came from. It is one 64-bit word, half i in bits 32i..32i+31 (bit 31 of the half:
// stored; the low 31 bits: its runRef), because the index holds one per domain of the
// snapshot: as a struct of two bools and two refs (12 bytes, a 32-byte map slot) the map took
// 84 MB at a million domains, as a word 56 MB (TestPairIndexEntrySize).
type pairState uint64

const halfStored = 1 << 31

// stored says whether half i has a body stored.
func (s pairState) stored(i int) bool { return uint32(s>>(32*i))&halfStored != 0 }

// run is the runRef of half i's body (0 when none is stored or its run_id is unknown).
func (s pairState) run(i int) runRef { return runRef(uint32(s>>(32*i)) &^ halfStored) }

// with returns s with half i stored by run.
func (s pairState) with(i int, run runRef) pairState {
	return s.without(i) | pairState(uint32(run)|halfStored)<<(32*i)
}

// without returns s with half i not stored.
func (s pairState) without(i int) pairState { return s &^ (pairState(^uint32(0)) << (32 * i)) }

// runRef is a run_id interned by the warehouse's runRefs; 0 is "" (unknown).
type runRef uint32

// pairHalves are the decoded bodies of one pair that this process holds while they wait for
// their partner; a pair has one only while it waits (at most Warehouse.maxHalves bodies in all).
type pairHalves struct {
	seq       uint64 // when it began waiting (Warehouse.waitSeq)
	overview  *schema.SiteOverview
	similar   *schema.SiteSimilar
	ovFetched time.Time
	// partnerErr is set when a committed body read back for pairing no longer decodes.
	partnerErr error
}

// has reports whether half i is held; a nil *pairHalves holds none.
func (h *pairHalves) has(i int) bool {
	switch {
	case h == nil:
		return false
	case i == 0:
		return h.overview != nil
	default:
		return h.similar != nil
	}
}

// err is the partner's decode error; a nil *pairHalves has none.
func (h *pairHalves) err() error {
	if h == nil {
		return nil
	}
	return h.partnerErr
}

func pairIndex(ep schema.Endpoint) int {
	if ep == schema.EndpointSimilar {
		return 1
	}
	return 0
}

// rawKey names one raw_responses row.
type rawKey struct {
	snapshot, domain string
	endpoint         schema.Endpoint
}

type domainKey struct{ snapshot, domain string }

// rawRow is one raw_responses row to insert.
type rawRow struct {
	rawKey
	fetchedAt      time.Time
	body, encoding string
	runID          string
}

// batch is the pending work of one transaction.
type batch struct {
	first      time.Time // when the oldest pending item arrived
	deleteRaw  []rawKey
	clear      []domainKey // derived rows to delete before the inserts
	raws       []rawRow
	pending    map[rawKey]bool
	charges    []model.Charge
	failures   []model.FetchError
	countries  *schema.CountryMetadata
	rows       *flatten.Batch
	rowDomains int
}

func newBatch(rows *flatten.Batch) *batch {
	return &batch{pending: map[rawKey]bool{}, rows: rows}
}

func (b *batch) size() int { return len(b.raws) + len(b.charges) + len(b.failures) }

func (b *batch) empty() bool {
	return b.size() == 0 && len(b.deleteRaw) == 0 && len(b.clear) == 0 && b.countries == nil && b.rowDomains == 0
}

func (b *batch) touch() {
	if b.first.IsZero() {
		b.first = time.Now()
	}
}

func (b *batch) addCharge(c model.Charge) {
	b.touch()
	b.charges = append(b.charges, c)
}

func (b *batch) addFailure(e model.FetchError) {
	b.touch()
	b.failures = append(b.failures, e)
}

// errFlushFirst asks write to commit the pending batch and call again: the answer replaces a
// row of the pending batch, or needs a partner body that only the database holds.
var errFlushFirst = errors.New("flush first")

// write runs fn on the pending batch under the batch lock. When fn returns errFlushFirst
// (before changing anything) the pending batch is committed and fn runs again. It returns
// fn's other error, or a storage error left by an earlier background flush.
func (w *Warehouse) write(ctx context.Context, fn func(b *batch) error) error {
	for range 3 {
		w.pmu.Lock()
		if w.pending == nil {
			w.pmu.Unlock()
			return errors.New("the warehouse is closed")
		}
		err := fn(w.pending)
		if errors.Is(err, errFlushFirst) {
			w.pmu.Unlock()
			w.flushNow(ctx)
			continue
		}
		size := w.pending.size()
		late := w.flushErr
		w.flushErr = nil
		w.pmu.Unlock()
		w.signal(size)
		if size >= 2*w.opts.BatchAnswers {
			w.flushNow(ctx) // the background flush is behind: wait for it
		}
		if err != nil {
			return err
		}
		return late
	}
	return errors.New("the pending batch could not be committed first")
}

// signal wakes the background flusher: a batch started or is full.
func (w *Warehouse) signal(size int) {
	if size >= w.opts.BatchAnswers {
		select {
		case w.full <- struct{}{}:
		default:
		}
	}
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// flusher commits the pending batch BatchWindow after it started, or at once when it is full.
func (w *Warehouse) flusher() {
	defer close(w.flusherDone)
	for {
		select {
		case <-w.stop:
			return
		case <-w.wake:
		}
		w.pmu.Lock()
		first := w.pending.first
		w.pmu.Unlock()
		if !first.IsZero() {
			timer := time.NewTimer(max(0, w.opts.BatchWindow-time.Since(first)))
			select {
			case <-timer.C:
			case <-w.full:
			case <-w.stop:
			}
			timer.Stop()
		}
		w.flushNow(context.Background())
	}
}

// flushNow commits the pending batch; an error is kept for the next Store or Flush.
func (w *Warehouse) flushNow(ctx context.Context) {
	// The error is recorded before mu is released: a Flush that takes mu right after a
	// background commit failed must find its error, not return nil and let a later read
	// report it (a full disk's run then counted 0 domains loaded instead of what earlier
	// commits kept: TestDiskFullRecordsTheRealOutcome under load).
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.flushLocked(ctx); err != nil {
		w.pmu.Lock()
		w.flushErr = errors.Join(w.flushErr, err)
		w.pmu.Unlock()
	}
}

// flushQuietly commits the pending batch before a read; an error stays for the next Store or
// Flush.
func (w *Warehouse) flushQuietly() {
	if !w.opts.ReadOnly {
		w.flushNow(context.Background())
	}
}

// Flush commits every answer Store accepted. It returns the storage error of this commit or
// of an earlier background one (the answers of a failed batch are not stored; a rerun fetches
// them again).
func (w *Warehouse) Flush(ctx context.Context) error {
	if w.opts.ReadOnly {
		return nil
	}
	w.flushNow(ctx)
	w.pmu.Lock()
	err := w.flushErr
	w.flushErr = nil
	w.pmu.Unlock()
	return err
}

// flushLocked swaps the pending batch for an empty one and commits it. The caller holds mu, so
// batches commit in the order they were taken.
func (w *Warehouse) flushLocked(ctx context.Context) error {
	w.pmu.Lock()
	b := w.pending
	if b == nil || b.empty() {
		w.pmu.Unlock()
		return nil
	}
	rows := w.spareRows
	if rows == nil {
		rows = flatten.NewBatch(w.mem)
	}
	w.pending = newBatch(rows)
	w.spareRows = nil
	w.pmu.Unlock()
	err := w.txLocked(asDataWrite(context.WithoutCancel(ctx)), func(ctx context.Context) error { return w.writeBatch(ctx, b) })
	w.releaseNative() // between commits, at most once a second
	w.pmu.Lock()
	if w.spareRows == nil {
		w.spareRows = b.rows // NewRecords reset it; reuse its reserved capacity
	} else {
		b.rows.Release()
	}
	w.pmu.Unlock()
	if err != nil {
		w.dropIndex() // what the index says is pending was not committed
		return fmt.Errorf("write %d answers (%d domains' rows, %d ledger rows) to %s: %w; those answers are not stored and a rerun fetches them again",
			len(b.raws), b.rowDomains, len(b.charges), w.opts.DuckDBPath, diskError(w.opts.DuckDBPath, err))
	}
	w.committed(b) // answerlog.go: the answer log takes what this commit wrote
	// The event a kill test waits for before it kills (the charges it must not pay again).
	w.log.Debug("answers committed", "answers", len(b.raws), "charges", len(b.charges))
	return nil
}

// writeBatch writes b inside the caller's transaction: deletions first, then inserts.
func (w *Warehouse) writeBatch(ctx context.Context, b *batch) error {
	recs := b.rows.NewRecords() // always, so the builders are reset even if a step fails
	defer release(recs)
	if err := w.deleteRawRows(ctx, b.deleteRaw); err != nil {
		return err
	}
	if err := w.deleteDerivedRows(ctx, b.clear); err != nil {
		return err
	}
	if err := w.insertRaws(ctx, b.raws); err != nil {
		return err
	}
	if b.countries != nil {
		if err := w.replaceCountries(ctx, b.countries); err != nil {
			return err
		}
	}
	for i, rec := range recs {
		if err := w.insertRecord(ctx, flatten.SnapshotTables[i], rec); err != nil {
			return err
		}
	}
	if err := w.insertCharges(ctx, b.charges); err != nil {
		return err
	}
	return w.insertFailures(ctx, b.failures)
}

// deleteRawRows deletes replaced raw rows, one statement per snapshot and endpoint.
func (w *Warehouse) deleteRawRows(ctx context.Context, keys []rawKey) error {
	groups := map[rawKey][]string{}
	for _, k := range keys {
		g := rawKey{snapshot: k.snapshot, endpoint: k.endpoint}
		groups[g] = append(groups[g], k.domain)
	}
	for g, domains := range groups {
		args := append([]any{g.snapshot, string(g.endpoint)}, anySlice(domains)...)
		q := `DELETE FROM raw_responses WHERE snapshot_month = ? AND endpoint = ? AND domain IN (` + placeholders(len(domains)) + `)`
		if _, err := w.load.ExecContext(ctx, q, args...); err != nil {
			return fmt.Errorf("replace raw responses: %w", err)
		}
	}
	return nil
}

// deleteDerivedRows deletes the derived rows of domains about to be reloaded (or no longer
// loadable), one statement per table and snapshot.
func (w *Warehouse) deleteDerivedRows(ctx context.Context, keys []domainKey) error {
	groups := map[string][]string{}
	for _, k := range keys {
		groups[k.snapshot] = append(groups[k.snapshot], k.domain)
	}
	for snapshot, domains := range groups {
		args := append([]any{snapshot}, anySlice(domains)...)
		for _, t := range flatten.SnapshotTables {
			q := `DELETE FROM ` + t.Name + ` WHERE snapshot_month = ? AND domain IN (` + placeholders(len(domains)) + `)`
			if _, err := w.load.ExecContext(ctx, q, args...); err != nil {
				return fmt.Errorf("delete %s rows of %d domains: %w", t.Name, len(domains), err)
			}
		}
	}
	return nil
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

func anySlice(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// rawRecordTable and callsTable describe the Arrow records of raw_responses and run_calls rows.
var (
	rawRecordTable = flatten.Table{Name: "raw_responses", Schema: arrow.NewSchema([]arrow.Field{
		{Name: "snapshot_month", Type: arrow.BinaryTypes.String},
		{Name: "domain", Type: arrow.BinaryTypes.String},
		{Name: "endpoint", Type: arrow.BinaryTypes.String},
		{Name: "fetched_at", Type: &arrow.TimestampType{Unit: arrow.Microsecond}},
		{Name: "body", Type: arrow.BinaryTypes.Binary},
		{Name: "body_encoding", Type: arrow.BinaryTypes.String},
		{Name: "run_id", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)}
	callsTable = flatten.Table{Name: "run_calls", Schema: arrow.NewSchema([]arrow.Field{
		{Name: "run_id", Type: arrow.BinaryTypes.String},
		{Name: "snapshot_month", Type: arrow.BinaryTypes.String},
		{Name: "domain", Type: arrow.BinaryTypes.String},
		{Name: "endpoint", Type: arrow.BinaryTypes.String},
		{Name: "http_status", Type: arrow.PrimitiveTypes.Int32},
		{Name: "credits", Type: arrow.PrimitiveTypes.Int64},
		{Name: "fetched_at", Type: &arrow.TimestampType{Unit: arrow.Microsecond}},
		{Name: "outcome", Type: arrow.BinaryTypes.String},
		{Name: "source", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)}
)

func timestampOf(t time.Time) arrow.Timestamp { return arrow.Timestamp(t.UTC().UnixMicro()) }

func (w *Warehouse) insertRaws(ctx context.Context, raws []rawRow) error {
	return w.insertRawsInto(ctx, rawRecordTable.Name, raws)
}

// insertRawsInto inserts raws into table, raw_responses or a table of its columns.
func (w *Warehouse) insertRawsInto(ctx context.Context, table string, raws []rawRow) error {
	if len(raws) == 0 {
		return nil
	}
	rb := array.NewRecordBuilder(w.mem, rawRecordTable.Schema)
	defer rb.Release()
	for _, r := range raws {
		rb.Field(0).(*array.StringBuilder).Append(r.snapshot)
		rb.Field(1).(*array.StringBuilder).Append(r.domain)
		rb.Field(2).(*array.StringBuilder).Append(string(r.endpoint))
		rb.Field(3).(*array.TimestampBuilder).Append(timestampOf(r.fetchedAt))
		rb.Field(4).(*array.BinaryBuilder).AppendString(r.body)
		rb.Field(5).(*array.StringBuilder).Append(r.encoding)
		if r.runID == "" {
			rb.Field(6).AppendNull()
		} else {
			rb.Field(6).(*array.StringBuilder).Append(r.runID)
		}
	}
	rec := rb.NewRecord()
	defer rec.Release()
	return w.insertRecord(ctx, flatten.Table{Name: table, Schema: rawRecordTable.Schema}, rec)
}

func (w *Warehouse) insertCharges(ctx context.Context, charges []model.Charge) error {
	return w.insertChargesInto(ctx, callsTable.Name, charges)
}

// insertChargesInto inserts charges into table, run_calls or a table of its columns.
func (w *Warehouse) insertChargesInto(ctx context.Context, table string, charges []model.Charge) error {
	if len(charges) == 0 {
		return nil
	}
	rb := array.NewRecordBuilder(w.mem, callsTable.Schema)
	defer rb.Release()
	for _, c := range charges {
		rb.Field(0).(*array.StringBuilder).Append(c.RunID)
		rb.Field(1).(*array.StringBuilder).Append(c.SnapshotMonth)
		rb.Field(2).(*array.StringBuilder).Append(c.Domain)
		rb.Field(3).(*array.StringBuilder).Append(string(c.Endpoint))
		rb.Field(4).(*array.Int32Builder).Append(int32(c.HTTPStatus))
		rb.Field(5).(*array.Int64Builder).Append(c.Credits)
		rb.Field(6).(*array.TimestampBuilder).Append(timestampOf(c.FetchedAt))
		rb.Field(7).(*array.StringBuilder).Append(c.Outcome)
		if c.Source == "" {
			rb.Field(8).AppendNull()
		} else {
			rb.Field(8).(*array.StringBuilder).Append(c.Source)
		}
	}
	rec := rb.NewRecord()
	defer rec.Release()
	return w.insertRecord(ctx, flatten.Table{Name: table, Schema: callsTable.Schema}, rec)
}

func (w *Warehouse) insertFailures(ctx context.Context, failures []model.FetchError) error {
	return w.insertFailuresInto(ctx, "fetch_errors", failures)
}

// insertFailuresInto inserts failures into table, fetch_errors or a table of its columns.
func (w *Warehouse) insertFailuresInto(ctx context.Context, table string, failures []model.FetchError) error {
	for _, e := range failures {
		_, err := w.load.ExecContext(ctx, `INSERT INTO `+table+` (run_id, snapshot_month, domain, endpoint, http_status, code, message, occurred_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			e.RunID, e.SnapshotMonth, e.Domain, string(e.Endpoint), e.HTTPStatus, e.Code, e.Message, e.OccurredAt.UTC())
		if err != nil {
			return fmt.Errorf("record fetch error of %s %s: %w", model.DisplayDomain(e.Domain), e.Endpoint, err)
		}
	}
	return nil
}

// ensureIndex reads the pair states of snapshot from raw_responses unless they are known.
func (w *Warehouse) ensureIndex(ctx context.Context, snapshot string) error {
	w.pmu.Lock()
	known := w.index[snapshot] != nil
	w.pmu.Unlock()
	if known {
		return nil
	}
	w.flushQuietly() // what the index would miss must be committed first
	idx := map[string]pairState{}
	err := QueryEach(ctx, w.db, `SELECT domain, endpoint, coalesce(run_id, '') FROM raw_responses
		WHERE snapshot_month = ? AND endpoint IN ('site-overview', 'site-similar')`, []any{snapshot},
		func(rows *sql.Rows) error {
			var domain, endpoint, runID string
			if err := rows.Scan(&domain, &endpoint, &runID); err != nil {
				return err
			}
			i := pairIndex(schema.Endpoint(endpoint))
			idx[domain] = idx[domain].with(i, w.runRefs.ref(runID))
			return nil
		})
	if err != nil {
		return fmt.Errorf("read stored responses of snapshot %s: %w", snapshot, err)
	}
	w.pmu.Lock()
	if w.index[snapshot] == nil {
		w.index[snapshot] = idx
	}
	w.pmu.Unlock()
	return nil
}

// runRefs interns the run_ids of pairState: the pairs of a snapshot name a handful of runs,
// and a string per body cost 16 bytes and, read back from the database, an allocation each.
type runRefs struct {
	mu   sync.Mutex
	refs map[string]runRef
}

// ref is runID's runRef, the same for equal run_ids; 0 for "".
func (r *runRefs) ref(runID string) runRef {
	if runID == "" {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if ref, ok := r.refs[runID]; ok {
		return ref
	}
	if r.refs == nil {
		r.refs = map[string]runRef{}
	}
	if len(r.refs)+1 >= halfStored {
		// A pairState keeps 31 bits of a ref; a process interning 2^31 run_ids is not a run.
		panic("warehouse: more than 2^31 distinct run_ids interned")
	}
	ref := runRef(len(r.refs) + 1)
	r.refs[runID] = ref
	return ref
}

// ReleaseLoading forgets the pair states and the halves waiting for their partner once a
// run's answers are flushed: an entry per stored domain (~40 MB at a million), needed only
// while answers arrive. The next Store reads them again, as after a failed commit.
func (w *Warehouse) ReleaseLoading() { w.dropIndex() }

// dropIndex forgets every pair state (after a failed commit, or when the database may have
// been written around the warehouse); it is read again on the next Store.
func (w *Warehouse) dropIndex() {
	w.pmu.Lock()
	w.index = map[string]map[string]pairState{}
	w.waiting = map[domainKey]*pairHalves{}
	w.waitOrder = nil
	w.halves = 0
	w.pmu.Unlock()
}
