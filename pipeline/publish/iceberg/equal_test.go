package iceberg

import (
	"context"
	"fmt"
	"hash/fnv"
	"iter"
	"os"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"sitewatch/pipeline/publish/publishtest"
)

// TestPublishedTablesEqualTheParquet publishes a month, and checks every table's month in
// Iceberg (read back by iceberg-go's own scan) against the local Parquet files it was
// published from: the same rows, by count and by an order-free checksum of every column's
// values. A republish of the unchanged month commits nothing.
func TestPublishedTablesEqualTheParquet(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL and the S3 gateway")
	}
	ctx := context.Background()
	f := publishtest.NewFixture(t)
	e := newEnv(t)
	p := e.publisher(t, 3)
	res, err := p.Month(ctx, f.Parquet(), monthA)
	if err != nil {
		t.Fatal(err)
	}
	again, err := p.Month(ctx, f.Parquet(), monthA)
	if err != nil {
		t.Fatal(err)
	}
	if again.Commits() != 0 {
		t.Errorf("republish of an unchanged month made %d commits", again.Commits())
	}
	srcs, err := monthSources(f.Parquet(), monthA)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, tr := range res.Tables {
		src := sourceOf(t, srcs, tr.Table)
		want := sourceSum(t, src)
		got := icebergSum(t, p, src)
		if got != want {
			t.Errorf("%s of %s: Iceberg holds %s, the Parquet files %s", tr.Table, monthA, got, want)
		}
		if tr.Rows != want.rows {
			t.Errorf("%s: the publish reported %d rows, the files hold %d", tr.Table, tr.Rows, want.rows)
		}
		if want.rows > 0 {
			checked++
		}
	}
	if checked < 5 {
		t.Fatalf("only %d tables with rows compared; the fixture does not test", checked)
	}
}

// rowSum is a table's row count and the sum of a hash of each row (column names and values,
// in column-name order), which does not depend on the order of the rows or the columns.
type rowSum struct {
	rows int64
	sum  uint64
}

func (s rowSum) String() string { return fmt.Sprintf("%d rows (checksum %x)", s.rows, s.sum) }

func sumRecords(t *testing.T, recs iter.Seq2[arrow.RecordBatch, error]) rowSum {
	t.Helper()
	var s rowSum
	for rec, err := range recs {
		if err != nil {
			t.Fatal(err)
		}
		names := make([]string, rec.NumCols())
		for i := range names {
			names[i] = rec.ColumnName(i)
		}
		order := make([]int, len(names))
		for i := range order {
			order[i] = i
		}
		slices.SortFunc(order, func(a, b int) int { return compareStrings(names[a], names[b]) })
		for row := range int(rec.NumRows()) {
			h := fnv.New64a()
			for _, c := range order {
				col := rec.Column(c)
				v := "NULL"
				if col.IsValid(row) {
					v = col.ValueStr(row)
				}
				fmt.Fprintf(h, "%s=%s\x00", names[c], v)
			}
			s.sum += h.Sum64()
			s.rows++
		}
	}
	return s
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// sourceSum sums the rows of src's local files as the publish reads them.
func sourceSum(t *testing.T, src source) rowSum {
	t.Helper()
	rdr, _, err := src.read(context.Background(), memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	return sumRecords(t, func(yield func(arrow.RecordBatch, error) bool) {
		for rdr.Next() {
			if !yield(rdr.RecordBatch(), nil) {
				return
			}
		}
		if err := rdr.Err(); err != nil {
			yield(nil, err)
		}
	})
}

// icebergSum sums the rows of src's month in its Iceberg table, read by iceberg-go's scan.
func icebergSum(t *testing.T, p *Publisher, src source) rowSum {
	t.Helper()
	tbl, err := p.Load(context.Background(), src.table)
	if err != nil {
		t.Fatal(err)
	}
	var opts []table.ScanOption
	if src.month != "" {
		opts = append(opts, table.WithRowFilter(iceberg.EqualTo(iceberg.Reference(monthColumn), src.month)))
	}
	_, recs, err := tbl.Scan(opts...).ToArrowRecords(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return sumRecords(t, recs)
}

// TestLargePagesPublishEqual publishes a raw_responses-like month whose body pages are ~20 MB
// (DuckDB's row groups of 16,384 rows of ~1.3 KB), which the publish reads in steps
// (streamingReadProps), and checks the Iceberg table against the file read whole by a reader
// without streaming: the same rows, count and order-free checksum.
func TestLargePagesPublishEqual(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL and the S3 gateway")
	}
	const rows = 20000
	root := bodiesTree(t, rows, monthB)
	e := newEnv(t)
	p := e.publisher(t, 3)
	if _, err := p.Month(context.Background(), root, monthB); err != nil {
		t.Fatal(err)
	}
	srcs, err := monthSources(root, monthB)
	if err != nil {
		t.Fatal(err)
	}
	src := sourceOf(t, srcs, "raw_responses")
	want := wholeFileSum(t, src)
	if want.rows != rows {
		t.Fatalf("the file holds %d rows, want %d", want.rows, rows)
	}
	if got := icebergSum(t, p, src); got != want {
		t.Errorf("Iceberg holds %s, the Parquet file read whole %s", got, want)
	}
}

// wholeFileSum sums src's rows read by pqarrow.ReadTable with default reader properties
// (whole column chunks and pages), with snapshot_month added as the publish adds it.
func wholeFileSum(t *testing.T, src source) rowSum {
	t.Helper()
	var tables []arrow.Table
	for _, path := range src.files {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		tbl, err := pqarrow.ReadTable(context.Background(), f, parquet.NewReaderProperties(nil), pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
		_ = f.Close()
		if err != nil {
			t.Fatal(err)
		}
		tables = append(tables, tbl)
	}
	return sumRecords(t, func(yield func(arrow.RecordBatch, error) bool) {
		for _, tbl := range tables {
			rdr := array.NewTableReader(tbl, 4096)
			for rdr.Next() {
				rec := src.addMonth(memory.DefaultAllocator, src.withMonth(tbl.Schema()), rdr.RecordBatch())
				ok := yield(rec, nil)
				rec.Release()
				if !ok {
					rdr.Release()
					return
				}
			}
			rdr.Release()
			tbl.Release()
		}
	})
}
