package changes

import (
	"context"
	"reflect"
	"testing"

	"sitewatch/pipeline/discover"
	"sitewatch/pipeline/warehouse"
)

// TestStoredWorthTrackingSameAsComputed: the worth-tracking list read from the ranking a writer
// stored (a reader whose file's mark holds) equals the one computed from the view, for every
// length asked, below and beyond what is stored, and for a floor no writer stored.
func TestStoredWorthTrackingSameAsComputed(t *testing.T) {
	if discover.StoredPerFloor != warehouse.StoredCandidates || discover.DefaultMinVisits != warehouse.DefaultDiscoverFloor {
		t.Fatalf("discover reads %d stored candidates at floor %d, the warehouse stores %d at %d", discover.StoredPerFloor,
			discover.DefaultMinVisits, warehouse.StoredCandidates, warehouse.DefaultDiscoverFloor)
	}
	ctx := context.Background()
	w, db := randomListsWarehouse(t, 300)
	if err := w.StoreWorthTracking(ctx); err != nil {
		t.Fatal(err)
	}
	month, _ := latestPair(t, db)
	for _, floor := range []int64{0, 1} { // 0: the default floor, stored; 1: computed
		for _, n := range []int{1, 3, 10, discover.StoredPerFloor + 50} {
			computed, err := ReadWorthTracking(ctx, db, month, floor, n, false)
			if err != nil {
				t.Fatal(err)
			}
			if len(computed) == 0 {
				t.Fatalf("floor %d: the fixture has no candidates in %s; the test could not tell", floor, month)
			}
			stored, err := ReadWorthTracking(ctx, db, month, floor, n, true)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(computed, stored) {
				t.Errorf("floor %d, %d lines: stored %s, computed %s", floor, n, jsonText(stored), jsonText(computed))
			}
			_, ok, err := discover.StoredCandidates(ctx, db, discover.Query{Top: n, MinVisits: floor}, month)
			if err != nil {
				t.Fatal(err)
			}
			if want := floor == 0 && n <= len(computed); ok != want && n < discover.StoredPerFloor {
				t.Errorf("floor %d, %d lines: read from the stored ranking %v, want %v", floor, n, ok, want)
			}
		}
	}
	var stored int
	if err := db.QueryRow(`SELECT count(*) FROM changes_cached_candidates`).Scan(&stored); err != nil || stored > discover.StoredPerFloor {
		t.Errorf("%d candidates stored for one floor (%v), want at most %d", stored, err, discover.StoredPerFloor)
	}
}
