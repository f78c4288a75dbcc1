package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sitewatch/pipeline"
	"sitewatch/pipeline/atlas/atlastest"
)

// BenchmarkRunTwoSources runs `sitewatch run` end to end (probes, plan, the month's first
// answer, country-metadata, the fetch, loading, Parquet) on a 150-domain watchlist paid by a
// marketplace quota of 100 at 10 requests/s and direct credits at 20 requests/s, with
// 200–800 ms of latency per call, and prints ideal ÷ achieved, the ideal being every payer at
// once: the longest share at its own rate (201 calls at 20/s = 10.05 s). The fetch phase alone
// is BenchmarkTwoSources (pipeline/sources); this figure is the wall time of Main, so it adds
// the run's own parts: reading the config, the free probes (beside opening the warehouse), the
// last commit, quality checks, Parquet export, recording the run and the checkpoint on close.
// On this first run no lone call learns the month and country-metadata goes with the rest.
func BenchmarkRunTwoSources(b *testing.B) {
	for range b.N {
		srv := atlastest.NewServer(atlastest.Options{Month: testMonth, Keys: map[string]int64{"canary-key-7f3a9c": 1000}, Rate: 20,
			MarketplaceHost: listingHost, MarketplaceKey: listingKey, MarketplaceQuota: 100, MarketplaceRate: 10,
			MarketplaceQuotaReset: time.Now().Add(time.Hour), LatencyMin: 200 * time.Millisecond, LatencyMax: 800 * time.Millisecond})
		dir := b.TempDir()
		cfg := filepath.Join(dir, "domains.yaml")
		var y strings.Builder
		fmt.Fprintf(&y, "api:\n  sources:\n    - {name: marketplace, mode: marketplace, base_url: %s, marketplace_host: %s, marketplace_key_env: LISTING_KEY, rate_limit: 10}\n", srv.URL, listingHost)
		fmt.Fprintf(&y, "    - {name: direct, mode: direct, base_url: %s, key_env: ATLAS_API_KEY, rate_limit: 20}\ndomains:\n", srv.URL)
		for _, d := range atlastest.Domains(150) {
			fmt.Fprintf(&y, "  - %q\n", d)
		}
		if err := os.WriteFile(cfg, []byte(y.String()), 0o644); err != nil {
			b.Fatal(err)
		}
		vars := map[string]string{"ATLAS_API_KEY": "canary-key-7f3a9c", "LISTING_KEY": listingKey}
		out := &syncBuffer{}
		env := Env{Env: pipeline.Env{Getenv: func(k string) string { return vars[k] },
			Logger: slog.New(slog.NewTextHandler(out, nil))}, Stdout: out, Stderr: out}
		start := time.Now()
		code := Main(context.Background(), []string{"run", "--config", cfg}, env)
		achieved := time.Since(start)
		srv.Close()
		if code != ExitOK {
			b.Fatalf("run exit %d\n%s", code, tail(out.String(), 2000))
		}
		ideal := 10050 * time.Millisecond
		ratio := ideal.Seconds() / achieved.Seconds()
		b.ReportMetric(ratio, "ideal/achieved")
		fmt.Printf("run end to end, two sources, 301 calls: ideal %v, achieved %v: ideal ÷ achieved = %.3f\n",
			ideal, achieved.Round(time.Millisecond), ratio)
	}
}
