package iceberg

import (
	"context"
	"errors"
	"fmt"

	"strconv"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"sitewatch/pipeline/publish/filehash"
)

// Table properties sitewatch sets.
const (
	// hashProp + month holds the hash of the local files the month was published from
	// ("whole" for a table without partitions); the overwrite commit sets it.
	hashProp = "sitewatch.source-sha256."
	// wholeKey stands for the month of a table without partitions.
	wholeKey = "whole"
)

// publishTable commits src as the table's partition of its month (or as the whole table),
// unless the table already holds exactly these files' rows.
func (p *Publisher) publishTable(ctx context.Context, src source, sums *filehash.Cache) (TableResult, error) {
	res := TableResult{Table: src.table}
	hash, err := src.sum(sums)
	if err != nil {
		return res, err
	}
	// The footers give the columns and rows: a month published as it is reads no data.
	ft, err := src.footer()
	if err != nil {
		return res, err
	}
	res.Rows = ft.rows
	tbl, err := p.loadOrCreate(ctx, src, ft.schema)
	if err != nil {
		return res, err
	}
	key := hashProp + cmpOr(src.month, wholeKey)
	if tbl.Properties()[key] == hash {
		res.Snapshot = currentSnapshot(tbl)
		p.log.Debug("iceberg table unchanged", "table", src.table, "month", src.month)
		return res, nil
	}
	rdr, _, err := src.read(ctx, memory.DefaultAllocator)
	if err != nil {
		return res, err
	}
	defer rdr.Release()
	before := len(tbl.Metadata().Snapshots())
	next, err := p.commit(ctx, tbl, src, rdr, key, hash)
	if err != nil {
		return res, err
	}
	res.Committed = true
	res.Snapshot = currentSnapshot(next)
	res.Expired = before + 1 - len(next.Metadata().Snapshots())
	removed, err := p.removeOrphans(ctx, next)
	res.Removed = removed
	if err != nil {
		return res, err
	}
	p.log.Info("iceberg commit", "table", src.table, "month", src.month, "rows", res.Rows, "snapshot", res.Snapshot,
		"expired", res.Expired, "removed", res.Removed)
	return res, nil
}

// rowGroupBytes is the Parquet row group size of the data files written (the property
// write.parquet.row-group-size-bytes): the writer holds a row group in memory until it is
// full, 128 MB by iceberg-go's default.
const rowGroupBytes = "8388608"

// commit is the month's one commit: new columns added to the schema, the month's partition
// replaced (overwrite by filter: files of other months are kept as they are), the source hash
// recorded, and snapshots beyond keep expired.
func (p *Publisher) commit(ctx context.Context, tbl *table.Table, src source, rdr array.RecordReader, key, hash string) (*table.Table, error) {
	txn := withSmallParts(tbl, p.cat).NewTransaction()
	// Set first: the data files below are written under these properties.
	if err := txn.SetProperties(iceberg.Properties{key: hash, table.ParquetRowGroupSizeBytesKey: rowGroupBytes}); err != nil {
		return nil, err
	}
	if err := evolveSchema(txn, tbl, rdr.Schema()); err != nil {
		return nil, err
	}
	staged, err := txn.StagedTable()
	if err != nil {
		return nil, err
	}
	withIDs, err := withFieldIDs(rdr, staged.Schema())
	if err != nil {
		return nil, err
	}
	defer withIDs.Release()
	var filter iceberg.BooleanExpression = iceberg.AlwaysTrue{}
	if src.month != "" {
		filter = iceberg.EqualTo(iceberg.Reference(monthColumn), src.month)
	}
	props := iceberg.Properties{"sitewatch.table": src.table}
	if src.month != "" {
		props["sitewatch.snapshot-month"] = src.month
	}
	if err := txn.Overwrite(ctx, withIDs, props, table.WithOverwriteFilter(filter)); err != nil {
		return nil, fmt.Errorf("write the data files: %w", err)
	}
	if err := txn.ExpireSnapshots(table.WithRetainLast(p.keep), table.WithOlderThan(0)); err != nil {
		return nil, fmt.Errorf("expire snapshots beyond %d: %w", p.keep, err)
	}
	next, err := txn.Commit(ctx)
	if err != nil {
		return nil, fmt.Errorf("commit to the catalog: %w", err)
	}
	return next, nil
}

