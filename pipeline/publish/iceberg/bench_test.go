package iceberg

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"sitewatch/pipeline/config"
	"sitewatch/pipeline/publish"
	"sitewatch/pipeline/publish/publishtest"
)

// BenchmarkIcebergBesideHive publishes one month of SITEWATCH_BENCH_DOMAINS (default 10,000)
// synthetic domains (the warehouse's tables and column types, zstd like the export) in the
// same run twice: as the Hive layout (publish.Publisher) and as Iceberg tables (SQL catalog on
// PostgreSQL), both through a counting proxy in front of the same gateway. It reports, for
// each: seconds, S3 requests and bytes sent to S3; and iceberg/hive ratios.
func BenchmarkIcebergBesideHive(b *testing.B) {
	n := 10000
	if v, err := strconv.Atoi(os.Getenv("SITEWATCH_BENCH_DOMAINS")); err == nil && v > 0 {
		n = v
	}
	root, _ := publishtest.SyntheticTree(b, n, monthB)
	e := newEnvTB(b)
	px := newCountingProxy(b, e.s3.Endpoint)
	ctx := context.Background()
	cfg := e.config(12)
	cfg.Endpoint = px.url
	cfg.Format = config.FormatBoth
	b.ResetTimer()
	for range b.N {
		hive, err := publish.New(ctx, cfg, publish.Options{})
		if err != nil {
			b.Fatal(err)
		}
		px.reset()
		start := time.Now()
		if _, err := hive.Month(ctx, root, monthB, "bench"); err != nil {
			b.Fatal(err)
		}
		hiveSec, hiveReq, hiveBytes := time.Since(start).Seconds(), px.requests.Load(), px.bytes.Load()

		lake, err := New(ctx, cfg, Options{Getenv: e.getenv})
		if err != nil {
			b.Fatal(err)
		}
		px.reset()
		start = time.Now()
		if _, err := lake.Month(ctx, root, monthB); err != nil {
			b.Fatal(err)
		}
		iceSec, iceReq, iceBytes := time.Since(start).Seconds(), px.requests.Load(), px.bytes.Load()
		_ = lake.Close()
		b.ReportMetric(hiveSec, "hive_s")
		b.ReportMetric(float64(hiveReq), "hive_requests")
		b.ReportMetric(float64(hiveBytes)/1e6, "hive_MB")
		b.ReportMetric(iceSec, "iceberg_s")
		b.ReportMetric(float64(iceReq), "iceberg_requests")
		b.ReportMetric(float64(iceBytes)/1e6, "iceberg_MB")
		b.ReportMetric(iceSec/hiveSec, "ratio_s")
		b.ReportMetric(float64(iceBytes)/float64(hiveBytes), "ratio_bytes")
	}
}

// countingProxy forwards to the gateway, counting requests and request body bytes.
type countingProxy struct {
	url      string
	requests atomic.Int64
	bytes    atomic.Int64
}

func newCountingProxy(tb testing.TB, target string) *countingProxy {
	tb.Helper()
	u, err := url.Parse(target)
	if err != nil {
		tb.Fatal(err)
	}
	p := &countingProxy{}
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.requests.Add(1)
		r.Body = &countingBody{ReadCloser: r.Body, n: &p.bytes}
		rp.ServeHTTP(w, r)
	}))
	tb.Cleanup(srv.Close)
	p.url = srv.URL
	return p
}

func (p *countingProxy) reset() { p.requests.Store(0); p.bytes.Store(0) }

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c *countingBody) Read(b []byte) (int, error) {
	n, err := c.ReadCloser.Read(b)
	c.n.Add(int64(n))
	return n, err
}
