package config

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"
)

// checkBucketName applies the rules of S3's bucket naming that the character pattern does not:
// no IP-address form, no reserved prefix or suffix, no dot next to a hyphen. S3 refuses such a
// bucket, so a publish would fail after the paid run.
func checkBucketName(b string) string {
	why := ""
	switch {
	case net.ParseIP(b) != nil:
		why = "it is formatted as an IP address"
	case strings.Contains(b, ".-") || strings.Contains(b, "-."):
		why = "a dot is next to a hyphen"
	}
	for _, p := range []string{"xn--", "sthree-", "amzn-s3-demo-"} {
		if strings.HasPrefix(b, p) {
			why = fmt.Sprintf("the prefix %q is reserved", p)
		}
	}
	for _, sfx := range []string{"-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3"} {
		if strings.HasSuffix(b, sfx) {
			why = fmt.Sprintf("the suffix %q is reserved", sfx)
		}
	}
	if why == "" {
		return ""
	}
	return fmt.Sprintf("bucket %q is a name S3 refuses: %s (see the S3 bucket naming rules)", b, why)
}

// checkPrefix refuses a prefix with a "." or ".." segment, written plainly or percent-encoded
// (%2e): S3 keeps them verbatim, so "./a" and "a" would be two places for one publish, and
// ".." reads as a way out of the prefix to every tool that resolves paths.
func checkPrefix(u *url.URL) string {
	raw := strings.Trim(u.EscapedPath(), "/")
	if raw == "" {
		return ""
	}
	for _, seg := range strings.Split(raw, "/") {
		dec, err := url.PathUnescape(seg)
		if err != nil {
			return fmt.Sprintf("prefix %q holds an invalid percent-encoding", u.Path)
		}
		if dec == "." || dec == ".." || strings.Contains(dec, "/") || strings.Contains(dec, `\`) {
			return fmt.Sprintf("prefix %q has a segment %q: use plain names, e.g. s3://%s/sitewatch", u.Path, seg, u.Host)
		}
	}
	return ""
}

// validatePaths refuses a warehouse.parquet that is the DuckDB file, its write-ahead log or
// its progress file: an export would write a directory over the warehouse.
func (c *Config) validatePaths(bad func(key, format string, args ...any)) {
	pq := filepath.Clean(c.resolve(c.Warehouse.Parquet))
	db := filepath.Clean(c.resolve(c.Warehouse.DuckDB))
	for _, clash := range []struct{ path, what string }{
		{db, "the DuckDB file (warehouse.duckdb)"}, {db + ".wal", "the DuckDB write-ahead log"},
		{db + ".run.json", "the run's progress file (warehouse.duckdb + .run.json)"},
	} {
		if pq == clash.path {
			bad("warehouse.parquet", "%s is %s: choose a directory of its own, e.g. data/parquet", c.Warehouse.Parquet, clash.what)
		}
	}
}

// resolve makes p absolute against the config file's folder, as resolvePaths does.
func (c *Config) resolve(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(filepath.Dir(c.Path), p)
}
