package warehouse

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"

	"sitewatch/schema/flatten"
)

// rebuildDiff writes a rebuild's records where they differ from what the snapshot tables hold.
// A rebuild mostly re-derives the rows the tables already hold (after an upgrade that did not
// change how bodies flatten, or to be sure), and deleting and inserting a month's million rows
// to leave them as they were cost a 10,000-domain rebuild half its DuckDB time (the inserts'
// compression and the checkpoint at COMMIT: docs/warehouse-internals.md, "The rebuild writes
// what differs").
//
// The domains are split in pages (pageLows); for every table it holds the count and the
// rows_checksum of the stored rows of each page. The pages come in order; while a table's new
// rows of each page have the stored page's count and checksum, nothing of it is written. At its
// first page that differs, the table's stored rows of that page and every later one are deleted,
// and that page's and every later page's new rows inserted. So a table ends with exactly the new
// rows (up to a 64-bit checksum's collision: once in 2^64 a differing page would pass for equal),
// and a rebuild that changes everything costs one grouped scan of each table and one page's
// comparison more than deleting and inserting all (0.22 s of one thread at 10,000 domains).
type rebuildDiff struct {
	w        *Warehouse
	snapshot string
	lows     []string // pageLows: the lowest domain of each page
	tables   []*tableDiff
}

// tableDiff is one snapshot table's side of a rebuildDiff.
type tableDiff struct {
	table   flatten.Table
	stored  []rowSum // per page: the stored rows
	hashNew string   // the select list of rowSum over an Arrow view of new rows (cast to the table's types)
	// rewriteFrom is the first page whose stored rows were deleted, -1 while every page so
	// far was equal.
	rewriteFrom int
	// compared is false when the table's columns are not the records' (a column the
	// flattener does not fill): its stored rows are deleted and all inserted, as before.
	compared bool
}

// rowSum is a set of rows' count and rows_checksum (sql/views/_checksum.sql): the sum, modulo
// 2^64, of each row's hash hashed again, so the sum of two sets is the sum of theirs.
type rowSum struct {
	rows int64
	sum  uint64
}

func (a rowSum) add(b rowSum) rowSum { return rowSum{a.rows + b.rows, a.sum + b.sum} }

// newRebuildDiff reads the stored rows' sums of every snapshot table, by page of lows, in the
// caller's transaction on the load connection.
func (w *Warehouse) newRebuildDiff(ctx context.Context, snapshot string, lows []string) (*rebuildDiff, error) {
	d := &rebuildDiff{w: w, snapshot: snapshot, lows: lows}
	for _, t := range flatten.SnapshotTables {
		td, err := w.storedSums(ctx, t, snapshot, lows)
		if err != nil {
			return nil, fmt.Errorf("sum the stored rows of %s: %w", t.Name, err)
		}
		d.tables = append(d.tables, td)
	}
	return d, nil
}

// storedSums returns t's tableDiff with the sums of its stored rows of snapshot by page. The
// sums are grouped by domain in DuckDB and added up by page here: one hash aggregate of the
// month, with as many groups as domains.
func (w *Warehouse) storedSums(ctx context.Context, t flatten.Table, snapshot string, lows []string) (*tableDiff, error) {
	names, types, err := w.columnTypes(ctx, t.Name)
	if err != nil {
		return nil, err
	}
	quoted := make([]string, len(names))
	cast := make([]string, len(names))
	for i, n := range names {
		quoted[i] = `"` + n + `"`
		cast[i] = fmt.Sprintf(`CAST("%s" AS %s)`, n, types[i])
	}
	td := &tableDiff{table: t, stored: make([]rowSum, max(len(lows), 1)), rewriteFrom: -1,
		compared: slices.Equal(names, t.ColumnNames()),
		hashNew:  `count(*), coalesce(rows_checksum(hash(` + strings.Join(cast, ", ") + `)), 0)`}
	query := `SELECT domain, count(*), rows_checksum(hash(` + strings.Join(quoted, ", ") + `)) FROM ` + t.Name +
		` WHERE snapshot_month = ? GROUP BY domain`
	err = QueryEach(ctx, w.load, query, []any{snapshot}, func(rows *sql.Rows) error {
		var domain string
		var s rowSum
		if err := rows.Scan(&domain, &s.rows, &s.sum); err != nil {
			return err
		}
		p := pageOf(lows, domain)
		td.stored[p] = td.stored[p].add(s)
		return nil
	})
	return td, err
}

