package publish_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestSharedTablesOwnManifest: when countries changes and only the newest month is published,
// the older month's manifest still matches its objects: it is not reported unpublished.
func TestSharedTablesOwnManifest(t *testing.T) {
	fx := newFixture(t)
	g := newGateway(t)
	ctx := context.Background()
	p := newPublisher(t, g.config(g.Endpoint, "p"), io.Discard)
	if _, err := p.All(ctx, fx.parquet(), nil); err != nil {
		t.Fatal(err)
	}
	countries := filepath.Join(fx.parquet(), "countries", "data_0.parquet")
	db := openDuckDB(t, "")
	if _, err := db.Exec(`COPY (SELECT * FROM read_parquet('` + countries + `') LIMIT 5) TO '` + countries + `.new' (FORMAT PARQUET)`); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(countries+".new", countries); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Month(ctx, fx.parquet(), monthB, ""); err != nil {
		t.Fatal(err)
	}
	pending, err := p.Pending(ctx, fx.parquet())
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
