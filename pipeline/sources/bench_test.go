package sources

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"sitewatch/pipeline/atlas"
	"sitewatch/pipeline/atlas/atlastest"
	"sitewatch/pipeline/model"
	"sitewatch/schema"
)

// BenchmarkTwoSources measures the fetch of a 150-domain snapshot (301 calls) paid by a
// marketplace quota of 100 at 10 requests/s and direct credits at 20 requests/s, with
// 200–800 ms of latency per call, against the ideal of every payer at once (the longest
// share at its own rate: 201 calls at 20/s = 10.05 s). It reports ideal ÷ achieved, which must
// be at least 0.90. The free probes plan the shares, as in a run.
func BenchmarkTwoSources(b *testing.B) {
	for range b.N {
		srv := atlastest.NewServer(atlastest.Options{Month: "2026-11", Keys: map[string]int64{keyA: 1000}, Rate: 20,
			MarketplaceHost: listingHost, MarketplaceKey: listingKey, MarketplaceQuota: 100, MarketplaceRate: 10,
			LatencyMin: 200 * time.Millisecond, LatencyMax: 800 * time.Millisecond})
		market := benchSource(b, "marketplace", atlas.Config{BaseURL: srv.URL, Mode: atlas.ModeMarketplace, MarketplaceHost: listingHost, MarketplaceKey: listingKey, RateLimit: 10})
		direct := benchSource(b, "direct", atlas.Config{BaseURL: srv.URL, APIKey: keyA, RateLimit: 20})
		reqs := append(requests(150), requests(150)...)
		for i := 150; i < 300; i++ {
			reqs[i].Endpoint = schema.EndpointSimilar
		}
		reqs = append(reqs, model.Request{Endpoint: schema.EndpointCountries})
		plan := NewPlan([]Allowance{allowanceOf(b, direct, 20), allowanceOf(b, market, 10)}, len(reqs), time.Now().Add(24*time.Hour))
		m := NewMulti([]*Source{market, direct})
		start := time.Now()
		ok := 0
		err := m.FetchAll(context.Background(), reqs, func(res model.Result) {
			if res.Err == nil {
				ok++
			}
		})
		achieved := time.Since(start)
		srv.Close()
		if err != nil || ok != len(reqs) {
			b.Fatalf("FetchAll: %v, %d of %d calls ok", err, ok, len(reqs))
		}
		ratio := plan.Ideal().Seconds() / achieved.Seconds()
		b.ReportMetric(ratio, "ideal/achieved")
		b.ReportMetric(achieved.Seconds(), "s")
		fmt.Printf("two sources, 301 calls (%s): ideal %v, achieved %v: ideal ÷ achieved = %.3f (want >= 0.90); 429s: %d\n",
			plan, plan.Ideal().Round(time.Millisecond), achieved.Round(time.Millisecond), ratio, m.Stats().RateLimited)
		if ratio < 0.90 || math.IsNaN(ratio) {
			b.Errorf("ideal ÷ achieved = %.3f, below 0.90", ratio)
		}
	}
}

func benchSource(b *testing.B, name string, cfg atlas.Config) *Source {
	b.Helper()
	cfg.Concurrency = int(cfg.RateLimit*3) + 1 // as a run sizes it (pipeline.runConcurrency)
	c, err := atlas.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return &Source{Name: name, Client: c, Room: -1}
}

// allowanceOf probes s (free) and sets its room from the answer, as a run does.
func allowanceOf(b *testing.B, s *Source, rate float64) Allowance {
	b.Helper()
	p, err := s.Client.Probe(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	a := Allowance{Name: s.Name, Usable: p.Balance, Rate: rate}
	if p.QuotaRemaining >= 0 {
		a.Usable, a.Quota, a.Reset = p.QuotaRemaining, true, p.QuotaReset
	}
	s.Room = a.Usable
	return a
}
