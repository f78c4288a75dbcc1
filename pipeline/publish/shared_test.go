package publish_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"sitewatch/pipeline/publish/publishtest"
)

// TestSharedTablesOwnManifest: when countries changes and only the newest month is published,
// the older month's manifest still matches its objects: it is not reported unpublished.
func TestSharedTablesOwnManifest(t *testing.T) {
	fx := publishtest.NewFixture(t)
	g := newGateway(t)
	ctx := context.Background()
	p := newPublisher(t, g.config(g.Endpoint, "p"), io.Discard)
	if _, err := p.All(ctx, fx.Parquet(), nil); err != nil {
		t.Fatal(err)
	}
	countries := filepath.Join(fx.Parquet(), "countries", "data_0.parquet")
	db := openDuckDB(t, "")
	if _, err := db.Exec(`COPY (SELECT * FROM read_parquet('` + countries + `') LIMIT 5) TO '` + countries + `.new' (FORMAT PARQUET)`); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(countries+".new", countries); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Month(ctx, fx.Parquet(), monthB, ""); err != nil {
		t.Fatal(err)
	}
	pending, err := p.Pending(ctx, fx.Parquet())
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != 0 {
		t.Errorf("after countries changed and %s was published, pending = %v, want none", monthB, pending)
	}
	if m, ok := g.manifest(t, "p", monthA); ok {
		for _, f := range m.Files {
			if f.Table == "countries" {
				t.Errorf("the manifest of %s lists the shared object %s", monthA, f.Key)
			}
		}
	}
}

// TestPendingSeesDeletedObject: an object deleted from the bucket makes its month pending
// again (status then says it is not published), and `publish` uploads it again.
func TestPendingSeesDeletedObject(t *testing.T) {
	fx := publishtest.NewFixture(t)
	g := newGateway(t)
	ctx := context.Background()
	p := newPublisher(t, g.config(g.Endpoint, "p"), io.Discard)
	if _, err := p.All(ctx, fx.Parquet(), nil); err != nil {
		t.Fatal(err)
	}
	key := "p/sites/snapshot_month=" + monthA + "/data_0.parquet"
	if _, err := g.Client().DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &g.bucket, Key: &key}); err != nil {
		t.Fatal(err)
	}
	pending, err := p.Pending(ctx, fx.Parquet())
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != 1 || pending[0] != monthA {
		t.Errorf("pending after deleting %s = %v, want [%s]", key, pending, monthA)
	}
	res, err := p.Month(ctx, fx.Parquet(), monthA, "")
	if err != nil {
		t.Fatal(err)
	}
	if res.Uploaded != 1 {
		t.Errorf("republish uploaded %d objects, want the 1 deleted", res.Uploaded)
	}
	_, bad, err := p.Verify(ctx)
	if err != nil || len(bad) != 0 {
		t.Errorf("verify after the repair: %v %v", bad, err)
	}
}
