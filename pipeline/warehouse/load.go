package warehouse

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"sitewatch/schema/flatten"
)

// inTx commits the pending batch, then runs fn inside one transaction on the load connection,
// holding the write lock. It commits when fn returns nil and rolls back otherwise (also when
// ctx is cancelled or fn panics), so a failure or crash leaves the database as it was before.
// A failed commit of the pending batch is returned (fn does not run).
func (w *Warehouse) inTx(ctx context.Context, fn func(ctx context.Context) error) error {
	if w.opts.ReadOnly {
		return errors.New("the warehouse is open read-only")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.flushLocked(ctx); err != nil {
		return err
	}
	return w.txLocked(ctx, fn)
}

// txLocked runs fn in a transaction; the caller holds mu.
func (w *Warehouse) txLocked(ctx context.Context, fn func(ctx context.Context) error) (err error) {
	if w.load == nil {
		return errors.New("the warehouse is closed")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// BEGIN, COMMIT and ROLLBACK run without ctx: go-duckdb may report a cancelled context for
	// a statement that completed, which would leave the transaction state unknown.
	if _, err := w.load.ExecContext(context.Background(), "BEGIN TRANSACTION"); err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	committed := false
	defer func() {
		if committed {
			return
		}
		// fn failed or panicked: nothing of it may stay, and the connection must not be left
		// inside an open transaction for the next caller.
		if _, rerr := w.load.ExecContext(context.Background(), "ROLLBACK"); rerr != nil && err != nil {
			err = errors.Join(err, fmt.Errorf("rollback: %w", rerr))
		}
	}()
	err = fn(ctx)
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	if err == nil {
		err = w.markDataWrite(ctx)
	}
	if err != nil {
		return err
	}
	// COMMIT is not interruptible: a cancelled context must not report a commit that DuckDB
	// completed as failed.
	if _, err := w.load.ExecContext(context.Background(), "COMMIT"); err != nil {
		return fmt.Errorf("commit: %w", err) // the deferred ROLLBACK ends what COMMIT left open
	}
	committed = true
	w.dataCommitted(ctx)
	return nil
}

// insertRecord appends rec to table on the load connection, inside the caller's transaction:
// it registers rec as a view, runs INSERT … SELECT, and drops the view before releasing the
// stream (a committed view would crash the process on a later query; see
// docs/warehouse-internals.md, "Arrow views"). rec is not released.
func (w *Warehouse) insertRecord(ctx context.Context, t flatten.Table, rec arrow.Record) error {
	if rec.NumRows() == 0 {
		return nil
	}
	if rec.NumRows() < arrowViewMinRows {
		return w.insertValues(ctx, t, rec)
	}
	view := "sitewatch_arrow_" + t.Name
	viewRegistrations.Add(1)
	rdr := newOnceReader(rec)
	defer rdr.drop()
	av, err := registerArrowView(w.loadCon, rdr, view)
	if err != nil {
		return fmt.Errorf("insert into %s: %w", t.Name, err)
	}
	cols := quotedColumns(t)
	_, err = w.load.ExecContext(ctx, fmt.Sprintf(`INSERT INTO %s (%s) SELECT %s FROM %s`, t.Name, cols, cols, view))
	// Drop even when the insert failed; in an aborted transaction the drop fails too, and the
	// caller's rollback removes the view.
	_, derr := w.load.ExecContext(context.Background(), `DROP VIEW IF EXISTS `+view)
	releasedSchemas.Add(int64(av.release()))
	if err != nil {
		return fmt.Errorf("insert into %s: %w", t.Name, err)
	}
	if derr != nil {
		return fmt.Errorf("insert into %s: drop Arrow view: %w", t.Name, derr)
	}
	return nil
}

func quotedColumns(t flatten.Table) string {
	names := t.ColumnNames()
	for i, n := range names {
		names[i] = `"` + n + `"`
	}
	return strings.Join(names, ", ")
}

// onceReader is an array.RecordReader over one record that releases the record as soon as
// the consumer moves past it. DuckDB 1.1 never calls the exported stream's release, so a
// reader that kept its last record until Release would leak it (docs/warehouse-internals.md,
// "onceReader"); drop frees whatever
// is left if the consumer stopped early.
type onceReader struct {
	refs   atomic.Int64
	schema *arrow.Schema
	mu     sync.Mutex
	next   arrow.Record
	cur    arrow.Record
}

func newOnceReader(rec arrow.Record) *onceReader {
	rec.Retain()
	r := &onceReader{schema: rec.Schema(), next: rec}
	r.refs.Store(1)
	return r
}

func (r *onceReader) Retain() { r.refs.Add(1) }

func (r *onceReader) Release() {
	if r.refs.Add(-1) == 0 {
		r.drop()
	}
}

func (r *onceReader) Schema() *arrow.Schema { return r.schema }

func (r *onceReader) Next() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	if r.next == nil {
		return false
	}
	r.cur, r.next = r.next, nil
	return true
}

func (r *onceReader) Record() arrow.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cur
}

