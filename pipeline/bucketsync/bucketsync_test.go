package bucketsync_test

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"sitewatch/pipeline/bucketsync"
	"sitewatch/pipeline/config"
	"sitewatch/pipeline/publish"
	"sitewatch/pipeline/publish/publishtest"
	"sitewatch/pipeline/publish/s3test"
	"sitewatch/pipeline/warehouse"
)

func TestMain(m *testing.M) {
	code := m.Run()
	publishtest.RemoveFixture()
	os.Exit(code)
}

// TestNothingNewCostsOneListing: a sync finding the bucket holds only what the warehouse has
// reads each manifest once (its run is held: nothing is pulled), and from then on costs one
// listing and no other request.
func TestNothingNewCostsOneListing(t *testing.T) {
	fx := publishtest.NewFixture(t)
	gw := s3test.Start(t)
	gw.CreateBucket(t, "warehouse")
	gw.SetEnv(t)
	requests := s3test.CountRequests(t, gw.Endpoint, nil)
	endpoint := requests.URL
	cfg := config.PublishConfig{URL: "s3://warehouse/team", Endpoint: endpoint, Region: "us-east-1", PathStyle: true}
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	p, err := publish.New(ctx, cfg, publish.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.All(ctx, fx.Parquet(), nil); err != nil {
		t.Fatal(err)
	}
	wh, err := warehouse.Open(ctx, warehouse.Options{DuckDBPath: fx.DB(), ParquetDir: fx.Parquet(), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer wh.Close()
	s := bucketsync.New(p, cfg.URL, fx.DB(), fx.Parquet(), log)
	// As on a machine that restored: no recorded versions, so each manifest is read once.
	if err := os.Remove(filepath.Join(fx.Parquet(), publish.SyncStateFile)); err != nil {
		t.Fatalf("the publish recorded no version: %v", err)
	}
	requests.Take()
	res, err := s.Pull(ctx, wh)
	if err != nil || len(res.Pulled) != 0 || res.Read != 2 {
		t.Fatalf("first sync: %+v %v; want both months' manifests read and nothing pulled", res, err)
	}
	if n, by := requests.Take(); n != 3 || by["LIST"] != 1 {
		t.Errorf("first sync sent %v, want one listing and the 2 manifests", by)
	}
	res, err = s.Pull(ctx, wh)
	if err != nil || len(res.Pulled) != 0 || res.Read != 0 {
		t.Fatalf("second sync: %+v %v; want nothing read or pulled", res, err)
	}
	if n, by := requests.Take(); n != 1 || by["LIST"] != 1 {
		t.Errorf("a sync with nothing new sent %v, want exactly one listing", by)
	}
	// This machine publishes a new version of a month (its own run): the bucket holds
	// nothing new to it, and the next sync is one listing still.
	runs, err := publish.LocalRuns(ctx, fx.Parquet(), publishtest.MonthB)
	if err != nil || len(runs) == 0 {
		t.Fatalf("the fixture's runs of %s: %v", publishtest.MonthB, err)
	}
	var run string
	for run = range runs {
	}
	shrinkKeywords(t, fx)
	if _, err := p.Month(ctx, fx.Parquet(), publishtest.MonthB, run); err != nil {
		t.Fatal(err)
	}
	requests.Take()
	if res, err := s.Pull(ctx, wh); err != nil || res.Read != 0 || len(res.Pulled) != 0 {
		t.Fatalf("sync after this machine's publish: %+v %v", res, err)
	}
	if n, by := requests.Take(); n != 1 || by["LIST"] != 1 {
		t.Errorf("the sync after this machine's own publish sent %v, want exactly one listing", by)
	}
}

// shrinkKeywords rewrites the fixture's keywords partition of MonthB with its first row: a
// local change to publish.
func shrinkKeywords(t *testing.T, fx publishtest.Fixture) {
	t.Helper()
	path := filepath.Join(fx.Parquet(), "keywords", "snapshot_month="+publishtest.MonthB, "data_0.parquet")
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`COPY (SELECT * FROM read_parquet('` + path + `') LIMIT 1) TO '` + path + `.new' (FORMAT PARQUET)`); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
}