// withFieldIDs returns a reader of rdr's records with the field ID of each column in sc
// written into the Arrow schema, so the data files carry the table's own IDs (the writer's
// name mapping can be stale within a transaction that adds a column). It streams: each record
// is rewrapped as it is read. The caller releases the reader (and rdr).
func withFieldIDs(rdr array.RecordReader, sc *iceberg.Schema) (array.RecordReader, error) {
	fields := make([]arrow.Field, 0, rdr.Schema().NumFields())
	for _, f := range rdr.Schema().Fields() {
		nf, ok := sc.FindFieldByName(f.Name)
		if !ok {
			return nil, fmt.Errorf("column %s is not in the table schema", f.Name)
		}
		f.Metadata = arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{strconv.Itoa(nf.ID)})
		fields = append(fields, f)
	}
	r := &idStream{in: rdr, schema: arrow.NewSchema(fields, nil)}
	r.refs.Store(1)
	return r, nil
}

// idStream is withFieldIDs' reader.
type idStream struct {
	refs   atomic.Int64
	in     array.RecordReader
	schema *arrow.Schema
	cur    arrow.RecordBatch
}

func (r *idStream) Retain() { r.refs.Add(1) }

func (r *idStream) Release() {
	if r.refs.Add(-1) == 0 && r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
}

func (r *idStream) Schema() *arrow.Schema { return r.schema }

func (r *idStream) Next() bool {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	if !r.in.Next() {
		return false
	}
	rec := r.in.RecordBatch()
	r.cur = array.NewRecordBatch(r.schema, rec.Columns(), rec.NumRows())
	return true
}

func (r *idStream) RecordBatch() arrow.RecordBatch { return r.cur }

// Record is RecordBatch (the interface still names it).
func (r *idStream) Record() arrow.RecordBatch { return r.cur }

func (r *idStream) Err() error { return r.in.Err() }

// evolveSchema adds the columns of sc the table does not have yet (a migration's new column):
// each becomes a new optional field with the next unused ID, and older files read it as NULL.
func evolveSchema(txn *table.Transaction, tbl *table.Table, sc *arrow.Schema) error {
	upd := txn.UpdateSchema(true, false)
	added := 0
	for _, f := range sc.Fields() {
		if _, ok := tbl.Schema().FindFieldByName(f.Name); ok {
			continue
		}
		typ, err := table.ArrowTypeToIceberg(f.Type, false)
		if err != nil {
			return fmt.Errorf("map the new column %s to an Iceberg type: %w", f.Name, err)
		}
		upd.AddColumn([]string{f.Name}, typ, "", false, nil)
		added++
	}
	if added == 0 {
		return nil
	}
	if err := upd.Commit(); err != nil {
		return fmt.Errorf("add the new columns to the table schema: %w", err)
	}
	return nil
}

// loadOrCreate loads the table, creating it (v2, partitioned by snapshot_month when src has a
// month) on first publish with sc's columns; the catalog assigns the field IDs.
func (p *Publisher) loadOrCreate(ctx context.Context, src source, sc *arrow.Schema) (*table.Table, error) {
	tbl, err := p.Load(ctx, src.table)
	if err == nil {
		return tbl, nil
	}
	if !errors.Is(err, catalog.ErrNoSuchTable) {
		return nil, fmt.Errorf("load from the catalog: %w", err)
	}
	schema, err := table.ArrowSchemaToIcebergWithFreshIDs(sc, false)
	if err != nil {
		return nil, fmt.Errorf("map the columns to Iceberg types: %w", err)
	}
	opts := []catalog.CreateTableOpt{
		catalog.WithLocation(p.root + "/" + src.table),
		catalog.WithProperties(iceberg.Properties{
			"format-version":                  "2",
			"write.parquet.compression-codec": "zstd",
			// Kept by the publisher itself (ExpireSnapshots with publish.keep_snapshots).
			"history.expire.min-snapshots-to-keep": fmt.Sprint(p.keep),
		}),
	}
	if src.month != "" {
		f, _ := schema.FindFieldByName(monthColumn)
		spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{f.ID}, FieldID: 1000, Name: monthColumn, Transform: iceberg.IdentityTransform{}})
		opts = append(opts, catalog.WithPartitionSpec(&spec))
	}
	tbl, err = p.cat.CreateTable(ctx, append(p.ns[:1:1], src.table), schema, opts...)
	if err != nil {
		return nil, fmt.Errorf("create the table in the catalog: %w", err)
	}
	return tbl, nil
}

// removeOrphans deletes the files under the table's location that no snapshot references:
// those of expired snapshots, and data files a killed publish wrote but never committed.
func (p *Publisher) removeOrphans(ctx context.Context, tbl *table.Table) (int, error) {
	res, err := tbl.DeleteOrphanFiles(ctx, table.WithFilesOlderThan(p.opts.OrphanMinAge))
	if err != nil {
		return len(res.DeletedFiles), fmt.Errorf("remove unreferenced files of %s: %w", tbl.Location(), err)
	}
	return len(res.DeletedFiles), nil
}

func currentSnapshot(t *table.Table) int64 {
	if s := t.CurrentSnapshot(); s != nil {
		return s.SnapshotID
	}
	return 0
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
