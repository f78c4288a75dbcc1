package iceberg

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkCommitMemory publishes one month of a raw_responses-like table (SITEWATCH_BENCH_ROWS
// rows, default 60,000 as at 30,000 domains: ~1.3 KB of body each, written by DuckDB in its
// row groups of 16,384 rows like the export) to a fresh Iceberg table, and bounds the Go
// memory the commit takes: it samples what the runtime holds from the kernel every 2 ms and
// fails when the peak exceeds what it held before by more than commitHeadroom and 32 MB of
// slack (the limit is soft: the collector may overshoot it a little). Before the bound
// (issue 34) this commit alone took ~250 MB more at 60,000 rows, growing with the month.
//
//	go test -run '^$' -bench BenchmarkCommitMemory -benchtime 1x ./pipeline/publish/iceberg/
func BenchmarkCommitMemory(b *testing.B) {
	rows := 60000
	if v, err := strconv.Atoi(os.Getenv("SITEWATCH_BENCH_ROWS")); err == nil && v > 0 {
		rows = v
	}
	root := bodiesTree(b, rows, monthB)
	e := newEnvTB(b)
	ctx := context.Background()
	const slack = 32 << 20
	for i := range b.N {
		cfg := e.config(12)
		cfg.Namespace = fmt.Sprintf("mem%d", i)
		p, err := New(ctx, cfg, Options{Getenv: e.getenv})
		if err != nil {
			b.Fatal(err)
		}
		debug.FreeOSMemory()
		before := goMemoryHeld()
		var peak atomic.Int64
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			tick := time.NewTicker(2 * time.Millisecond)
			defer tick.Stop()
			for {
				if h := goMemoryHeld(); h > peak.Load() {
					peak.Store(h)
				}
				select {
				case <-stop:
					return
				case <-tick.C:
				}
			}
		}()
		start := time.Now()
		res, err := p.Month(ctx, root, monthB)
		took := time.Since(start)
		close(stop)
		<-done
		_ = p.Close()
		if err != nil {
			b.Fatal(err)
		}
		if res.Commits() != 1 || res.Rows() != int64(rows) {
			b.Fatalf("published %d commits, %d rows; want 1 commit of %d rows", res.Commits(), res.Rows(), rows)
		}
		grew := peak.Load() - before
		b.ReportMetric(float64(grew)/(1<<20), "go-MB-over-start")
		b.ReportMetric(took.Seconds(), "s")
		b.Logf("%d rows: Go memory %.0f MB before, peak %.0f MB (+%.0f MB, bound +%.0f MB), %.1f s",
			rows, float64(before)/(1<<20), float64(peak.Load())/(1<<20), float64(grew)/(1<<20), float64(commitHeadroom+slack)/(1<<20), took.Seconds())
		if grew > commitHeadroom+slack {
			b.Errorf("the commit took %.0f MB of Go memory beyond the %.0f MB it started with; the bound is %.0f MB",
				float64(grew)/(1<<20), float64(before)/(1<<20), float64(commitHeadroom+slack)/(1<<20))
		}
	}
}

// bodiesTree writes a Parquet tree holding one month of one table shaped like raw_responses:
// an id, a domain and a ~1.3 KB body per row (hex digests: half of it compresses, as stored
// bodies do not), in DuckDB's row groups of 16,384 rows.
func bodiesTree(b testing.TB, rows int, month string) string {
	b.Helper()
	root := b.TempDir()
	dir := filepath.Join(root, "raw_responses", "snapshot_month="+month)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	q := fmt.Sprintf(`COPY (SELECT i AS id, 'site' || i::VARCHAR || '.example' AS domain,
		(SELECT string_agg(md5((i * 40 + k)::VARCHAR), '') FROM range(40) t(k))::BLOB AS body
		FROM range(%d) r(i)) TO '%s' (FORMAT PARQUET, COMPRESSION zstd, ROW_GROUP_SIZE 16384)`, rows, filepath.Join(dir, "data_0.parquet"))
	if _, err := db.Exec(q); err != nil {
		b.Fatalf("write the bodies: %v", err)
	}
	return root
}
