package report

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

// demoWatchlist is the default domains.yaml watchlist: known sites the simulator gives their
// public magnitudes.
var demoWatchlist = atlastest.DemoWatchlist

// simWatchlist is n domains: the demo watchlist first, then the simulator's generated domains.
func simWatchlist(n int) []string {
	if n <= len(demoWatchlist) {
		return demoWatchlist[:n]
	}
	return append(append([]string{}, demoWatchlist...), atlastest.Domains(n-len(demoWatchlist))...)
}

// simMonths are the two complete snapshots the layout test loads: the report compares the
// second with the first.
var simMonths = []string{"2026-10", "2026-11"}

// simWarehouse builds a real DuckDB warehouse holding simMonths for domains, straight from the
// simulator's bodies through warehouse.Store (the pipeline's own loading path, without HTTP,
// rate limits or credits, which the layout does not depend on), each month with a complete
// run. It returns the warehouse's database.
func simWarehouse(t testing.TB, domains []string) *sql.DB {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	w, err := warehouse.Open(ctx, warehouse.Options{DuckDBPath: filepath.Join(dir, "sitewatch.duckdb"), ParquetDir: filepath.Join(dir, "parquet"),
		BatchAnswers: 1 << 14, BatchWindow: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	for i, month := range simMonths {
		g := atlastest.NewGenerator(1, month)
		fetched, _ := time.Parse("2006-01", month)
		fetched = fetched.AddDate(0, 0, 1).Add(6 * time.Hour)
		run := model.RunRecord{RunID: fmt.Sprintf("sim-%d", i), SnapshotMonth: month, StartedAt: fetched, Status: "running",
			DomainsTotal: len(domains)}
		if err := w.StartRun(ctx, run); err != nil {
			t.Fatal(err)
		}
		store := func(raw model.Raw) {
			raw.FetchedAt = fetched
			if err := w.Store(ctx, month, raw); err != nil {
				t.Fatalf("store %s %s: %v", raw.Domain, raw.Endpoint, err)
			}
		}
		store(model.Raw{Endpoint: schema.EndpointCountries, Body: g.CountriesBody()})
		for _, d := range domains {
			store(model.Raw{Endpoint: schema.EndpointOverview, Domain: d, Body: g.OverviewBody(d)})
			store(model.Raw{Endpoint: schema.EndpointSimilar, Domain: d, Body: g.SimilarBody(d)})
		}
		if err := w.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		done := fetched.Add(time.Hour)
		left := int64(100000 - 2*len(domains)*(i+1))
		run.Status, run.FinishedAt, run.DomainsLoaded = "complete", &done, len(domains)
		run.Requests, run.CreditsSpent, run.CreditsRemaining = 2*len(domains)+1, 2*len(domains)+1, &left
		if err := w.FinishRun(ctx, run); err != nil {
			t.Fatal(err)
		}
		if _, err := w.RunQualityChecks(ctx, month); err != nil {
			t.Fatal(err)
		}
	}
	return w.DB()
}
