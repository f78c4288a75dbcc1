package warehouse

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"sitewatch/schema/flatten"
)

// TestRebuildWritesWhatDiffers: a rebuild leaves a table as it is when its rows are what the
// stored bodies flatten to, and rewrites a table that differs anywhere (a value, a missing, an
// extra or a doubled row, in the first, a middle or the last page, or outside every listed
// domain), so that every table ends equal to what the stored bodies say, its Parquet too;
// in pages of 7 domains (9 pages) and in one page.
func TestRebuildWritesWhatDiffers(t *testing.T) {
	for _, pageSize := range []int{7, 1000} {
		t.Run(fmt.Sprintf("pages of %d", pageSize), func(t *testing.T) {
			testRebuildWritesWhatDiffers(t, pageSize)
		})
	}
}

func testRebuildWritesWhatDiffers(t *testing.T, pageSize int) {
	w := testWarehouse(t, "")
	w.opts.BatchDomains = pageSize
	ctx := context.Background()
	if _, err := storeGenerated(ctx, w, snap, 60, ""); err != nil {
		t.Fatal(err)
	}
	// Another month's rows are not the rebuild's to touch, damaged or not.
	if _, err := storeGenerated(ctx, w, "2026-10", 5, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Rebuild(ctx, "2026-10"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.DB().Exec(`UPDATE keywords SET cpc_usd = 99 WHERE snapshot_month = '2026-10'`); err != nil {
		t.Fatal(err)
	}
	_, times := rebuildOnce(t, w)
	if times.TablesRewritten != len(flatten.SnapshotTables) {
		t.Fatalf("the first rebuild (into empty tables) rewrote %d tables, want %d", times.TablesRewritten, len(flatten.SnapshotTables))
	}
	want := dumpTables(t, w.DB(), "")
	domains := domainsOf(t, w, `SELECT DISTINCT domain FROM sites WHERE snapshot_month = '2026-11' ORDER BY 1`)
	first, middle, last := domains[0], domains[len(domains)/2], domains[len(domains)-1]
	tests := []struct {
		name      string
		damage    []string // statements; %[1]s is the first domain, %[2]s a middle one, %[3]s the last
		rewritten int
	}{
		{"nothing", nil, 0},
		{"a value in a middle page", []string{`UPDATE geography_share SET share = share + 0.25
			WHERE domain = %[2]s AND snapshot_month = '2026-11'
			AND country_code = (SELECT min(country_code) FROM geography_share WHERE domain = %[2]s AND snapshot_month = '2026-11')`}, 1},
		{"two values swapped between rows", []string{`UPDATE traffic_history t SET visits = s.other FROM (
			SELECT month, lead(visits) OVER (ORDER BY month) AS other FROM traffic_history WHERE domain = %[2]s AND snapshot_month = '2026-11') s
			WHERE t.domain = %[2]s AND t.month = s.month AND s.other IS NOT NULL AND t.snapshot_month = '2026-11'`}, 1},
		{"a row missing in the first page", []string{`DELETE FROM keywords WHERE domain = %[1]s AND snapshot_month = '2026-11' AND position = 1`}, 1},
		{"a row twice in the last page", []string{`INSERT INTO similar_sites SELECT * FROM similar_sites WHERE domain = %[3]s AND snapshot_month = '2026-11' LIMIT 1`}, 1},
		{"rows of no listed domain, below and above them all", []string{
			`INSERT INTO ai_platforms SELECT snapshot_month, '0.example', * EXCLUDE (snapshot_month, domain) FROM ai_platforms WHERE domain = %[2]s AND snapshot_month = '2026-11' LIMIT 1`,
			`INSERT INTO sites SELECT snapshot_month, 'zzzz.example', * EXCLUDE (snapshot_month, domain) FROM sites WHERE domain = %[2]s AND snapshot_month = '2026-11'`}, 2},
		{"a domain's rows gone from two tables", []string{
			`DELETE FROM sites WHERE domain = %[2]s AND snapshot_month = '2026-11'`,
			`DELETE FROM keywords WHERE domain = %[2]s AND snapshot_month = '2026-11'`}, 2},
		{"every table emptied", emptyEveryTable(), len(flatten.SnapshotTables)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, stmt := range tt.damage {
				if strings.Contains(stmt, "%[") {
					stmt = fmt.Sprintf(stmt, sqlString(first), sqlString(middle), sqlString(last))
				}
				if res, err := w.DB().Exec(stmt); err != nil {
					t.Fatalf("%s: %v", stmt, err)
				} else if n, _ := res.RowsAffected(); n == 0 {
					t.Fatalf("the damage changed no row: %s", stmt)
				}
			}
			n, times := rebuildOnce(t, w)
			if n != len(domains) {
				t.Errorf("rebuilt %d domains, want %d", n, len(domains))
			}
			if times.TablesRewritten != tt.rewritten {
				t.Errorf("rewrote %d tables, want %d", times.TablesRewritten, tt.rewritten)
			}
			if got := dumpTables(t, w.DB(), ""); got != want {
				t.Errorf("the tables after the rebuild differ from what the stored bodies say:\n%s", got)
			}
			for _, tab := range flatten.SnapshotTables {
				parquetEqualsMonth(t, w, tab, snap)
			}
		})
	}
}

// parquetEqualsMonth checks that the Parquet partition of month holds exactly the table's rows
// of month.
func parquetEqualsMonth(t *testing.T, w *Warehouse, tab flatten.Table, month string) {
	t.Helper()
	cols := strings.Join(tab.ColumnNames()[1:], `", "`) // snapshot_month is in the path
	file := filepath.Join(snapshotPartition(w.opts.ParquetDir, tab.Name, month), parquetFile)
	got := queryRows(t, w.DB(), fmt.Sprintf(`SELECT "%s" FROM read_parquet(%s) ORDER BY ALL`, cols, sqlString(file)))
	want := queryRows(t, w.DB(), fmt.Sprintf(`SELECT "%s" FROM %s WHERE snapshot_month = ? ORDER BY ALL`, cols, tab.Name), month)
	if !slices.Equal(got, want) {
		t.Errorf("%s: the Parquet rows of %s (%d) differ from the table's (%d)", tab.Name, month, len(got), len(want))
	}
}

// rebuildOnce rebuilds snap as Rebuild does and returns the domains loaded and its times.
func rebuildOnce(t *testing.T, w *Warehouse) (int, RebuildTimes) {
	t.Helper()
	n, times, err := w.rebuildSnapshot(context.Background(), snap)
	if err != nil {
		t.Fatal(err)
	}
	return n, times
}

// domainsOf returns the domains query lists.
func domainsOf(t *testing.T, w *Warehouse, query string) []string {
	t.Helper()
	var out []string
	for _, quoted := range queryRows(t, w.DB(), query) {
		d, err := strconv.Unquote(quoted)
		if err != nil {
			t.Fatalf("%s: %q is not a quoted string: %v", query, quoted, err)
		}
		out = append(out, d)
	}
	return out
}

func emptyEveryTable() []string {
	var out []string
	for _, tab := range flatten.SnapshotTables {
		out = append(out, `DELETE FROM `+tab.Name+` WHERE snapshot_month = '2026-11'`)
	}
	return out
}

// TestRebuildDropsWhatNoLongerFlattens: a domain whose stored body no longer flattens loses
// its rows in every table (as when a rebuild deleted the month first), and only its rows.
func TestRebuildDropsWhatNoLongerFlattens(t *testing.T) {
	w := testWarehouse(t, "")
	w.opts.BatchDomains = 7
	ctx := context.Background()
	if _, err := storeGenerated(ctx, w, snap, 30, ""); err != nil {
		t.Fatal(err)
	}
	rebuildOnce(t, w)
	domains := domainsOf(t, w, `SELECT DISTINCT domain FROM sites ORDER BY 1`)
	broken := sqlString(domains[len(domains)/2])
	want := dumpTables(t, w.DB(), "domain <> "+broken)
	if _, err := w.DB().Exec(`UPDATE raw_responses SET body = 'not JSON'::BLOB, body_encoding = 'identity'
		WHERE domain = ` + broken + ` AND endpoint = 'site-overview'`); err != nil {
		t.Fatal(err)
	}
	n, times := rebuildOnce(t, w)
	if n != len(domains)-1 {
		t.Errorf("rebuilt %d domains, want %d", n, len(domains)-1)
	}
	if times.TablesRewritten == 0 {
		t.Error("no table rewritten, want those holding rows of the domain that no longer flattens")
	}
	if got := dumpTables(t, w.DB(), ""); got != want {
		t.Errorf("the tables after the rebuild hold other rows than every domain's but %s:\n%s", broken, got)
	}
}

// TestPageOf: every domain falls in the last page whose lowest domain is at most it, the
// first page taking everything below the second page's lowest.
func TestPageOf(t *testing.T) {
	lows := pageLows([]string{"b", "c", "d", "f", "g"}, 2) // pages {b c} {d f} {g}
	if want := []string{"", "d", "g"}; !slices.Equal(lows, want) {
		t.Fatalf("pageLows = %q, want %q", lows, want)
	}
	for domain, want := range map[string]int{"": 0, "a": 0, "b": 0, "c": 0, "cz": 0, "d": 1, "e": 1, "f": 1, "g": 2, "zz": 2} {
		if got := pageOf(lows, domain); got != want {
			t.Errorf("pageOf(%q) = %d, want %d", domain, got, want)
		}
	}
	if got := pageOf(nil, "a"); got != 0 {
		t.Errorf("pageOf with no pages = %d, want 0", got)
	}
}
