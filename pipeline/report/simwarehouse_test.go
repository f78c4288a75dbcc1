package report

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
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

// simWarehouse returns a real DuckDB warehouse holding simMonths for simWatchlist(n), built
// once per size for the life of the test binary (sharedWarehouses): the layout budgets and the
// needs-attention test both render the 28-, 300- and 5,000-domain reports, and loading 5,000
// domains' two months costs more CPU than laying their page out. Callers only read it: nothing
// in this package writes to a warehouse (the report only selects), so sharing changes no result.
func simWarehouse(tb testing.TB, n int) *sql.DB {
	tb.Helper()
	sharedWarehouses.Lock()
	defer sharedWarehouses.Unlock()
	if db, ok := sharedWarehouses.byN[n]; ok {
		return db
	}
	if sharedWarehouses.dir == "" {
		dir, err := os.MkdirTemp("", "report-sim-")
		if err != nil {
			tb.Fatal(err)
		}
		sharedWarehouses.dir = dir
	}
	w := buildSimWarehouse(tb, filepath.Join(sharedWarehouses.dir, strconv.Itoa(n)), simWatchlist(n))
	if sharedWarehouses.byN == nil {
		sharedWarehouses.byN = map[int]*sql.DB{}
	}
	sharedWarehouses.byN[n] = w.DB()
	sharedWarehouses.open = append(sharedWarehouses.open, w)
	return w.DB()
}

// sharedWarehouses are simWarehouse's warehouses by size, closed and removed by TestMain.
var sharedWarehouses struct {
	sync.Mutex
	dir  string
	byN  map[int]*sql.DB
	open []*warehouse.Warehouse
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, w := range sharedWarehouses.open {
		_ = w.Close()
	}
	if sharedWarehouses.dir != "" {
		_ = os.RemoveAll(sharedWarehouses.dir)
	}
	os.Exit(code)
}

// buildSimWarehouse builds the warehouse in dir, straight from the simulator's bodies through
// warehouse.Store (the pipeline's own loading path, without HTTP, rate limits or credits, which
// the layout does not depend on), each month with a complete run.
func buildSimWarehouse(t testing.TB, dir string, domains []string) *warehouse.Warehouse {
	t.Helper()
	ctx := context.Background()
	w, err := warehouse.Open(ctx, warehouse.Options{DuckDBPath: filepath.Join(dir, "sitewatch.duckdb"), ParquetDir: filepath.Join(dir, "parquet"),
		BatchAnswers: 1 << 14, BatchWindow: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
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
	return w
}
