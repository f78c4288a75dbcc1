package main

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"sitewatch/pipeline"
	"sitewatch/pipeline/atlas/atlastest"
	"sitewatch/pipeline/config"
	"sitewatch/pipeline/wire"
)

// BenchmarkRunScale runs one snapshot at 1,000 and at 10,000 domains (SITEWATCH_LONG=1 adds
// 100,000) against atlastest at an unlimited rate (rate_limit 10000, no latency). Each run is
// a child process (TestRunScaleChild), so its peak RSS (VmHWM) is the run's alone, not the
// simulator's. It prints the peak RSS at each size and the ratio to the smallest, the
// milliseconds per domain and the calls per second; a run's cost should be flat in the
// watchlist size (docs/warehouse-internals.md, "Memory"). SITEWATCH_SCALE_SIZES the sizes (e.g. 1000,10000),
// SITEWATCH_SCALE_PROFILE=dir writes CPU and peak-heap profiles and the child's output there,
// SITEWATCH_SCALE_TRACE=1 adds the run's log and an RSS line every 20 ms to that output,
// SITEWATCH_SCALE_MEMORY_LIMIT sets warehouse.memory_limit (e.g. 64MiB) instead of the default.
// It also reports the most DuckDB held in its spill directory at once (spill-MB), and the
// engine floor at each size: the peak RSS of DuckDB alone storing the run's rows in as many
// commits (engineFloor), so the run's peak can be told apart from what the engine needs.
//
//	go test -run '^$' -bench BenchmarkRunScale -benchtime 1x -timeout 60m ./cmd/sitewatch/
func BenchmarkRunScale(b *testing.B) {
	sizes := []int{1000, 10000}
	if s := os.Getenv("SITEWATCH_SCALE_SIZES"); s != "" {
		sizes = nil
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(f)
			if err != nil || n < 1 {
				b.Fatalf("SITEWATCH_SCALE_SIZES=%q: %q is not a positive number", s, f)
			}
			sizes = append(sizes, n)
		}
	} else if longTests() {
		sizes = append(sizes, 100000)
	}
	for i := 0; i < b.N; i++ {
		var base scaleResult
		for _, n := range sizes {
			r := runScaleChild(b, n)
			r.floorMB = engineFloor(b, r.warehouse, n)
			if n == sizes[0] {
				base = r
			}
			name := strconv.Itoa(n)
			b.ReportMetric(r.rssMB, "peak-RSS-MB-"+name)
			b.ReportMetric(r.floorMB, "engine-floor-RSS-MB-"+name)
			b.ReportMetric(r.msPerDomain, "ms/domain-"+name)
			b.ReportMetric(r.callsPerSec, "calls/s-"+name)
			b.ReportMetric(r.goSysMB, "go-runtime-MB-"+name) // the rest of the RSS is DuckDB's (C++)
			b.ReportMetric(r.spillMB, "spill-MB-"+name)
			if n != sizes[0] {
				b.ReportMetric(r.rssMB/base.rssMB, fmt.Sprintf("RSS-ratio-%d/%d", n, sizes[0]))
				b.ReportMetric(r.floorMB/base.floorMB, fmt.Sprintf("engine-floor-RSS-ratio-%d/%d", n, sizes[0]))
				b.ReportMetric(r.msPerDomain/base.msPerDomain, fmt.Sprintf("ms/domain-ratio-%d/%d", n, sizes[0]))
			}
			b.Logf("%d domains: peak RSS %.0f MB (Go runtime %.0f MB), %.2f ms/domain, %.0f calls/s, at most %.1f MB spilled to disk; DuckDB alone storing the same rows in %d commits: peak RSS %.0f MB",
				n, r.rssMB, r.goSysMB, r.msPerDomain, r.callsPerSec, r.spillMB, floorCommits(n), r.floorMB)
		}
	}
}

type scaleResult struct {
	rssMB, goSysMB, msPerDomain, callsPerSec, spillMB float64
	warehouse                                         string  // the run's DuckDB file, for engineFloor
	floorMB                                           float64 // engineFloor's peak RSS
}

