package report

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"sitewatch/pipeline/warehouse"
)

// TestProfileWarehouse times each read of load, the CSV and the page on a kept warehouse
// (issue 44: where the report's time and memory go at 100,000 domains). It runs only when
// SITEWATCH_REPORT_PROFILE names a warehouse file; SITEWATCH_REPORT_SNAPSHOT picks the month
// (default: the newest) and SITEWATCH_REPORT_CPUPROFILE a file for a CPU profile of it all:
//
//	SITEWATCH_REPORT_PROFILE=/work/rep-100k/data/w.duckdb SITEWATCH_REPORT_CPUPROFILE=/tmp/report.pprof \
//	  go test -count=1 -run TestProfileWarehouse -v -timeout 60m ./pipeline/report/
func TestProfileWarehouse(t *testing.T) {
	path := os.Getenv("SITEWATCH_REPORT_PROFILE")
	if path == "" {
		t.Skip("set SITEWATCH_REPORT_PROFILE to a warehouse file to profile the report on it")
	}
	ctx := context.Background()
	wh, err := warehouse.Open(ctx, warehouse.Options{DuckDBPath: path, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = wh.Close() })
	snapshot := os.Getenv("SITEWATCH_REPORT_SNAPSHOT")
	if snapshot == "" {
		if err := wh.DB().QueryRowContext(ctx, `SELECT max(snapshot_month) FROM sites`).Scan(&snapshot); err != nil {
			t.Fatal(err)
		}
	}
	if out := os.Getenv("SITEWATCH_REPORT_CPUPROFILE"); out != "" {
		stopCPUProfile := startCPUProfile(t, out)
		defer stopCPUProfile()
	}
	start := time.Now()
	var csvOut, pageOut countingWriter
	d, err := loadWith(ctx, wh.DB(), snapshot, settings{}, loadOptions{CSV: &csvOut, CSVName: "domains.csv",
		took: func(step string, took time.Duration) {
			t.Logf("%-18s %8.2f s  Go heap %4d MB  peak RSS %s", step, took.Seconds(), heapMB(), peakRSS())
		}})
	if err != nil {
		t.Fatal(err)
	}
	timed(t, "page", func() error { return writePage(d, &pageOut) })
	t.Logf("snapshot %s: %d sites (%d kept), %d shown; csv %.1f MB, page %.1f MB; total %.1f s, peak RSS %s",
		snapshot, d.Totals.Loaded, len(d.Sites), len(d.Shown), float64(csvOut.n)/1e6, float64(pageOut.n)/1e6, time.Since(start).Seconds(), peakRSS())
}

func timed(t *testing.T, step string, f func() error) {
	t.Helper()
	start := time.Now()
	if err := f(); err != nil {
		t.Fatalf("%s: %v", step, err)
	}
	t.Logf("%-18s %8.2f s  Go heap %4d MB  peak RSS %s", step, time.Since(start).Seconds(), heapMB(), peakRSS())
}

func startCPUProfile(t *testing.T, out string) (stop func()) {
	t.Helper()
	f, err := os.Create(filepath.Clean(out))
	if err != nil {
		t.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		t.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			t.Error(err)
		}
	}
}

type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}

func heapMB() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse >> 20
}

// peakRSS is the process's peak resident set (VmHWM), DuckDB's memory included.
func peakRSS() string {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			return strings.TrimSpace(rest)
		}
	}
	return "unknown"
}
