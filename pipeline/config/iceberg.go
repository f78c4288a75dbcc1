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
	if key := catalogSecret(raw); key != "" {
		return "holds a password (" + key + "): remove it from the file and export it as " + EnvCatalogPassword + " (the value is not shown)"
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "not a URL: write postgres://user@host:5432/db or https://catalog.example/api/catalog"
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

// secretParams are the connection parameters that carry a secret, in a URL's query or a
// keyword/value connection string (libpq's password and sslpassword; a REST catalog's).
var secretParams = []string{"password", "sslpassword", "token", "credential", "client_secret", "secret"}

// catalogSecret names where raw carries a secret ("the user:password of the URL", "query
// parameter password", "keyword sslpassword"), or "". It never returns the value.
func catalogSecret(raw string) string {
	if !strings.Contains(raw, "://") { // libpq's keyword/value form: host=… user=… password=…
		for _, kv := range keywordPairs(raw) {
			if isSecretParam(kv) {
				return "keyword " + strings.ToLower(kv)
			}
		}
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		if at := strings.LastIndex(raw, "@"); at > 0 && strings.Contains(raw[:at], ":") && strings.Count(raw[:at], ":") > 1 {
			return "the user:password of the URL" // unparsable, but it looks like one
		}
		return ""
	}
	if _, hasPW := u.User.Password(); hasPW {
		return "the user:password of the URL"
	}
	q, _ := url.ParseQuery(u.RawQuery)
	for k := range q {
		if isSecretParam(k) {
			return "query parameter " + strings.ToLower(k)
		}
	}
	return ""
}

func isSecretParam(key string) bool {
	for _, s := range secretParams {
		if strings.EqualFold(strings.TrimSpace(key), s) {
			return true
		}
	}
	return false
}

// keywordPairs returns the keywords of a libpq keyword/value string (key = 'value' …).
func keywordPairs(raw string) []string {
	var keys []string
	for rest := raw; ; {
		eq := strings.IndexByte(rest, '=')
		if eq < 0 {
			return keys
		}
		fields := strings.Fields(rest[:eq])
		if len(fields) > 0 {
			keys = append(keys, fields[len(fields)-1])
		}
		rest = skipValue(strings.TrimLeft(rest[eq+1:], " \t"))
	}
}

// skipValue returns what follows the value at the start of s (quoted with ' or bare).
func skipValue(s string) string {
	if strings.HasPrefix(s, "'") {
		for i := 1; i < len(s); i++ {
			switch s[i] {
			case '\\':
				i++
			case '\'':
				return s[i+1:]
			}
		}
		return ""
	}
	if i := strings.IndexAny(s, " \t"); i >= 0 {
		return s[i:]
	}
	return ""
}

func isLoopback(host string) bool {
	return host == "localhost" || strings.HasPrefix(host, "127.") || host == "::1"
}
