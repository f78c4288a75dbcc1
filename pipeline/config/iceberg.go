package config

import (
	"net/url"
	"regexp"
	"strings"
)

// EnvCatalogPassword holds the password of the Iceberg SQL catalog's database user (or the
// REST catalog's credential); it is never read from the config file.
const EnvCatalogPassword = "SITEWATCH_CATALOG_PASSWORD"

// Defaults and bounds of the Iceberg keys of the publish section.
const (
	DefaultPublishFormat  = FormatHive
	DefaultNamespace      = "sitewatch"
	DefaultKeepSnapshots  = 12
	maxKeepSnapshots      = 10000
	FormatHive            = "hive"
	FormatIceberg         = "iceberg"
	FormatBoth            = "both"
	catalogSchemePostgres = "postgres"
)

var namespaceRE = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// WritesHive says whether the Hive layout is published.
func (p PublishConfig) WritesHive() bool { return p.Format != FormatIceberg }

// WritesIceberg says whether Iceberg tables are published.
func (p PublishConfig) WritesIceberg() bool {
	return p.Format == FormatIceberg || p.Format == FormatBoth
}

func (c *Config) icebergDefaults(def func(key string, apply func())) {
	def("publish.format", func() { c.Publish.Format = DefaultPublishFormat })
	def("publish.namespace", func() { c.Publish.Namespace = DefaultNamespace })
	def("publish.keep_snapshots", func() { c.Publish.KeepSnapshots = DefaultKeepSnapshots })
}

// validateIceberg checks publish.format, catalog, namespace and keep_snapshots.
func (c *Config) validateIceberg(bad func(key, format string, args ...any)) {
	p := c.Publish
	switch p.Format {
	case FormatHive, FormatIceberg, FormatBoth:
	default:
		bad("publish.format", "%q is not a format; use hive, iceberg or both", p.Format)
	}
	if !namespaceRE.MatchString(p.Namespace) {
		bad("publish.namespace", "%q is not a namespace: use lower-case letters, digits and _ (e.g. sitewatch)", p.Namespace)
	}
	if p.KeepSnapshots < 1 || p.KeepSnapshots > maxKeepSnapshots {
		bad("publish.keep_snapshots", "must be between 1 and %d (default %d)", maxKeepSnapshots, DefaultKeepSnapshots)
	}
	if !p.WritesIceberg() {
		if c.present["publish.catalog"] && p.Catalog != "" && p.Format == FormatHive {
			bad("publish.catalog", "set, but publish.format is hive: set publish.format to iceberg or both, or remove the catalog")
		}
		return
	}
	if p.URL == "" {
		bad("publish.url", "publish.format %s needs the bucket the tables live in: set it to s3://bucket/prefix", p.Format)
	}
	if msg := CheckCatalogURL(p.Catalog); msg != "" {
		bad("publish.catalog", "%s", msg)
	}
}

// CheckCatalogURL returns what is wrong with publish.catalog, or "": a postgres:// URL of the
// SQL catalog's database without a password, or an http(s):// URL of a REST catalog. Messages
// never echo the URL (it may hold a password by mistake).
func CheckCatalogURL(raw string) string {
	if raw == "" {
		return "required by the iceberg format: postgres://user@host:5432/db (SQL catalog; password in " + EnvCatalogPassword + ") or https://… (REST catalog)"
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "not a URL: write postgres://user@host:5432/db or https://catalog.example/api/catalog"
	}
	if _, hasPW := u.User.Password(); hasPW {
		return "holds a password: remove it from the file and export it as " + EnvCatalogPassword
	}
	switch strings.ToLower(u.Scheme) {
	case catalogSchemePostgres, "postgresql":
		if u.User.Username() == "" || strings.Trim(u.Path, "/") == "" {
			return "a SQL catalog URL names the user and the database: postgres://user@host:5432/db"
		}
	case "https":
	case "http":
		if !isLoopback(u.Hostname()) {
			return "a REST catalog outside this machine must use https:// (its credential would cross the network in clear text)"
		}
	default:
		return "scheme " + u.Scheme + ":// is not a catalog: use postgres:// (SQL catalog) or https:// (REST catalog)"
	}
	return ""
}

func isLoopback(host string) bool {
	return host == "localhost" || strings.HasPrefix(host, "127.") || host == "::1"
}
