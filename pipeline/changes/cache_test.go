package changes

import (
	"context"
	"database/sql"
	"reflect"
	"testing"

	"sitewatch/pipeline/warehouse"
)

// listsOf builds the latest month's digest and returns it with its lists, failing unless it
// was read from the stored rows exactly when wantStored.
func listsOf(t *testing.T, db *sql.DB, label string, wantStored bool) *Digest {
	t.Helper()
	d, err := Build(context.Background(), db, "")
	if err != nil {
		t.Fatalf("%s: %v", label, err)
	}
	if d.stored != wantStored {
		t.Fatalf("%s: read from the stored lists %v, want %v", label, d.stored, wantStored)
	}
	return d
}

// sameLists fails unless a and b hold the same movers and lists, in the same order.
func sameLists(t *testing.T, label string, a, b *Digest) {
	t.Helper()
	for _, l := range []struct {
		name string
		a, b any
		n    int
	}{
		{"movers", a.Movers, b.Movers, len(a.Movers)},
		{"competitors", a.Competitors, b.Competitors, len(a.Competitors)},
		{"AI platforms", a.AIPlatforms, b.AIPlatforms, len(a.AIPlatforms)},
		{"keywords", a.Keywords, b.Keywords, len(a.Keywords)},
		{"countries", a.Countries, b.Countries, len(a.Countries)},
	} {
		if l.n == 0 {
			t.Fatalf("%s: no %s: the fixture does not exercise them", label, l.name)
		}
		if !reflect.DeepEqual(l.a, l.b) {
			t.Errorf("%s: %s differ:\n%v\n%v", label, l.name, l.a, l.b)
		}
	}
}

// TestStoredListsSameAsComputed pins the stored lists of changes (changes_cached_*, migration
// 0013) to the lists computed from the views, on a random warehouse: the digest read from the
// stored rows is the digest computed at the read, row for row and in order, and each stored
// table holds its macro's rows of the month.
func TestStoredListsSameAsComputed(t *testing.T) {
	w, db := randomListsWarehouse(t, 300)
	computed := listsOf(t, db, "before any store", false)
	if err := w.RefreshChanges(context.Background()); err != nil {
		t.Fatal(err)
	}
	stored := listsOf(t, db, "stored", true)
	sameLists(t, "stored against computed", computed, stored)
	// A reader whose file's mark says the stored lists are current reads them without checksums.
	held, err := BuildOptions(context.Background(), db, "", Options{Attention: AttentionSettings{StoredCurrent: true}})
	if err != nil || !held.stored {
		t.Fatalf("read as current: stored %v, err %v; want the stored lists", held != nil && held.stored, err)
	}
	sameLists(t, "stored, read as current, against computed", computed, held)
	sameStoredRows(t, db, "stored", "2026-04")
}

