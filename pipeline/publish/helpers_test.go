package publish_test

import (
	"bytes"
	"context"
	"database/sql"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	_ "github.com/marcboeker/go-duckdb"

	"sitewatch/pipeline/config"
	"sitewatch/pipeline/publish"
	"sitewatch/pipeline/publish/publishtest"
	"sitewatch/pipeline/publish/s3test"
)

// Months of the fixture warehouse.
const (
	monthA = publishtest.MonthA
	monthB = publishtest.MonthB
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(runChild())
	}
	code := m.Run()
	publishtest.RemoveFixture()
	os.Exit(code)
}

// gateway is a versitygw with a bucket, and the environment of the AWS credential chain set
// to its keys (nothing from the machine's own AWS files or instance metadata).
type gateway struct {
	*s3test.Server
	bucket string
}

func newGateway(t testing.TB) *gateway {
	t.Helper()
	srv := s3test.Start(t)
	g := &gateway{Server: srv, bucket: "warehouse"}
	srv.CreateBucket(t, g.bucket)
	srv.SetEnv(t)
	return g
}

func (g *gateway) config(endpoint, prefix string) config.PublishConfig {
	return config.PublishConfig{URL: "s3://" + g.bucket + "/" + prefix, Endpoint: endpoint, Region: "us-east-1", PathStyle: true}
}

// newPublisher returns a Publisher of s3://warehouse/<prefix> at endpoint, logging into log.
func newPublisher(t testing.TB, cfg config.PublishConfig, log io.Writer, mod ...func(*publish.Options)) *publish.Publisher {
	t.Helper()
	opts := publish.Options{
		Logger:      slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Version:     "test-1.0",
		MaxAttempts: 3,
	}
	for _, m := range mod {
		m(&opts)
	}
	p, err := publish.New(context.Background(), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// proxy is a reverse proxy in front of the gateway that counts requests by method and can
// misbehave: hook runs before each request is forwarded and may answer it instead.
type proxy struct {
	URL    string
	mu     sync.Mutex
	counts map[string]int
	hook   func(w http.ResponseWriter, r *http.Request) bool // true: answered, do not forward
}

func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{counts: map[string]int{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.counts[r.Method]++
		hook := p.hook
		p.mu.Unlock()
		if hook != nil && hook(w, r) {
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// setHook installs hook (under the lock, so the handler sees everything written before).
func (p *proxy) setHook(hook func(w http.ResponseWriter, r *http.Request) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hook = hook
}

func (p *proxy) count(method string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.counts[method]
}

func (p *proxy) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.counts = map[string]int{}
}

// download copies every object of the bucket under prefix into a new directory (keys as
// paths) and returns it.
func (g *gateway) download(t *testing.T, prefix string) string {
	t.Helper()
	dir := t.TempDir()
	ctx := context.Background()
	c := g.Client()
	pages := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: &g.bucket, Prefix: aws.String(prefix + "/")})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &g.bucket, Key: o.Key})
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(out.Body)
			out.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(*o.Key, prefix+"/")))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, body, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// put stores body at key directly (not through the publisher).
func (g *gateway) put(t *testing.T, key string, body []byte) {
	t.Helper()
	if _, err := g.Client().PutObject(context.Background(), &s3.PutObjectInput{Bucket: &g.bucket, Key: &key, Body: bytes.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
}

func openDuckDB(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("duckdb", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func queryInt(t *testing.T, db *sql.DB, q string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := db.QueryRow(q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}
