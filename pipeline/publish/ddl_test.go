package publish_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sitewatch/pipeline/publish"
	"sitewatch/schema/flatten"
)

var update = flag.Bool("update", false, "rewrite docs/ddl from the schema")

// TestDDL checks that docs/ddl/{trino,athena}.sql match the Arrow schemas; -update rewrites them.
func TestDDL(t *testing.T) {
	for _, engine := range []string{publish.EngineTrino, publish.EngineAthena} {
		t.Run(engine, func(t *testing.T) {
			var b bytes.Buffer
			if err := publish.WriteDDL(&b, engine, publish.DDLLocation); err != nil {
				t.Fatal(err)
			}
			ddl := b.String()
			for _, tab := range append(append([]flatten.Table{}, flatten.SnapshotTables...), flatten.CountriesTable) {
				if !strings.Contains(ddl, "sitewatch."+tab.Name+" (") || !strings.Contains(ddl, publish.DDLLocation+"/"+tab.Name) {
					t.Errorf("%s DDL lacks table %s at its location", engine, tab.Name)
				}
			}
			path := filepath.Join("..", "..", "docs", "ddl", engine+".sql")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run `go test ./pipeline/publish -run TestDDL -update`)", err)
			}
			if string(got) != ddl {
				t.Errorf("%s is stale: run `go test ./pipeline/publish -run TestDDL -update`", path)
			}
		})
	}
	if err := publish.WriteDDL(&bytes.Buffer{}, "hive2", publish.DDLLocation); err == nil {
		t.Error("an unknown engine gave no error")
	}
}
