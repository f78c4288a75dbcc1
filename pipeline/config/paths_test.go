package config

import (
	"strconv"
	"strings"
	"testing"
)

// TestOutputsRefusedBeforeAnyCall: bucket names S3 refuses, prefixes with "." or ".."
// segments (plain or percent-encoded), and a warehouse.parquet that is the DuckDB file, its
// log or its progress file are config errors naming the line, so no credit is spent first.
func TestOutputsRefusedBeforeAnyCall(t *testing.T) {
	base := "api:\n  base_url: https://gateway.example\nwarehouse:\n  duckdb: data/w.duckdb\n  parquet: %PQ%\npublish:\n  url: %URL%\ndomains: [example.com]\n"
	cases := []struct {
		name, url, parquet, want string
		line                     int
	}{
		{"IPBucket", "s3://127.0.0.1/p", "data/parquet", "IP address", 7},
		{"PunycodeBucket", "s3://xn--abc/p", "data/parquet", `"xn--"`, 7},
		{"AliasBucket", "s3://mybucket-s3alias/p", "data/parquet", `"-s3alias"`, 7},
		{"DotHyphen", "s3://my.-bucket/p", "data/parquet", "next to a hyphen", 7},
		{"DotDot", "s3://bucket/a/../b", "data/parquet", `".."`, 7},
		{"EncodedDotDot", "s3://bucket/a/%2e%2e/b", "data/parquet", `"%2e%2e"`, 7},
		{"Dot", "s3://bucket/./sitewatch", "data/parquet", `"."`, 7},
		{"ParquetIsDuckDB", "s3://bucket/p", "data/w.duckdb", "DuckDB file", 5},
		{"ParquetIsProgress", "s3://bucket/p", "data/w.duckdb.run.json", "progress file", 5},
		{"ParquetIsWAL", "s3://bucket/p", "./data/w.duckdb.wal", "write-ahead log", 5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := strings.NewReplacer("%PQ%", tc.parquet, "%URL%", tc.url).Replace(base)
			_, err := Parse("/srv/sw/domains.yaml", []byte(cfg), env())
			if err == nil {
				t.Fatalf("accepted:\n%s", cfg)
			}
			if msg := err.Error(); !strings.Contains(msg, tc.want) || !strings.Contains(msg, "domains.yaml:"+strconv.Itoa(tc.line)+":") {
				t.Errorf("error %q lacks %q or line %d", msg, tc.want, tc.line)
			}
		})
	}
	ok := strings.NewReplacer("%PQ%", "data/parquet", "%URL%", "s3://my-bucket.example/sitewatch/v1").Replace(base)
	if _, err := Parse("/srv/sw/domains.yaml", []byte(ok), env()); err != nil {
		t.Errorf("a valid bucket and prefix refused: %v", err)
	}
}
