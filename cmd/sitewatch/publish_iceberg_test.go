package main

import (
	"os"
	"strings"
	"testing"

	"sitewatch/pipeline/atlas/atlastest"
	"sitewatch/pipeline/config"
	"sitewatch/pipeline/publish/iceberg/pgtest"
	"sitewatch/pipeline/publish/s3test"
)

// TestPublishIcebergCommand: with publish.format both, a completed run publishes its month as
// the Hive layout and as Iceberg tables (SQL catalog on PostgreSQL); `sitewatch publish` then
// finds both unchanged and makes no commit.
func TestPublishIcebergCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL and versitygw; runs without -short")
	}
	pg := pgtest.Start(t)
	gw := s3test.Start(t)
	gw.CreateBucket(t, "lake-cli")
	gw.SetEnv(t)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv(config.EnvCatalogPassword, pg.Password) // the run's own publish reads the process environment
	h := newHarness(t, atlastest.Options{}, []string{"a.example", "b.example"}, "")
	h.extraEnv = map[string]string{config.EnvCatalogPassword: pg.Password}
	cfg, err := os.ReadFile(h.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg = []byte(strings.Replace(string(cfg), "domains:\n", "publish:\n  url: s3://lake-cli/sitewatch\n  endpoint: "+gw.Endpoint+
		"\n  region: us-east-1\n  path_style: true\n  format: both\n  catalog: "+pg.URL+"\n  keep_snapshots: 2\ndomains:\n", 1))
	if err := os.WriteFile(h.cfgPath, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := h.run("run", "--snapshot", testMonth); code != ExitOK {
		t.Fatalf("run: exit %d\n%s%s", code, h.stdout, h.stderr)
	}
	if code := h.run("publish", "--snapshot", testMonth); code != ExitOK {
		t.Fatalf("publish: exit %d\n%s%s", code, h.stdout, h.stderr)
	}
	out := h.stdout.String()
	if !strings.Contains(out, " 0 uploaded") && !strings.Contains(out, testMonth+" already published to") {
		t.Errorf("publish after the run's own publish uploaded the Hive layout again:\n%s", out)
	}
	if !strings.Contains(out, testMonth+" already published as Iceberg") {
		t.Errorf("publish after the run's own publish (both formats) printed:\n%s", out)
	}
	if strings.Contains(out+h.stderr.String(), pg.Password) {
		t.Error("the catalog password leaked into the output")
	}
}

// TestIcebergStatusAndCatalogPassword: with publish.format iceberg, status knows what publish
// wrote (not "not yet published" after a successful publish --all); with SITEWATCH_CATALOG_PASSWORD unset, publish names the variable in one
// line, without the driver's TLS attempt.
func TestIcebergStatusAndCatalogPassword(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL and versitygw; runs without -short")
	}
	pg := pgtest.Start(t)
	gw := s3test.Start(t)
	gw.SetEnv(t)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv(config.EnvCatalogPassword, pg.Password) // status and the run's own publish read the process environment
	h := newHarness(t, atlastest.Options{}, []string{"a.example", "b.example"}, "")
	h.extraEnv = map[string]string{config.EnvCatalogPassword: pg.Password}
	withBucket(t, h, gw, "lake-status", "  format: iceberg\n  catalog: "+pg.URL+"\n")
	if code := h.run("run", "--snapshot", testMonth); code != ExitOK {
		t.Fatalf("run: exit %d\n%s%s", code, h.stdout, tail(h.stderr.String(), 2000))
	}
	if code := h.run("publish", "--all"); code != ExitOK {
		t.Fatalf("publish --all: exit %d\n%s%s", code, h.stdout, h.stderr)
	}
	if code := h.run("status"); code != ExitOK {
		t.Fatalf("status: exit %d\n%s%s", code, h.stdout, h.stderr)
	}
	if out := h.stdout.String(); strings.Contains(out, "not yet published") || !strings.Contains(out, "every month is published") {
		t.Errorf("status after publish --all (format iceberg):\n%s", out)
	}

	t.Setenv(config.EnvCatalogPassword, "")
	h.extraEnv = nil
	if code := h.run("publish", "--all"); code == ExitOK {
		t.Fatalf("publish without the catalog password: exit 0\n%s", h.stdout)
	}
	msg := h.stderr.String()
	if !strings.Contains(msg, "SITEWATCH_CATALOG_PASSWORD is not set") || strings.Contains(strings.ToLower(msg), "tls") || strings.Count(strings.TrimSpace(msg), "\n") > 0 {
		t.Errorf("publish without the catalog password says:\n%s", msg)
	}
	if strings.Contains(h.stdout.String()+msg, pg.Password) {
		t.Error("the catalog password leaked into the output")
	}
}
