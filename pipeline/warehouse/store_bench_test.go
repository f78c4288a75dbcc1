package warehouse

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"sitewatch/pipeline/atlas/atlastest"
	"sitewatch/pipeline/model"
	"sitewatch/schema"
)

// BenchmarkStoreThroughput measures the load alone: answers per second through Store (decode,
// flatten, batched commits) for SITEWATCH_BENCH_DOMAINS domains (default 2,000) into an empty
// warehouse, and the same number again after 10 times as many domains of the same snapshot
// were loaded, so the ratio shows whether a domain's cost grows with the warehouse. The run needs well under 300 answers/s from the load.
//
//	go test -run '^$' -bench BenchmarkStoreThroughput -benchtime 1x ./pipeline/warehouse/
func BenchmarkStoreThroughput(b *testing.B) {
	n := envInt("SITEWATCH_BENCH_DOMAINS", 2000)
	ctx := context.Background()
	for range b.N {
		w, err := Open(ctx, Options{DuckDBPath: filepath.Join(b.TempDir(), "w.duckdb")})
		if err != nil {
			b.Fatal(err)
		}
		gen := atlastest.NewGenerator(1, snap)
		domains := atlastest.Domains(12 * n)
		store := func(ds []string) time.Duration {
			bodies := make([][2][]byte, len(ds))
			for i, d := range ds {
				bodies[i] = [2][]byte{gen.OverviewBody(d), gen.SimilarBody(d)}
			}
			start := time.Now()
			for i, d := range ds {
				for j, ep := range schema.DomainEndpoints {
					raw := model.Raw{Endpoint: ep, Domain: d, Body: bodies[i][j], FetchedAt: fetchedAt, RunID: "bench", Credits: 1}
					if err := w.Store(ctx, snap, raw); err != nil {
						b.Fatal(err)
					}
				}
			}
			if err := w.Flush(ctx); err != nil {
				b.Fatal(err)
			}
			return time.Since(start)
		}
		first := store(domains[:n])
		store(domains[n : 11*n])
		late := store(domains[11*n:])
		if got := count(b, w.DB(), `SELECT count(*) FROM sites`); got != 12*n {
			b.Fatalf("loaded %d domains, want %d", got, 12*n)
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(2*n)/first.Seconds(), "answers/s")
		b.ReportMetric(float64(2*n)/late.Seconds(), fmt.Sprintf("answers/s-after-%d", 11*n))
		b.ReportMetric(late.Seconds()/first.Seconds(), "late/first")
		b.Logf("%d domains into an empty warehouse: %.0f answers/s; the same after %d domains: %.0f answers/s (ratio of times %.2f)",
			n, float64(2*n)/first.Seconds(), 11*n, float64(2*n)/late.Seconds(), late.Seconds()/first.Seconds())
	}
}
