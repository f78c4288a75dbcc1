package iceberg

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"sitewatch/pipeline/publish"
	"sitewatch/pipeline/publish/filehash"
)

// monthColumn is the partition column: the path of the Hive layout, a real column here.
const monthColumn = "snapshot_month"

// runsTable is committed last: a month is complete for a reader once its runs row is there.
const runsTable = "runs"

// source is what one table holds for a month in the local Parquet tree.
type source struct {
	table string
	month string // "" for a table without partitions (countries)
	files []string
}

// monthSources lists the tables of month in commit order: partitioned tables by name, runs
// last, with the whole tables (countries) before the run-health tables. It fails with
// publish.ErrNoMonth when no table has month.
func monthSources(root, month string) ([]source, error) {
	months, err := publish.Months(root)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(months, month) {
		return nil, fmt.Errorf("%w: no partition snapshot_month=%s under %s (run or rebuild that month first)", publish.ErrNoMonth, month, root)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("read the Parquet tree %s: %w", root, err)
	}
	var parts, whole []source
	var runs *source
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") || strings.HasPrefix(e.Name(), "_") {
			continue
		}
		dir := filepath.Join(root, e.Name())
		if files := parquetFiles(filepath.Join(dir, monthColumn+"="+month)); len(files) > 0 {
			s := source{table: e.Name(), month: month, files: files}
			if s.table == runsTable {
				runs = &s
				continue
			}
			parts = append(parts, s)
		} else if files := parquetFiles(dir); len(files) > 0 {
			whole = append(whole, source{table: e.Name(), files: files})
		}
	}
	out := append(whole, parts...)
	if runs != nil {
		out = append(out, *runs)
	}
	return out, nil
}

func parquetFiles(dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var files []string
	for _, e := range entries {
		n := e.Name()
		if e.Type().IsRegular() && strings.HasSuffix(n, ".parquet") && !strings.HasPrefix(n, ".") && !strings.HasPrefix(n, "_") {
			files = append(files, filepath.Join(dir, n))
		}
	}
	slices.Sort(files)
	return files
}

// sum is hash, taken from sums while the files are the ones it was computed from: a month
// published as it is reads none of its bytes.
func (s source) sum(sums *filehash.Cache) (string, error) {
	return sums.Sum("iceberg:"+s.table+"/"+cmpOr(s.month, wholeKey), s.files, s.hash)
}

