package main

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"sitewatch/pipeline"
	"sitewatch/pipeline/atlas/atlastest"
	"sitewatch/pipeline/config"
	"sitewatch/pipeline/model"
	"sitewatch/pipeline/publish"
	"sitewatch/pipeline/publish/s3test"
	"sitewatch/pipeline/restore"
	"sitewatch/pipeline/wire"
)

// BenchmarkShare measures what the bucket's restore copy costs at 10,000 domains
// (SITEWATCH_SHARE_DOMAINS another size): one run against atlastest, then a publish of the
// month to a local versitygw without and with the archive tables (raw answers, ledger), and a
// restore of the bucket into a fresh directory. It prints the bytes and seconds the archive
// adds and the ratio of the two publishes, measured in the same run, then what saving the
// month's restore copy and restoring from it (tables rebuilt) take (docs/sharing.md).
//
//	go test -run '^$' -bench BenchmarkShare -benchtime 1x -timeout 20m ./cmd/sitewatch/
func BenchmarkShare(b *testing.B) {
	n := 10000
	if s := os.Getenv("SITEWATCH_SHARE_DOMAINS"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	gw := bucketGateway(b)
	cfg := shareRun(b, n)
	for i := 0; i < b.N; i++ {
		derived := b.TempDir()
		if err := os.CopyFS(derived, os.DirFS(cfg.Warehouse.Parquet)); err != nil {
			b.Fatal(err)
		}
		for _, t := range model.ArchiveTables {
			if err := os.RemoveAll(filepath.Join(derived, t)); err != nil {
				b.Fatal(err)
			}
		}
		without := sharePublish(b, gw, derived, "without", testMonth)
		with := sharePublish(b, gw, cfg.Warehouse.Parquet, "with", testMonth)
		fmt.Printf("publish %d domains: derived tables %.1f MB in %.2f s; with raw answers + ledger %.1f MB in %.2f s: +%.1f MB, +%.2f s (ratio %.2f)\n",
			n, mb(without.UploadedBytes), without.Duration.Seconds(), mb(with.UploadedBytes), with.Duration.Seconds(),
			mb(with.UploadedBytes-without.UploadedBytes), (with.Duration - without.Duration).Seconds(), with.Duration.Seconds()/without.Duration.Seconds())
		for _, t := range model.ArchiveTables {
			fmt.Printf("  %s: %.1f MB\n", t, mb(dirSize(b, filepath.Join(cfg.Warehouse.Parquet, t))))
		}
		shareRestore(b, gw, n)
		shareCopy(b, gw, cfg.Warehouse.Parquet, n)
	}
}

// shareCopy saves the month's restore copy (what a run that stops mid-month, or an
// Iceberg-only publish, leaves) to its own prefix and restores from it into a fresh directory:
// the tables are rebuilt from the raw answers.
func shareCopy(b *testing.B, gw *s3test.Server, root string, n int) {
	b.Helper()
	p, err := publish.New(context.Background(), config.PublishConfig{URL: "s3://team-bucket/copy", Endpoint: gw.Endpoint, Region: "us-east-1", PathStyle: true}, publish.Options{})
	if err != nil {
		b.Fatal(err)
	}
	saved, err := p.SaveRestoreCopy(context.Background(), root, testMonth, "bench", false)
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	start := time.Now()
	res, err := restore.Run(context.Background(), p, restore.Options{DuckDB: filepath.Join(dir, "w.duckdb"), Parquet: filepath.Join(dir, "parquet"), Copies: p.RestoreCopies()})
	if err != nil {
		b.Fatal(err)
	}
	fmt.Printf("restore copy of %d domains: %d objects, %.1f MB saved in %.2f s; restored from it (tables rebuilt from the raw answers) in %.2f s (%d months from copies)\n",
		n, saved.Files, mb(saved.UploadedBytes), saved.Duration.Seconds(), time.Since(start).Seconds(), len(res.FromCopies))
}

func mb(n int64) float64 { return float64(n) / 1e6 }

// shareRun loads one month of n domains in-process and returns its config.
func shareRun(b *testing.B, n int) *config.Config {
	b.Helper()
	key := "share-key"
	srv := atlastest.NewServer(atlastest.Options{Month: testMonth, Rate: 1_000_000, Keys: map[string]int64{key: int64(3*n + 10)}})
	defer srv.Close()
	var y strings.Builder
	fmt.Fprintf(&y, "api:\n  base_url: %s\n  rate_limit: 10000\n  timeout: 30s\nwarehouse:\n  duckdb: data/w.duckdb\n  parquet: data/parquet\ndomains:\n", srv.URL)
	for _, d := range atlastest.Domains(n) {
		fmt.Fprintf(&y, "  - %s\n", d)
	}
	path := filepath.Join(b.TempDir(), "domains.yaml")
	if err := os.WriteFile(path, []byte(y.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	getenv := func(k string) string {
		if k == config.EnvAPIKey {
			return key
		}
		return ""
	}
	cfg, err := config.Load(path, getenv)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := pipeline.Run(context.Background(), cfg, pipeline.RunOptions{}, pipeline.Env{Getenv: getenv, Credits: wire.Credits{}, Warehouses: wire.Warehouses{}, Publisher: wire.Publisher{}}); err != nil {
		b.Fatal(err)
	}
	return cfg
}

func sharePublish(b *testing.B, gw *s3test.Server, root, prefix, month string) publish.Result {
	b.Helper()
	p, err := publish.New(context.Background(), config.PublishConfig{URL: "s3://team-bucket/" + prefix, Endpoint: gw.Endpoint, Region: "us-east-1", PathStyle: true}, publish.Options{})
	if err != nil {
		b.Fatal(err)
	}
	res, err := p.Month(context.Background(), root, month, "bench")
	if err != nil {
		b.Fatal(err)
	}
	return res
}

func shareRestore(b *testing.B, gw *s3test.Server, n int) {
	b.Helper()
	p, err := publish.New(context.Background(), config.PublishConfig{URL: "s3://team-bucket/with", Endpoint: gw.Endpoint, Region: "us-east-1", PathStyle: true}, publish.Options{})
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	start := time.Now()
	log := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{Level: slog.LevelInfo}))
	res, err := restore.Run(context.Background(), p, restore.Options{DuckDB: filepath.Join(dir, "w.duckdb"), Parquet: filepath.Join(dir, "parquet"), Logger: log})
	if err != nil {
		b.Fatal(err)
	}
	fmt.Printf("restore %d domains: %d objects, %.1f MB downloaded and verified, warehouse built: %.2f s\n", n, res.Objects, mb(res.Bytes), time.Since(start).Seconds())
}

func dirSize(b *testing.B, root string) int64 {
	b.Helper()
	var n int64
	err := filepath.WalkDir(root, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			n += info.Size()
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}
