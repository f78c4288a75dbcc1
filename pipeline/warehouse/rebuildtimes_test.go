package warehouse

import (
	"context"
	"testing"
	"time"
)

// TestRebuildTimesPhases: a rebuild times each of its phases (clear, read, decode, insert,
// commit, checks, export), and the phases that do not overlap add up to its total.
func TestRebuildTimesPhases(t *testing.T) {
	w := testWarehouse(t, "")
	ctx := context.Background()
	if _, err := storeGenerated(ctx, w, snap, 60, ""); err != nil {
		t.Fatal(err)
	}
	n, times, err := w.rebuildSnapshot(ctx, snap)
	if err != nil {
		t.Fatal(err)
	}
	if n != 60 {
		t.Fatalf("rebuilt %d domains, want 60", n)
	}
	for _, p := range []struct {
		name string
		d    time.Duration
	}{
		{"Clear", times.Clear}, {"Read", times.Read}, {"Decode", times.Decode}, {"Insert", times.Insert},
		{"Commit", times.Commit}, {"Checks", times.Checks}, {"Export", times.Export},
	} {
		if p.d <= 0 {
			t.Errorf("%s = %v, want > 0 (%+v)", p.name, p.d, times)
		}
	}
	if sum := times.Clear + times.Insert + times.Wait + times.Commit + times.Checks + times.Export; times.Total() != sum {
		t.Errorf("Total() = %v, want %v", times.Total(), sum)
	}
}