// hash identifies the source's content: the names and bytes of its files.
func (s source) hash() (string, error) {
	h := sha256.New()
	for _, f := range s.files {
		fmt.Fprintf(h, "%s\n", filepath.Base(f))
		fh, err := os.Open(f)
		if err != nil {
			return "", fmt.Errorf("hash %s: %w", f, err)
		}
		_, err = io.Copy(h, fh)
		_ = fh.Close() // read-only
		if err != nil {
			return "", fmt.Errorf("hash %s: %w", f, err)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// footer is what a source's Parquet footers say: the columns (snapshot_month first for a
// partitioned table), the rows, and the rows per batch that keep a batch near batchBytes.
type footer struct {
	schema    *arrow.Schema
	rows      int64
	batchRows int64
}

// batchBytes is the size a batch read for the Iceberg writer aims at, estimated from the
// footers' uncompressed row group sizes. The writer queues up to 64 batches per data file it
// writes, so this bounds what a publish holds in memory whatever the month's size. Decoded
// Arrow is larger than the encoded size (dictionary and run-length encoded columns: up to ~4.5×
// in the fixture), hence 256 KB: at most ~64 MB queued. With 1 MB, `run` + both formats
// peaked at 688 MB at 100,000 domains.
const batchBytes = 256 << 10

// footer reads the source's footers only (no data): its columns, its rows, and the batch size
// that keeps a batch near batchBytes. Files whose columns differ are refused.
func (s source) footer() (footer, error) {
	var (
		ft    footer
		bytes int64
	)
	for _, path := range s.files {
		pf, err := file.OpenParquetFile(path, false)
		if err != nil {
			return ft, fmt.Errorf("open %s: %w", path, err)
		}
		sc, err := pqarrow.FromParquet(pf.MetaData().Schema, nil, pf.MetaData().KeyValueMetadata())
		if err == nil {
			err = s.sameColumns(&ft.schema, path, sc)
		}
		if err != nil {
			_ = pf.Close() // read-only
			return ft, err
		}
		ft.rows += pf.NumRows()
		for i := range pf.NumRowGroups() {
			bytes += pf.MetaData().RowGroup(i).TotalByteSize()
		}
		_ = pf.Close() // read-only
	}
	ft.batchRows = 64 << 10
	if ft.rows > 0 && bytes > 0 {
		ft.batchRows = min(max(batchBytes*ft.rows/bytes, 64), 64<<10)
	}
	return ft, nil
}

// sameColumns sets *schema from the first file, and refuses a later file whose columns
// differ.
func (s source) sameColumns(schema **arrow.Schema, path string, fileSchema *arrow.Schema) error {
	sc := s.withMonth(fileSchema)
	if *schema == nil {
		*schema = sc
	} else if !(*schema).Equal(sc) {
		return fmt.Errorf("%s has columns %v, another file of %s has %v: rebuild the month (`sitewatch rebuild`)", path, sc, s.table, *schema)
	}
	return nil
}

// read returns a reader that streams the source's rows, file by file in batches near
// batchBytes, with snapshot_month first for a partitioned table, and the source's row count
// (from the footers). Only the batch handed out is held; the caller releases the reader.
func (s source) read(ctx context.Context, mem memory.Allocator) (array.RecordReader, int64, error) {
	ft, err := s.footer()
	if err != nil {
		return nil, 0, err
	}
	r := &fileStream{ctx: ctx, mem: mem, src: s, schema: ft.schema, batchRows: ft.batchRows}
	r.refs.Store(1)
	return r, ft.rows, nil
}

// fileStream is an array.RecordReader over the files of a source, one open at a time.
type fileStream struct {
	refs      atomic.Int64
	ctx       context.Context
	mem       memory.Allocator
	src       source
	schema    *arrow.Schema
	batchRows int64

	next int // index of the next file to open
	pf   *file.Reader
	rr   pqarrow.RecordReader
	cur  arrow.RecordBatch
	err  error
}

var _ array.RecordReader = (*fileStream)(nil)

func (r *fileStream) Retain() { r.refs.Add(1) }

func (r *fileStream) Release() {
	if r.refs.Add(-1) == 0 {
		r.releaseCurrent()
		r.closeFile()
	}
}

func (r *fileStream) Schema() *arrow.Schema { return r.schema }

// RecordBatch is valid until the next call of Next; a consumer that keeps it retains it.
func (r *fileStream) RecordBatch() arrow.RecordBatch { return r.cur }

// Record is RecordBatch (the interface still names it).
func (r *fileStream) Record() arrow.RecordBatch { return r.cur }

func (r *fileStream) Err() error { return r.err }

func (r *fileStream) Next() bool {
	r.releaseCurrent()
	for r.err == nil {
		if r.rr == nil && !r.openNext() {
			return false
		}
		if r.rr.Next() {
			r.cur = r.src.addMonth(r.mem, r.schema, r.rr.RecordBatch())
			return true
		}
		if err := r.rr.Err(); err != nil && err != io.EOF {
			r.err = fmt.Errorf("read %s: %w", r.src.files[r.next-1], err)
		}
		r.closeFile()
	}
	return false
}

// openNext opens the next file; false when there is none or it failed (Err says which).
func (r *fileStream) openNext() bool {
	if r.next == len(r.src.files) {
		return false
	}
	path := r.src.files[r.next]
	r.next++
	pf, err := file.OpenParquetFile(path, false, file.WithReadProps(streamingReadProps()))
	if err != nil {
		r.err = fmt.Errorf("open %s: %w", path, err)
		return false
	}
	rr, err := r.recordReader(pf, path)
	if err != nil {
		_ = pf.Close() // read-only
		r.err = fmt.Errorf("read %s: %w", path, err)
		return false
	}
	r.pf, r.rr = pf, rr
	return true
}

// streamingReadProps read a file's pages from disk as they are decoded instead of a whole
// column chunk at once, and decode a large PLAIN page in steps instead of whole: DuckDB
// writes raw_responses' bodies in row groups of 16,384 rows, so a body column chunk and its
// pages are ~15 MB each (issue 34: the chunk, the page and the batches built from it were
// held at once while the Iceberg writer encoded).
func streamingReadProps() *parquet.ReaderProperties {
	props := parquet.NewReaderProperties(memory.DefaultAllocator)
	props.BufferedStreamEnabled = true
	props.PageStreamingEnabled = true
	return props
}

// recordReader reads pf in batches of batchRows, after checking its columns are the source's.
func (r *fileStream) recordReader(pf *file.Reader, path string) (pqarrow.RecordReader, error) {
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: r.batchRows}, r.mem)
	if err != nil {
		return nil, err
	}
	sc, err := fr.Schema()
	if err != nil {
		return nil, err
	}
	if err := r.src.sameColumns(&r.schema, path, sc); err != nil {
		return nil, err
	}
	return fr.GetRecordReader(r.ctx, nil, nil)
}

func (r *fileStream) closeFile() {
	if r.rr != nil {
		r.rr.Release()
		r.rr = nil
	}
	if r.pf != nil {
		_ = r.pf.Close() // read-only
		r.pf = nil
	}
}

func (r *fileStream) releaseCurrent() {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
}

// withMonth returns sc with snapshot_month first (partitioned tables), without the Parquet
// field metadata (the table's own field IDs apply).
func (s source) withMonth(sc *arrow.Schema) *arrow.Schema {
	fields := make([]arrow.Field, 0, sc.NumFields()+1)
	if s.month != "" {
		fields = append(fields, arrow.Field{Name: monthColumn, Type: arrow.BinaryTypes.String, Nullable: true})
	}
	for _, f := range sc.Fields() {
		if s.month == "" || f.Name != monthColumn { // the path's month wins over a stray column
			fields = append(fields, arrow.Field{Name: f.Name, Type: f.Type, Nullable: f.Nullable})
		}
	}
	return arrow.NewSchema(fields, nil)
}

// addMonth returns rec with a constant snapshot_month column first (a new reference to rec's
// columns otherwise).
func (s source) addMonth(mem memory.Allocator, sc *arrow.Schema, rec arrow.RecordBatch) arrow.RecordBatch {
	cols := make([]arrow.Array, 0, sc.NumFields())
	if s.month != "" {
		b := array.NewStringBuilder(mem)
		defer b.Release()
		b.Reserve(int(rec.NumRows()))
		for range rec.NumRows() {
			b.Append(s.month)
		}
		m := b.NewArray()
		defer m.Release()
		cols = append(cols, m)
	}
	for i, c := range rec.Columns() {
		if s.month == "" || rec.ColumnName(i) != monthColumn {
			cols = append(cols, c)
		}
	}
	return array.NewRecordBatch(sc, cols, rec.NumRows())
}
