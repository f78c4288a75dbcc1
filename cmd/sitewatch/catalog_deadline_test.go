package main

import (
	"context"
	"database/sql"
	"os"
	"strings"
	"testing"
	"time"

	"sitewatch/pipeline/atlas/atlastest"
	"sitewatch/pipeline/config"
	"sitewatch/pipeline/lease"
	"sitewatch/pipeline/publish"
	"sitewatch/pipeline/publish/iceberg/pgtest"
	"sitewatch/pipeline/publish/s3test"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver, to hold a lock
)

// catalogHarness is a harness that ran its month (Hive layout published to a versitygw
// bucket) and whose config then names catalog as its Iceberg catalog (format both).
func catalogHarness(t *testing.T, catalog, password string) (*harness, *s3test.Server) {
	t.Helper()
	gw := s3test.Start(t)
	gw.CreateBucket(t, "lake-cli")
	gw.SetEnv(t)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv(config.EnvCatalogPassword, password)
	h := newHarness(t, atlastest.Options{}, []string{"a.example", "b.example"}, "")
	h.extraEnv = map[string]string{config.EnvCatalogPassword: password}
	section := "publish:\n  url: s3://lake-cli/sitewatch\n  endpoint: " + gw.Endpoint + "\n  region: us-east-1\n  path_style: true\n"
	cfg, err := os.ReadFile(h.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(h.cfgPath, []byte(strings.Replace(string(cfg), "domains:\n", section+"domains:\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if code := h.run("run", "--snapshot", testMonth); code != ExitOK {
		t.Fatalf("run: exit %d\n%s%s", code, h.stdout, h.stderr)
	}
	h.setConfig("  path_style: true\n", "  path_style: true\n  format: both\n  catalog: "+catalog+"\n")
	return h, gw
}

// leaseReleased fails the test unless the bucket holds no lease.
func leaseReleased(t *testing.T, gw *s3test.Server) {
	t.Helper()
	p, err := publish.New(context.Background(), config.PublishConfig{URL: "s3://lake-cli/sitewatch", Endpoint: gw.Endpoint, Region: "us-east-1", PathStyle: true}, publish.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, found, err := p.GetSmall(context.Background(), lease.Key); err != nil || found {
		t.Errorf("the bucket lease is still there after the failed publish (found %v, err %v)", found, err)
	}
}

// TestPublishWithHungCatalog: a SQL catalog that accepts TCP and never answers ends `publish`
// with exit 1 within 90 s, naming the catalog, and the lease is released.
func TestPublishWithHungCatalog(t *testing.T) {
	if testing.Short() {
		t.Skip("starts versitygw; runs without -short")
	}
	hang := newHangListener(t)
	h, gw := catalogHarness(t, "postgres://lake@"+hang.addr+"/catalog", "hunter2-catalog")
	start := time.Now()
	code := h.runCtx(context.Background(), 120*time.Second, "publish", "--snapshot", testMonth)
	took := time.Since(start)
	if code != ExitFailed {
		t.Fatalf("publish with a hung catalog: exit %d, want %d\n%s%s", code, ExitFailed, h.stdout, h.stderr)
	}
	if took > 90*time.Second {
		t.Errorf("publish took %v with a hung catalog, want at most 90 s", took)
	}
	if msg := h.stderr.String(); !strings.Contains(msg, hang.addr) || strings.Contains(msg, "hunter2-catalog") {
		t.Errorf("the error does not name the catalog (or shows its password):\n%s", msg)
	}
	leaseReleased(t, gw)
}

// TestPublishWithCatalogLockHeld: another session holding a lock on iceberg_tables ends
// `publish` with exit 1 within 90 s (lock_timeout), and the lease is released.
func TestPublishWithCatalogLockHeld(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL and versitygw; runs without -short")
	}
	pg := pgtest.Start(t)
	h, gw := catalogHarness(t, pg.URL, pg.Password)
	if code := h.run("publish", "--snapshot", testMonth); code != ExitOK { // creates the catalog's tables
		t.Fatalf("first publish: exit %d\n%s%s", code, h.stdout, h.stderr)
	}
	db, err := sql.Open("pgx", strings.Replace(pg.URL, pg.User+"@", pg.User+":"+pg.Password+"@", 1))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.Exec("LOCK TABLE iceberg_tables IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	code := h.runCtx(context.Background(), 120*time.Second, "publish", "--snapshot", testMonth)
	took := time.Since(start)
	if code != ExitFailed {
		t.Fatalf("publish under a lock on iceberg_tables: exit %d, want %d\n%s%s", code, ExitFailed, h.stdout, h.stderr)
	}
	if took > 90*time.Second {
		t.Errorf("publish took %v under the lock, want at most 90 s", took)
	}
	if msg := h.stderr.String(); !strings.Contains(msg, "lock") {
		t.Errorf("the error does not say a lock stopped it:\n%s", msg)
	}
	t.Logf("publish ended after %v:\n%s", took.Round(time.Millisecond), h.stderr)
	leaseReleased(t, gw)
}