func (r *onceReader) Err() error { return nil }

// drop releases the records not yet released; safe to call more than once.
func (r *onceReader) drop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	if r.next != nil {
		r.next.Release()
		r.next = nil
	}
}

// arrowViewMinRows is the fewest rows loaded through an Arrow view; smaller records go in as
// INSERT … VALUES with parameters. The bound was set when every registration leaked the Arrow
// schemas DuckDB 1.1.2 imports (~8.5 KB of C memory a view, registerArrowView now frees them):
// a slow run commits a few rows at a time, and a view per table per commit grew such a run by
// ~18 MB a minute. It stays because a view costs more than a few parameterized rows
// (docs/warehouse-internals.md, "Arrow views"). A variable for tests.
var arrowViewMinRows int64 = 512

// viewRegistrations counts the Arrow views registered by this process, releasedSchemas the
// Arrow schemas DuckDB took from them and registerArrowView's release freed.
var viewRegistrations, releasedSchemas atomic.Int64

// maxValuesParams bounds the parameters of one INSERT … VALUES statement.
const maxValuesParams = 256

// insertValues appends rec to table t as parameterized INSERT … VALUES statements, inside the
// caller's transaction.
func (w *Warehouse) insertValues(ctx context.Context, t flatten.Table, rec arrow.Record) error {
	fields := t.Schema.Fields()
	rows := int(rec.NumRows())
	perStatement := max(1, maxValuesParams/len(fields))
	// The text for n rows; every statement but the last has perStatement rows.
	prefix, row := "INSERT INTO "+t.Name+" ("+quotedColumns(t)+") VALUES ", "("+valuePlaceholders(fields)+")"
	statement := func(n int) string { return prefix + row + strings.Repeat(", "+row, n-1) }
	full := statement(min(rows, perStatement))
	for start := 0; start < rows; start += perStatement {
		end := min(rows, start+perStatement)
		query := full
		if end-start < perStatement {
			query = statement(end - start)
		}
		args := make([]any, 0, (end-start)*len(fields))
		for r := start; r < end; r++ {
			for c := range fields {
				v, err := arrowValue(rec.Column(c), r)
				if err != nil {
					return fmt.Errorf("insert into %s, column %s: %w", t.Name, fields[c].Name, err)
				}
				args = append(args, v)
			}
		}
		if _, err := w.load.ExecContext(ctx, query, args...); err != nil {
			return fmt.Errorf("insert into %s: %w", t.Name, err)
		}
	}
	return nil
}

// valuePlaceholders is one row's placeholders; dates are bound as timestamps and cast.
func valuePlaceholders(fields []arrow.Field) string {
	marks := make([]string, len(fields))
	for i, f := range fields {
		marks[i] = "?"
		if f.Type.ID() == arrow.DATE32 {
			marks[i] = "?::DATE"
		}
	}
	return strings.Join(marks, ", ")
}

// arrowValue is row i of col as a database/sql argument (nil for NULL).
func arrowValue(col arrow.Array, i int) (any, error) {
	if col.IsNull(i) {
		return nil, nil
	}
	switch a := col.(type) {
	case *array.String:
		return a.Value(i), nil
	case *array.Binary:
		return a.Value(i), nil
	case *array.Int64:
		return a.Value(i), nil
	case *array.Int32:
		return a.Value(i), nil
	case *array.Float64:
		return a.Value(i), nil
	case *array.Boolean:
		return a.Value(i), nil
	case *array.Date32:
		return a.Value(i).ToTime(), nil
	case *array.Timestamp:
		return a.Value(i).ToTime(a.DataType().(*arrow.TimestampType).Unit), nil
	}
	return nil, fmt.Errorf("no SQL binding for the Arrow type %s", col.DataType())
}