// columnTypes returns table's column names and their DuckDB types, in table order.
func (w *Warehouse) columnTypes(ctx context.Context, table string) (names, types []string, err error) {
	err = QueryEach(ctx, w.load, `SELECT column_name, data_type FROM duckdb_columns()
		WHERE database_name = current_database() AND schema_name = 'main' AND table_name = ? ORDER BY column_index`, []any{table}, func(rows *sql.Rows) error {
		var n, t string
		err := rows.Scan(&n, &t)
		names, types = append(names, n), append(types, t)
		return err
	})
	if err == nil && len(names) == 0 {
		err = fmt.Errorf("no table %s", table)
	}
	return names, types, err
}

// pageOf is the page of lows holding domain: the last page whose lowest domain is at most it
// (page 0 when there are no pages).
func pageOf(lows []string, domain string) int {
	i := sort.SearchStrings(lows, domain) // the first low ≥ domain
	if i < len(lows) && lows[i] == domain {
		return i
	}
	return max(i-1, 0)
}

// page writes page's records (one per snapshot table, in flatten.SnapshotTables' order) where
// they differ from the stored rows.
func (d *rebuildDiff) page(ctx context.Context, page int, recs []arrow.Record) error {
	for i, rec := range recs {
		td := d.tables[i]
		if td.rewriteFrom < 0 {
			equal := false
			if td.compared {
				var err error
				if equal, err = d.w.equalsStored(ctx, td, page, rec); err != nil {
					return fmt.Errorf("compare the new rows of %s with the stored ones: %w", td.table.Name, err)
				}
			}
			if equal {
				continue
			}
			if err := d.deleteFrom(ctx, td, page); err != nil {
				return err
			}
		}
		if err := d.w.insertRecord(ctx, td.table, rec); err != nil {
			return err
		}
	}
	return nil
}

// finish deletes every stored row of the tables when there was no page (no domain has both
// bodies stored); otherwise every page was written or found equal.
func (d *rebuildDiff) finish(ctx context.Context) error {
	if len(d.lows) > 0 {
		return nil
	}
	for _, td := range d.tables {
		if td.stored[0].rows > 0 && td.rewriteFrom < 0 {
			if err := d.deleteFrom(ctx, td, 0); err != nil {
				return err
			}
		}
	}
	return nil
}

// deleteFrom deletes td's stored rows of page and every later page.
func (d *rebuildDiff) deleteFrom(ctx context.Context, td *tableDiff, page int) error {
	low := ""
	if page < len(d.lows) {
		low = d.lows[page]
	}
	if _, err := d.w.load.ExecContext(ctx, `DELETE FROM `+td.table.Name+` WHERE snapshot_month = ? AND domain >= ?`, d.snapshot, low); err != nil {
		return fmt.Errorf("clear %s from domain %q: %w", td.table.Name, low, err)
	}
	td.rewriteFrom = page
	return nil
}

// rewritten is the number of tables whose rows the rebuild deleted and inserted (from some page on).
func (d *rebuildDiff) rewritten() int {
	n := 0
	for _, td := range d.tables {
		if td.rewriteFrom >= 0 {
			n++
		}
	}
	return n
}

// equalsStored says whether rec (td's new rows of page) has the stored page's count and checksum.
func (w *Warehouse) equalsStored(ctx context.Context, td *tableDiff, page int, rec arrow.Record) (bool, error) {
	want := td.stored[page]
	if rec.NumRows() != want.rows {
		return false, nil
	}
	if want.rows == 0 {
		return true, nil
	}
	view := "sitewatch_arrow_" + td.table.Name
	viewRegistrations.Add(1)
	rdr := newOnceReader(rec)
	defer rdr.drop()
	av, err := registerArrowView(w.loadCon, rdr, view)
	if err != nil {
		return false, err
	}
	var got rowSum
	err = w.load.QueryRowContext(ctx, `SELECT `+td.hashNew+` FROM `+view).Scan(&got.rows, &got.sum)
	// Drop even when the query failed, as insertRecord does.
	_, derr := w.load.ExecContext(context.Background(), `DROP VIEW IF EXISTS `+view)
	releasedSchemas.Add(int64(av.release()))
	if err != nil {
		return false, err
	}
	if derr != nil {
		return false, fmt.Errorf("drop Arrow view: %w", derr)
	}
	return got == want, nil
}