// runScaleChild runs one snapshot of n domains in a child process and returns its figures.
func runScaleChild(b *testing.B, n int) scaleResult {
	b.Helper()
	key := "scale-key"
	srv := atlastest.NewServer(atlastest.Options{Month: testMonth, Rate: 1_000_000, Keys: map[string]int64{key: int64(3*n + 10)}})
	defer srv.Close()
	dir := b.TempDir()
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "api:\n  base_url: %s\n  rate_limit: 10000\n  timeout: 30s\nwarehouse:\n  duckdb: data/w.duckdb\n  parquet: data/parquet\n", srv.URL)
	if limit := os.Getenv("SITEWATCH_SCALE_MEMORY_LIMIT"); limit != "" {
		fmt.Fprintf(&cfg, "  memory_limit: %s\n", limit)
	}
	cfg.WriteString("domains:\n")
	for _, d := range atlastest.Domains(n) {
		fmt.Fprintf(&cfg, "  - %s\n", d)
	}
	path := filepath.Join(dir, "domains.yaml")
	if err := os.WriteFile(path, []byte(cfg.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestRunScaleChild$", "-test.v")
	cmd.Env = append(os.Environ(), "SITEWATCH_SCALE_CHILD="+path, config.EnvAPIKey+"="+key)
	if dir := os.Getenv("SITEWATCH_SCALE_PROFILE"); dir != "" {
		cmd.Env = append(cmd.Env, "SITEWATCH_SCALE_PROFILE="+filepath.Join(dir, strconv.Itoa(n)))
		if err := os.MkdirAll(filepath.Join(dir, strconv.Itoa(n)), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	out, err := cmd.CombinedOutput()
	if dir := os.Getenv("SITEWATCH_SCALE_PROFILE"); dir != "" {
		_ = os.WriteFile(filepath.Join(dir, strconv.Itoa(n), "child.log"), out, 0o644)
	}
	if err != nil {
		b.Fatalf("run of %d domains: %v\n%s", n, err, tail(string(out), 3000))
	}
	var r scaleResult
	var seconds float64
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 && f[0] == "scale" {
			v, _ := strconv.ParseFloat(f[2], 64)
			switch f[1] {
			case "maxrss_kib":
				r.rssMB = v / 1024
			case "seconds":
				seconds = v
			case "go_sys_mib":
				r.goSysMB = v
			case "spill_mib":
				r.spillMB = v
			}
		}
	}
	if r.rssMB == 0 || seconds == 0 {
		b.Fatalf("the child printed no figures:\n%s", tail(string(out), 3000))
	}
	if got, want := srv.Stats().Charged, int64(2*n+1); got != want {
		b.Errorf("%d domains: charged %d, want %d", n, got, want)
	}
	r.warehouse = filepath.Join(dir, "data", "w.duckdb")
	r.msPerDomain = seconds * 1000 / float64(n)
	r.callsPerSec = float64(2*n+1) / seconds
	return r
}

// TestRunScaleChild is not a test: it is the child process of BenchmarkRunScale. It runs the
// snapshot of the config in SITEWATCH_SCALE_CHILD and prints its duration and VmHWM.
func TestRunScaleChild(t *testing.T) {
	path := os.Getenv("SITEWATCH_SCALE_CHILD")
	if path == "" {
		t.Skip("child process of BenchmarkRunScale")
	}
	tuneGC(os.Getenv) // as main does
	cfg, err := config.Load(path, os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	if dir := os.Getenv("SITEWATCH_SCALE_PROFILE"); dir != "" {
		stop := profileRun(t, dir)
		defer stop()
	}
	peaks := startPeakSampler(cfg.Warehouse.DuckDB + ".tmp")
	start := time.Now()
	sum, err := pipeline.Run(context.Background(), cfg, pipeline.RunOptions{Snapshot: testMonth}, scaleEnv())
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	elapsed := time.Since(start)
	if sum.DomainsLoaded != sum.DomainsTotal {
		t.Fatalf("loaded %d of %d", sum.DomainsLoaded, sum.DomainsTotal)
	}
	printPeakRSS(t, "scale")
	fmt.Printf("scale seconds %.3f\n", elapsed.Seconds())
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Printf("scale go_sys_mib %.1f\n", float64(ms.Sys)/(1<<20))
	for _, p := range peaks.stop() {
		fmt.Printf("scale peak %s %.0f\n", p.name, p.max)
	}
	fmt.Printf("scale spill_mib %.1f\n", float64(peaks.spill)/(1<<20))
}

// printPeakRSS prints the process's VmHWM as "<prefix> maxrss_kib N" for the parent to read.
func printPeakRSS(t *testing.T, prefix string) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			fmt.Printf("%s maxrss_kib %s\n", prefix, f[1])
		}
	}
}

