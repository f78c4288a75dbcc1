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

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"sitewatch/pipeline/publish"
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

// read returns the source's rows as Arrow records, with snapshot_month first for a
// partitioned table. The caller releases the reader.
func (s source) read(ctx context.Context, mem memory.Allocator) (array.RecordReader, int64, error) {
	var (
		schema *arrow.Schema
		recs   []arrow.RecordBatch
		rows   int64
	)
	release := func() {
		for _, r := range recs {
			r.Release()
		}
	}
	for _, f := range s.files {
		got, err := s.readFile(ctx, mem, f, &schema)
		if err != nil {
			release()
			return nil, 0, err
		}
		for _, r := range got {
			rows += r.NumRows()
		}
		recs = append(recs, got...)
	}
	rdr, err := array.NewRecordReader(schema, recs)
	release() // the reader holds its own references
	if err != nil {
		return nil, 0, fmt.Errorf("read %s: %w", s.table, err)
	}
	return rdr, rows, nil
}

// readFile reads one Parquet file; *schema is set from the first file, and later files must
// match it.
func (s source) readFile(ctx context.Context, mem memory.Allocator, path string, schema **arrow.Schema) ([]arrow.RecordBatch, error) {
	pf, err := file.OpenParquetFile(path, false, file.WithReadProps(nil))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer func() { _ = pf.Close() }() // read-only
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 64 << 10}, mem)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	rr, err := fr.GetRecordReader(ctx, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer rr.Release()
	sc := s.withMonth(rr.Schema())
	if *schema == nil {
		*schema = sc
	} else if !(*schema).Equal(sc) {
		return nil, fmt.Errorf("%s has columns %v, another file of %s has %v: rebuild the month (`sitewatch rebuild`)", path, sc, s.table, *schema)
	}
	var out []arrow.RecordBatch
	for rr.Next() {
		out = append(out, s.addMonth(mem, sc, rr.RecordBatch()))
	}
	if err := rr.Err(); err != nil && err != io.EOF {
		for _, r := range out {
			r.Release()
		}
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return out, nil
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
