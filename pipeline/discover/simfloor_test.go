package discover

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"sitewatch/pipeline/atlas/atlastest"
	"sitewatch/pipeline/model"
	"sitewatch/pipeline/warehouse"
	"sitewatch/schema"
)

// TestTopTenAboveTheFloorOnSimulatedHistory loads two simulated months of 300 domains (the
// simulator's bodies through warehouse.Store, as a run stores them) and checks that discover's
// top 10 holds no candidate below the default size floor, while the same list without the
// floor does: the floor, not the data, keeps them out.
func TestTopTenAboveTheFloorOnSimulatedHistory(t *testing.T) {
	if testing.Short() {
		t.Skip("stores two months of 300 simulated domains")
	}
	db := simulatedWarehouse(t, 300, []string{"2026-10", "2026-11"})
	ctx := context.Background()
	_, top, err := Candidates(ctx, db, Query{Top: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(top) != 10 {
		t.Fatalf("%d candidates, want 10", len(top))
	}
	for _, c := range top {
		if c.TotalVisits < DefaultMinVisits {
			t.Errorf("#%d %s has %.0f visits a month, below the floor of %d", c.Rank, c.Domain, c.TotalVisits, DefaultMinVisits)
		}
	}
	_, all, err := Candidates(ctx, db, Query{MinVisits: NoFloor})
	if err != nil {
		t.Fatal(err)
	}
	small := 0
	for _, c := range all {
		if c.TotalVisits < DefaultMinVisits {
			small++
		}
	}
	if small == 0 {
		t.Fatalf("no candidate of the %d below the floor without it: the test cannot tell", len(all))
	}
	t.Logf("%d candidates without the floor, %d of them below %d visits a month", len(all), small, DefaultMinVisits)
}

// simulatedWarehouse stores months of n simulated domains (overview and similar sites), each
// month closed by a complete run.
func simulatedWarehouse(t *testing.T, n int, months []string) *sql.DB {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	w, err := warehouse.Open(ctx, warehouse.Options{DuckDBPath: filepath.Join(dir, "w.duckdb"), ParquetDir: filepath.Join(dir, "parquet"),
		BatchAnswers: 1 << 14, BatchWindow: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	domains := append(append([]string{}, atlastest.DemoWatchlist...), atlastest.Domains(n-len(atlastest.DemoWatchlist))...)
	for i, month := range months {
		g := atlastest.NewGenerator(1, month)
		at, _ := time.Parse("2006-01", month)
		at = at.AddDate(0, 0, 1)
		run := model.RunRecord{RunID: fmt.Sprintf("sim-%d", i), SnapshotMonth: month, StartedAt: at, Status: "running", DomainsTotal: len(domains)}
		if err := w.StartRun(ctx, run); err != nil {
			t.Fatal(err)
		}
		store := func(raw model.Raw) {
			raw.FetchedAt = at
			if err := w.Store(ctx, month, raw); err != nil {
				t.Fatalf("store %s %s: %v", raw.Domain, raw.Endpoint, err)
			}
		}
		for _, d := range domains {
			store(model.Raw{Endpoint: schema.EndpointOverview, Domain: d, Body: g.OverviewBody(d)})
			store(model.Raw{Endpoint: schema.EndpointSimilar, Domain: d, Body: g.SimilarBody(d)})
		}
		if err := w.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		done := at.Add(time.Hour)
		run.Status, run.FinishedAt, run.DomainsLoaded = "complete", &done, len(domains)
		if err := w.FinishRun(ctx, run); err != nil {
			t.Fatal(err)
		}
	}
	return w.DB()
}