func scaleEnv() pipeline.Env {
	env := pipeline.Env{Getenv: os.Getenv, Credits: wire.Credits{}, Warehouses: wire.Warehouses{}, Publisher: wire.Publisher{}}
	if os.Getenv("SITEWATCH_SCALE_TRACE") != "" {
		env.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
		env.ProgressEvery = time.Second
	}
	return env
}

// peakSampler follows runtime/metrics every 20 ms and keeps the highest value of each, so
// the child can say what its Go memory was made of at its peak (heap objects, goroutine
// stacks, goroutines), which a heap profile taken after a collection cannot show.
type peakSampler struct {
	done    chan struct{}
	stopped chan struct{}
	samples []metrics.Sample
	peaks   []peakValue
	// spillDir is DuckDB's temp_directory (<duckdb file>.tmp); spill the most bytes it held
	// at once: what went beyond memory_limit and, on a full disk, would abort DuckDB 1.1.2.
	spillDir string
	spill    int64
}

type peakValue struct {
	name string
	max  float64
}

var peakMetrics = []string{
	"/memory/classes/total:bytes",
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/stacks:bytes",
	"/gc/heap/live:bytes",
	"/sched/goroutines:goroutines",
}

func startPeakSampler(spillDir string) *peakSampler {
	p := &peakSampler{done: make(chan struct{}), stopped: make(chan struct{}), spillDir: spillDir}
	for _, name := range peakMetrics {
		p.samples = append(p.samples, metrics.Sample{Name: name})
		p.peaks = append(p.peaks, peakValue{name: name})
	}
	go func() {
		defer close(p.stopped)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			p.sample()
			select {
			case <-p.done:
				return
			case <-tick.C:
			}
		}
	}()
	return p
}

func (p *peakSampler) sample() {
	if os.Getenv("SITEWATCH_SCALE_TRACE") != "" {
		if statm, err := os.ReadFile("/proc/self/statm"); err == nil {
			f := strings.Fields(string(statm))
			pages, _ := strconv.Atoi(f[1])
			fmt.Fprintf(os.Stderr, "trace %s rss %d MB\n", time.Now().Format("15:04:05.000"), pages*os.Getpagesize()>>20)
		}
	}
	if entries, err := os.ReadDir(p.spillDir); err == nil {
		var held int64
		for _, e := range entries {
			if info, err := e.Info(); err == nil {
				held += info.Size()
			}
		}
		p.spill = max(p.spill, held)
	}
	metrics.Read(p.samples)
	for i, s := range p.samples {
		if s.Value.Kind() == metrics.KindUint64 {
			p.peaks[i].max = max(p.peaks[i].max, float64(s.Value.Uint64()))
		}
	}
}

func (p *peakSampler) stop() []peakValue {
	close(p.done)
	<-p.stopped
	return p.peaks
}

// samplePeakHeap writes a heap profile to path each time the live heap after a collection
// passes 1.1 times the size of the last one written, so the file shows what the heap held at
// its peak (a heap profile describes the heap as of the last collection).
func samplePeakHeap(path string, done <-chan struct{}) {
	var written uint64
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
		}
		metrics.Read(live)
		n := live[0].Value.Uint64()
		if n < written*11/10 || n < 8<<20 {
			continue
		}
		written = n
		if f, err := os.Create(path); err == nil {
			_ = pprof.Lookup("heap").WriteTo(f, 0)
			_ = f.Close()
		}
	}
}

// profileRun writes a CPU profile of the run and a heap profile at its end into dir
// (SITEWATCH_SCALE_PROFILE=dir), to see what grows with the watchlist.
func profileRun(t *testing.T, dir string) (stop func()) {
	cpu, err := os.Create(filepath.Join(dir, "cpu.pprof"))
	if err != nil {
		t.Fatal(err)
	}
	if err := pprof.StartCPUProfile(cpu); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go samplePeakHeap(filepath.Join(dir, "peakheap.pprof"), done)
	return func() {
		close(done)
		pprof.StopCPUProfile()
		cpu.Close()
		heap, err := os.Create(filepath.Join(dir, "heap.pprof"))
		if err != nil {
			t.Fatal(err)
		}
		defer heap.Close()
		if err := pprof.Lookup("allocs").WriteTo(heap, 0); err != nil {
			t.Fatal(err)
		}
	}
}
