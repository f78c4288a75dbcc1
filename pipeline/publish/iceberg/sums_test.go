package iceberg

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"sitewatch/pipeline/publish/filehash"
	"sitewatch/pipeline/publish/publishtest"
)

// TestRepublishReadsNoTableData: a month published as it is is found unchanged from the
// footers and the tree's sum cache, without reading a byte of table data (issue 34). The
// proof is a file changed in place with its size and time put back: the republish commits
// nothing and status's Pending finds nothing to do, because neither read it.
func TestRepublishReadsNoTableData(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL and the S3 gateway")
	}
	ctx := context.Background()
	f := publishtest.NewFixture(t)
	publishtest.AgeTree(t, f.Parquet())
	e := newEnv(t)
	p := e.publisher(t, 3)
	if res, err := p.Month(ctx, f.Parquet(), monthA); err != nil || res.Commits() == 0 {
		t.Fatalf("first publish: %d commits, %v", res.Commits(), err)
	}
	if _, err := os.Stat(filepath.Join(f.Parquet(), filehash.File)); err != nil {
		t.Fatalf("the publish saved no sum cache: %v", err)
	}
	publishtest.FlipByteKeepingTime(t, filepath.Join(f.Parquet(), "keywords", "snapshot_month="+monthA, "data_0.parquet"))

	again, err := p.Month(ctx, f.Parquet(), monthA)
	if err != nil {
		t.Fatal(err)
	}
	if again.Commits() != 0 {
		t.Errorf("republish made %d commits, want 0: it read files the cache vouches for", again.Commits())
	}
	pending, err := p.Pending(ctx, f.Parquet(), []string{monthA})
	if err != nil || slices.Contains(pending, monthA) {
		t.Errorf("Pending = %v, %v; want nothing pending without reading the files", pending, err)
	}
}
