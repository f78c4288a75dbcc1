package config

import (
	"fmt"
	"strings"
	"testing"
)

func TestIcebergKeys(t *testing.T) {
	pub := base + "publish:\n  url: s3://bucket/x\n"
	t.Run("Defaults", func(t *testing.T) {
		cfg, err := Parse("domains.yaml", []byte(pub+"domains: [a.com]\n"), env())
		if err != nil {
			t.Fatal(err)
		}
		got := cfg.Publish
		if got.Format != "hive" || got.Namespace != "sitewatch" || got.KeepSnapshots != 12 || !got.WritesHive() || got.WritesIceberg() {
			t.Errorf("defaults = %+v, want format hive, namespace sitewatch, keep_snapshots 12", got)
		}
	})
	t.Run("Both", func(t *testing.T) {
		cfg, err := Parse("domains.yaml", []byte(pub+"  format: both\n  catalog: postgres://lake@db.internal:5432/catalog\n  namespace: web_intel\n  keep_snapshots: 3\ndomains: [a.com]\n"), env())
		if err != nil {
			t.Fatal(err)
		}
		if p := cfg.Publish; !p.WritesHive() || !p.WritesIceberg() || p.Namespace != "web_intel" || p.KeepSnapshots != 3 {
			t.Errorf("publish = %+v", p)
		}
	})
	for _, tc := range []struct {
		name, extra string
		line        int
		want        string
	}{
		{"BadFormat", "  format: delta\n", 5, `publish.format: "delta" is not a format`},
		{"NoCatalog", "  format: iceberg\n", 3, "publish.catalog: required by the iceberg format"},
		{"PasswordInCatalog", "  format: iceberg\n  catalog: postgres://u:hunter2@h/db\n", 6, "publish.catalog: holds a password"},
		{"PasswordQuery", "  format: iceberg\n  catalog: postgres://u@h/db?sslmode=require&password=hunter2\n", 6, "holds a password (query parameter password): remove it from the file and export it as SITEWATCH_CATALOG_PASSWORD"},
		{"SSLPasswordQuery", "  format: iceberg\n  catalog: postgresql://u@h/db?SSLPassword=hunter2\n", 6, "holds a password (query parameter sslpassword)"},
		{"PasswordKeyword", "  format: iceberg\n  catalog: \"host=h user=u password='hun ter2' dbname=db\"\n", 6, "holds a password (keyword password)"},
		{"PasswordKeywordSpaced", "  format: iceberg\n  catalog: \"host=h  sslpassword = hunter2 dbname=db\"\n", 6, "holds a password (keyword sslpassword)"},
		{"RESTToken", "  format: iceberg\n  catalog: https://catalog.example/api?token=hunter2\n", 6, "holds a password (query parameter token)"},
		{"PasswordUnparsable", "  format: iceberg\n  catalog: postgres://u:hunter2%zz@h/db\n", 6, "holds a password (the user:password of the URL)"},
		{"CatalogWithoutDatabase", "  format: iceberg\n  catalog: postgres://u@h\n", 6, "names the user and the database"},
		{"PlainHTTPRemoteREST", "  format: iceberg\n  catalog: http://catalog.example/api\n", 6, "must use https://"},
		{"OtherScheme", "  format: iceberg\n  catalog: thrift://metastore:9083\n", 6, "is not a catalog"},
		{"BadNamespace", "  namespace: Web-Intel\n", 5, "publish.namespace"},
		{"ZeroKeep", "  keep_snapshots: 0\n", 5, "publish.keep_snapshots: must be between 1"},
		{"CatalogWithHive", "  catalog: https://catalog.example\n", 5, "publish.format is hive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("domains.yaml", []byte(pub+tc.extra+"domains: [a.com]\n"), env())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
			if want := fmt.Sprintf("domains.yaml:%d: ", tc.line); !strings.Contains(err.Error(), want) {
				t.Errorf("err = %v, want it at line %d", err, tc.line)
			}
			if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "hun ter2") {
				t.Errorf("the error echoes the password: %v", err)
			}
		})
	}
}
