package warehouse

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"sitewatch/pipeline/livestatus"
	"sitewatch/pipeline/model"
)

// TestClosedRunsKeepMonthAndOutcome: a run that died before recording its month is closed
// under the month its charged answers were stored under (so it reaches the runs Parquet); a
// run that ended but could not record its end (a full disk) gets the outcome of its final
// progress file, not "abandoned", and is not reported as dead.
func TestClosedRunsKeepMonthAndOutcome(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	opts := Options{DuckDBPath: filepath.Join(dir, "w.duckdb"), ParquetDir: filepath.Join(dir, "parquet")}
	w, err := Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"died", "ended"} {
		if err := w.StartRun(ctx, model.RunRecord{RunID: id, StartedAt: fetchedAt, Status: "running", DomainsTotal: 5}); err != nil {
			t.Fatal(err)
		}
		if err := w.RecordCharge(ctx, model.Charge{RunID: id, SnapshotMonth: snap, Domain: "a.example", Endpoint: "site-overview", Credits: 1, FetchedAt: fetchedAt}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"died", "ended"} {
		liveRuns.Delete(id) // as if their process were gone
	}
	final := livestatus.Status{RunID: "ended", Month: snap, State: livestatus.StateFinal, Outcome: "failed",
		Message: "commit: no space left on device", StartedAt: fetchedAt, UpdatedAt: time.Now()}
	if err := livestatus.Write(livestatus.Path(opts.DuckDBPath), final); err != nil {
		t.Fatal(err)
	}
	w, err = Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if ab := w.Abandoned(); len(ab) != 1 || ab[0].RunID != "died" || ab[0].SnapshotMonth != snap {
		t.Errorf("abandoned = %+v, want only run died, under %s", ab, snap)
	}
	runs, err := w.Runs(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]model.RunRecord{}
	for _, r := range runs {
		got[r.RunID] = r
	}
	if r := got["died"]; r.Status != StatusAbandoned || r.SnapshotMonth != snap || r.CreditsSpent != 1 {
		t.Errorf("died = %s %q %d credits, want abandoned under %s with 1 credit", r.Status, r.SnapshotMonth, r.CreditsSpent, snap)
	}
	if r := got["ended"]; r.Status != "failed" || r.SnapshotMonth != snap || r.CreditsSpent != 1 {
		t.Errorf("ended = %s %q %d credits, want failed under %s with 1 credit", r.Status, r.SnapshotMonth, r.CreditsSpent, snap)
	}
}
