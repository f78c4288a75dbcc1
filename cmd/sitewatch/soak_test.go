package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sitewatch/pipeline"
	"sitewatch/pipeline/atlas/atlastest"
	"sitewatch/pipeline/config"
	"sitewatch/pipeline/warehouse"
	"sitewatch/pipeline/wire"
)

// BenchmarkSoak runs a 5,000-domain snapshot (SITEWATCH_SOAK_DOMAINS overrides) in-process
// through atlastest at a high rate with a fault mix: 5% spurious 429 (Retry-After 1 s) and a
// 3% fail rate, which the simulator splits evenly into 500, 502 and 504 (1% each: 2% 502/504,
// 1% 500). It reruns until the snapshot is complete and fails unless every domain is loaded,
// no row is duplicated and the credits charged are exactly 2 x domains + 1. It reports the
// duration, domains/s, the 429 share and the process's peak RSS (VmHWM).
//
//	go test -run '^$' -bench BenchmarkSoak -benchtime 1x -timeout 60m ./pipeline/
func BenchmarkSoak(b *testing.B) {
	n := 5000
	if s := os.Getenv("SITEWATCH_SOAK_DOMAINS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			b.Fatalf("SITEWATCH_SOAK_DOMAINS=%q is not a positive number", s)
		}
		n = v
	}
	const rate = 1000
	domains := atlastest.Domains(n)
	for i := 0; i < b.N; i++ {
		srv := atlastest.NewServer(atlastest.Options{
			Month: testMonth, Rate: rate, Keys: map[string]int64{canaryKey: int64(4 * n)},
			LatencyMin: time.Millisecond, LatencyMax: 5 * time.Millisecond,
			FailRate: 0.03, Faults: atlastest.Faults{RateLimited: 0.05},
		})
		dir := b.TempDir()
		var cfg strings.Builder
		fmt.Fprintf(&cfg, "api:\n  base_url: %s\n  rate_limit: %d\n  timeout: 10s\nwarehouse:\n  duckdb: data/w.duckdb\n  parquet: data/parquet\ndomains:\n", srv.URL, rate)
		for _, d := range domains {
			fmt.Fprintf(&cfg, "  - %s\n", d)
		}
		path := filepath.Join(dir, "domains.yaml")
		if err := os.WriteFile(path, []byte(cfg.String()), 0o644); err != nil {
			b.Fatal(err)
		}
		getenv := func(k string) string {
			if k == config.EnvAPIKey {
				return canaryKey
			}
			return ""
		}
		c, err := config.Load(path, getenv)
		if err != nil {
			b.Fatal(err)
		}
		log := &syncBuffer{}
		env := Env{Env: pipeline.Env{Getenv: getenv, Credits: wire.Credits{}, Warehouses: wire.Warehouses{}, Publisher: wire.Publisher{}}, Stdout: log, Stderr: log}
		b.ResetTimer()
		start := time.Now()
		var runs []string
		for run := 1; ; run++ {
			sum, err := pipeline.Run(context.Background(), c, pipeline.RunOptions{Snapshot: testMonth}, env.Env)
			if sum != nil {
				runs = append(runs, fmt.Sprintf("%s %d/%d", sum.Status, sum.DomainsLoaded, sum.DomainsTotal))
			}
			if err == nil {
				break
			}
			if ExitCode(err) != ExitFailed || run == 3 {
				b.Fatalf("run %d: %v (exit %d); runs %v", run, err, ExitCode(err), runs)
			}
		}
		elapsed := time.Since(start)
		b.StopTimer()
		st := srv.Stats()
		srv.Close()

		wh, err := warehouse.Open(context.Background(), warehouse.Options{DuckDBPath: c.Warehouse.DuckDB, ParquetDir: c.Warehouse.Parquet, ReadOnly: true})
		if err != nil {
			b.Fatal(err)
		}
		db := wh.DB()
		var loaded, dups int
		if err := db.QueryRow("SELECT count(DISTINCT domain) FROM sites WHERE snapshot_month = ?", testMonth).Scan(&loaded); err != nil {
			b.Fatal(err)
		}
		for table, key := range tableKeys {
			var d int
			q := fmt.Sprintf("SELECT count(*) FROM (SELECT %s FROM %s GROUP BY ALL HAVING count(*) > 1)", key, table)
			if err := db.QueryRow(q).Scan(&d); err != nil {
				b.Fatal(err)
			}
			dups += d
		}
		wh.Close()
		if loaded != n {
			b.Errorf("loaded %d of %d domains", loaded, n)
		}
		if dups != 0 {
			b.Errorf("%d duplicate keys", dups)
		}
		if want := int64(2*n + 1); st.Charged != want {
			b.Errorf("charged %d credits, want 2 x %d + 1 = %d", st.Charged, n, want)
		}
		if strings.Contains(log.String(), canaryKey) {
			b.Errorf("the key leaked into the output")
		}
		peakMB := peakRSSMB()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		b.ReportMetric(elapsed.Seconds(), "s/snapshot")
		b.ReportMetric(float64(n)/elapsed.Seconds(), "domains/s")
		b.ReportMetric(peakMB, "peak-RSS-MB")
		b.ReportMetric(float64(ms.Sys)/(1<<20), "go-runtime-MB") // the rest of the RSS is DuckDB's (C++)
		b.ReportMetric(float64(st.ByStatus[429])/float64(st.Requests), "429-share")
		b.ReportMetric(float64(st.ByStatus[500]+st.ByStatus[502]+st.ByStatus[504])/float64(st.Requests), "5xx-share")
		b.ReportMetric(float64(st.Charged)/float64(2*n+1), "charged/needed")
		b.Logf("%d domains: %v, runs %v, %d requests (%v), charged %d, peak RSS %.0f MB (simulator, pipeline and DuckDB in one process)",
			n, elapsed.Round(100*time.Millisecond), runs, st.Requests, st.ByStatus, st.Charged, peakMB)
	}
}

// peakRSSMB is this process's peak resident set in MB: VmHWM from /proc/self/status (getrusage's
// ru_maxrss survives execve, so it can report the parent's peak), else ru_maxrss.
func peakRSSMB() float64 {
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
				if kb, err := strconv.ParseFloat(f[1], 64); err == nil {
					return kb / 1024
				}
			}
		}
	}
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Maxrss) / 1024
}