// TestStaleStoredListsNeverRead changes, one at a time, a row of each table the lists read
// after they were stored: each change must make the digest compute the lists from the views,
// and the next store must hold the macros' rows again.
func TestStaleStoredListsNeverRead(t *testing.T) {
	w, db := randomListsWarehouse(t, 120)
	mustExec(t, db, `INSERT INTO countries VALUES ('US', 'USA', '840', 'United States'), ('DE', 'DEU', '276', 'Germany')`)
	ctx := context.Background()
	writes := []struct{ name, sql string }{
		{"sites: one figure", `UPDATE sites SET global_rank = global_rank + 1 WHERE snapshot_month = '2026-04' AND domain = (SELECT min(domain) FROM sites WHERE snapshot_month = '2026-04' AND global_rank IS NOT NULL)`},
		{"sources_share: one share", `UPDATE sources_share SET share = share + 0.01 WHERE snapshot_month = '2026-02' AND domain = (SELECT min(domain) FROM sources_share WHERE snapshot_month = '2026-02' AND share IS NOT NULL)`},
		// Changes a checksum of bit_xor(hash(...)) missed whatever the seed (sql/views/_checksum.sql):
		// two rows whose last column moved alike, and both copies of a row stored twice.
		{"sources_share: two equal shares moved alike", `UPDATE sources_share SET share = 0.777 WHERE (snapshot_month, domain, channel) IN (
			SELECT (snapshot_month, domain, channel) FROM sources_share WHERE snapshot_month = '2026-04' AND share = (
				SELECT share FROM sources_share WHERE snapshot_month = '2026-04' AND share IS NOT NULL GROUP BY share HAVING count(*) >= 2 ORDER BY share LIMIT 1)
			ORDER BY domain, channel LIMIT 2)`},
		{"sources_share: a row twice", `INSERT INTO sources_share SELECT * FROM sources_share WHERE snapshot_month = '2026-04' AND share IS NOT NULL ORDER BY domain, channel LIMIT 1`},
		{"sources_share: both copies moved alike", `UPDATE sources_share SET share = share + 0.001 WHERE (snapshot_month, domain, channel) = (
			SELECT (snapshot_month, domain, channel) FROM sources_share WHERE snapshot_month = '2026-04' GROUP BY ALL HAVING count(*) = 2 LIMIT 1)`},
		{"similar_sites: a row deleted", `DELETE FROM similar_sites WHERE snapshot_month = '2026-04' AND domain = (SELECT min(domain) FROM similar_sites WHERE snapshot_month = '2026-04')`},
		{"ai_platforms: a row added", `INSERT INTO ai_platforms (snapshot_month, domain, platform, rank, share_pct) SELECT '2026-04', min(domain), 'new.ai', 9, 1.5 FROM sites WHERE snapshot_month = '2026-04'`},
		{"keywords: one spelling", `UPDATE keywords SET keyword = keyword || 'x' WHERE snapshot_month = '2026-02' AND domain = (SELECT min(domain) FROM keywords WHERE snapshot_month = '2026-02')`},
		{"geography_share: one share", `UPDATE geography_share SET share = coalesce(share, 0) + 0.3 WHERE snapshot_month = '2026-04' AND domain = (SELECT min(domain) FROM geography_share WHERE snapshot_month = '2026-04')`},
		{"countries: a name", `UPDATE countries SET name = 'Deutschland' WHERE alpha2 = 'DE'`},
		{"runs: another month compared", `UPDATE runs SET status = 'complete', domains_loaded = domains_total WHERE snapshot_month = '2026-03'`},
	}
	for _, wr := range writes {
		if err := w.RefreshChanges(ctx); err != nil {
			t.Fatal(err)
		}
		month, previous := latestPair(t, db)
		if ok, err := warehouse.ChangesCached(ctx, db, month, previous); err != nil || !ok {
			t.Fatalf("%s: not stored before the write (%v, %v)", wr.name, ok, err)
		}
		mustExec(t, db, wr.sql)
		got := listsOf(t, db, wr.name, false) // computed: the stored rows are stale
		if ok, err := warehouse.ChangesCached(ctx, db, got.Month, got.PreviousMonth); err != nil || ok {
			t.Fatalf("%s: the stored lists are current after the write (%v, %v)", wr.name, ok, err)
		}
		if err := w.RefreshChanges(ctx); err != nil {
			t.Fatal(err)
		}
		sameStoredRows(t, db, wr.name+": stored again", got.Month)
	}
}

// latestPair is the latest complete month and the one before it.
func latestPair(t *testing.T, db *sql.DB) (month, previous string) {
	t.Helper()
	err := db.QueryRow(`SELECT snapshot_month, previous_month FROM complete_months ORDER BY 1 DESC LIMIT 1`).Scan(&month, &previous)
	if err != nil {
		t.Fatal(err)
	}
	return month, previous
}

// sameStoredRows fails unless each changes_cached_* table holds its macro's rows of month.
func sameStoredRows(t *testing.T, db *sql.DB, label, month string) {
	t.Helper()
	for table, macro := range map[string]string{
		"changes_cached_competitors":   "changes_competitors_in",
		"changes_cached_ai_platforms":  "changes_ai_platforms_in",
		"changes_cached_keywords":      "changes_keywords_in",
		"changes_cached_top_countries": "changes_top_countries_in",
		"changes_cached_movers":        "changes_movers_top",
	} {
		sameRows(t, db, label+": "+table, `SELECT * FROM `+macro+`(for_month := '`+month+`')`, `SELECT * FROM `+table)
	}
}

// randomListsWarehouse opens a warehouse holding n random domains' months and lists, drawn from
// the pin seed (printed; SITEWATCH_PIN_SEED replays it).
func randomListsWarehouse(t *testing.T, n int) (*warehouse.Warehouse, *sql.DB) {
	t.Helper()
	seed := pinSeed(t)
	t.Logf("seed %d (SITEWATCH_PIN_SEED=%d replays it)", seed, seed)
	w := openWarehouse(t)
	db := w.DB()
	loadRandomMonths(t, db, seed, n)
	loadRandomLists(t, db, seed)
	return w, db
}
