package warehouse

import (
	"context"
	"path/filepath"
	"testing"

	"sitewatch/pipeline/atlas/atlastest"
	"sitewatch/pipeline/model"
	"sitewatch/schema"
)

// TestArrowViewsFreeWhatDuckDBTook: every Arrow view a load registers gives back the schemas
// DuckDB 1.1.2 took from its stream and never released (at least two a view: duckdb_arrow_scan's
// and the bind of the INSERT), so C memory no longer grows by ~6 KB a view. go-duckdb's
// RegisterView leaked them: 3,188 views grew glibc's in-use memory by 27 MB (8.5 KB a view).
func TestArrowViewsFreeWhatDuckDBTook(t *testing.T) {
	defer func(prev int64) { arrowViewMinRows = prev }(arrowViewMinRows)
	arrowViewMinRows = 1 // every table's rows through a view
	ctx := context.Background()
	w, err := Open(ctx, Options{DuckDBPath: filepath.Join(t.TempDir(), "w.duckdb")})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Close() }()
	gen := atlastest.NewGenerator(1, snap)
	domains := atlastest.Domains(140)
	store := func(ds []string) {
		for _, d := range ds {
			for _, ep := range schema.DomainEndpoints {
				body := gen.OverviewBody(d)
				if ep == schema.EndpointSimilar {
					body = gen.SimilarBody(d)
				}
				if err := w.Store(ctx, snap, model.Raw{Endpoint: ep, Domain: d, Body: body, FetchedAt: fetchedAt, RunID: "r", Credits: 1}); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Flush(ctx); err != nil { // a commit per domain: a view per table each
				t.Fatal(err)
			}
		}
	}
	store(domains[:40]) // DuckDB's own first allocations (catalog, first segments) are not the leak
	releaseNativeMemory()
	glibcBefore, measured := glibcInUse()
	views, schemas := viewRegistrations.Load(), releasedSchemas.Load()
	store(domains[40:])
	releaseNativeMemory()
	glibcAfter, _ := glibcInUse()
	views, schemas = viewRegistrations.Load()-views, releasedSchemas.Load()-schemas
	if views < 1000 {
		t.Fatalf("100 commits registered %d Arrow views, want one per table with rows each (≥1,000)", views)
	}
	if schemas < 2*views {
		t.Errorf("%d Arrow views gave back %d schemas, want at least two each (duckdb_arrow_scan's and the INSERT's bind)", views, schemas)
	}
	if !measured {
		return // glibc's in-use memory is measured on Linux (CI), not elsewhere
	}
	grown := int64(glibcAfter) - int64(glibcBefore)
	t.Logf("%d views, %d schemas released; glibc in use %+d bytes (%.0f a view)", views, schemas, grown, float64(grown)/float64(views))
	if grown > 1024*views {
		t.Errorf("glibc's in-use memory grew by %d bytes over %d Arrow views (%d a view): the views' schemas leak (~6 KB a view)", grown, views, grown/views)
	}
}
