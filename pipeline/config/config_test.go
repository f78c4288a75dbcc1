package config

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

const validConfig = `schedule: "0 6 2 * *"
api:
  base_url: https://gateway.example
  mode: direct
  rate_limit: 5
  min_credits: 10
  max_credits_per_run: 100
  timeout: 10s
warehouse:
  duckdb: data/w.duckdb
  parquet: /abs/parquet
domains:
  - example.com
  - https://www.example.org/pricing
`

func TestParseConfigOK(t *testing.T) {
	cfg, err := Parse("/etc/sitewatch/domains.yaml", []byte(validConfig), env())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cfg.API.RateLimit, 5.0; got != want {
		t.Errorf("rate_limit = %v, want %v", got, want)
	}
	if got, want := cfg.API.Timeout.Duration, 10*time.Second; got != want {
		t.Errorf("timeout = %v, want %v", got, want)
	}
	if got, want := cfg.Warehouse.DuckDB, filepath.FromSlash("/etc/sitewatch/data/w.duckdb"); got != want {
		t.Errorf("duckdb = %q, want %q (relative to the config file)", got, want)
	}
	if got, want := cfg.Warehouse.Parquet, "/abs/parquet"; got != want {
		t.Errorf("parquet = %q, want %q", got, want)
	}
	if got, want := cfg.DomainLine(1), 14; got != want {
		t.Errorf("line of domains[1] = %d, want %d", got, want)
	}
}

func TestParseConfigDefaultsAndEnv(t *testing.T) {
	cfg, err := Parse("domains.yaml", []byte("domains: [example.com]\n"), env(EnvBaseURL, "http://127.0.0.1:9"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Schedule != DefaultSchedule || cfg.API.Mode != "direct" || cfg.API.RateLimit != DefaultRateLimit ||
		cfg.API.Timeout.Duration != DefaultTimeout || cfg.API.BaseURL != "http://127.0.0.1:9" {
		t.Errorf("defaults not applied: %+v", cfg)
	}
}

// findProblem returns the problem of err whose message mentions want, failing the test when
// err is not made of *Error or none mentions want.
func findProblem(t *testing.T, err error, want string) *Error {
	t.Helper()
	var list Errors
	var one *Error
	switch {
	case errors.As(err, &list):
	case errors.As(err, &one):
		list = Errors{one}
	default:
		t.Fatalf("err = %v, want *Error or Errors", err)
	}
	for _, e := range list {
		if strings.Contains(e.Msg, want) {
			return e
		}
	}
	t.Fatalf("no problem mentions %q in:\n%v", want, err)
	return nil
}

const base = "api:\n  base_url: https://g.example\n"

func TestParseConfigErrors(t *testing.T) {
	tests := []struct {
		name, text string
		line       int
		want       string
	}{
		{"NotYAML", "api: [\n", 1, "not valid YAML"},
		{"UnclosedQuoteOnLine1", "schedule: \"0 6 2 * *\n" + base + "domains:\n" + strings.Repeat("  - a.com\n", 12), 1, "not closed"},
		{"UnclosedBracketOnLine3", base + "domains: [a.com,\n  b.com\n\nwarehouse:\n  duckdb: x\n", 3, "not valid YAML"},
		{"BadIndentOnLine3", "api:\n  base_url: https://g.example\n rate_limit: 3\ndomains: [a.com]\n", 3, "not valid YAML"},
		{"NotificationKinds", base + "notify:\n  on: [complete, sucess]\ndomains: [a.com]\n", 4, `notify.on: "sucess" is not an outcome to notify on`},
		{"NotificationKindsNotList", base + "notify:\n  on: complete\ndomains: [a.com]\n", 4, "notify.on: must be a list"},
		{"NotMapping", "- a\n", 0, "expected a mapping"},
		{"UnknownTopKey", "domain: [a.com]\n", 1, `unknown key "domain" at the top level`},
		{"TypoUnderAPI", base + "  rate_limt: 3\ndomains: [a.com]\n", 3, `unknown key "rate_limt" under api`},
		{"SecretKey", base + "  api_key: sk-123\ndomains: [a.com]\n", 3, "ATLAS_API_KEY"},
		{"MarketplaceSecret", "api:\n  marketplace_key: mk\ndomains: [a.com]\n", 2, "ATLAS_MARKETPLACE_KEY"},
		{"RepeatedKey", base + "  rate_limit: 3\n  rate_limit: 4\ndomains: [a.com]\n", 4, `"rate_limit" repeats the one on line 3`},
		{"BadSchedule", "schedule: \"every month\"\n" + base + "domains: [a.com]\n", 1, "5-field cron"},
		{"SixFieldSchedule", "schedule: \"0 0 6 2 * *\"\n" + base + "domains: [a.com]\n", 1, "it has 6 fields"},
		{"DayOfMonth32", "schedule: \"0 6 32 * *\"\n" + base + "domains: [a.com]\n", 1, "32 is not a valid day of month (1-31)"},
		{"Hour24", "schedule: \"0 24 2 * *\"\n" + base + "domains: [a.com]\n", 1, "24 is not a valid hour (0-23)"},
		{"MonthName", "schedule: \"0 6 2 FOO *\"\n" + base + "domains: [a.com]\n", 1, `"FOO" is not a valid month (1-12 or JAN-DEC)`},
		{"BackwardsRange", "schedule: \"0 6 9-2 * *\"\n" + base + "domains: [a.com]\n", 1, "runs backwards"},
		{"ZeroStep", "schedule: \"*/0 6 2 * *\"\n" + base + "domains: [a.com]\n", 1, `step "0"`},
		{"NoBaseURL", "domains: [a.com]\n", 0, "ATLAS_BASE_URL"},
		{"BaseURLWithCredentials", "api:\n  base_url: https://u:p@g.example\ndomains: [a.com]\n", 2, "must not carry credentials"},
		{"BaseURLNotHTTP", "api:\n  base_url: ftp://g.example\ndomains: [a.com]\n", 2, "not an http(s) URL"},
		{"BadMode", base + "  mode: proxy\ndomains: [a.com]\n", 3, `"proxy" is not a mode`},
		{"MarketplaceNoHost", base + "  mode: marketplace\ndomains: [a.com]\n", 1, "marketplace_host"},
		{"NegativeRate", base + "  rate_limit: -1\ndomains: [a.com]\n", 3, "rate_limit"},
		{"ExplicitZeroRate", base + "  rate_limit: 0\ndomains: [a.com]\n", 3, "api.rate_limit: 0 is out of range: use 0.05 to 10000 requests per second"},
		{"TinyRate", base + "  rate_limit: 0.0001\ndomains: [a.com]\n", 3, "api.rate_limit: 0.0001 is out of range: use 0.05 to 10000"},
		{"WrongType", base + "  rate_limit: fast\ndomains: [a.com]\n", 3, "api.rate_limit: `fast` is not a number"},
		{"WrongTypeInt", base + "  min_credits: 1.5\ndomains: [a.com]\n", 3, "api.min_credits: `1.5` is not a whole number"},
		{"WrongTypeBool", base + "  allow_insecure_http: maybe\ndomains: [a.com]\n", 3, "api.allow_insecure_http: `maybe` is not true or false"},
		{"MappingForString", base + "  mode: {a: b}\ndomains: [a.com]\n", 3, "api.mode: a mapping is not a string"},
		{"BadDuration", base + "  timeout: soon\ndomains: [a.com]\n", 3, "api.timeout: `soon` is not a duration"},
		{"ZeroTimeout", base + "  timeout: 0s\ndomains: [a.com]\n", 3, "api.timeout: 0s is out of range: use 100ms to 1h0m0s"},
		{"YearsTimeout", base + "  timeout: 100000h\ndomains: [a.com]\n", 3, "api.timeout: 100000h0m0s is out of range: use 100ms to 1h0m0s"},
		{"NegativeWaste", base + "  max_wasted_credits: -1\ndomains: [a.com]\n", 3, "api.max_wasted_credits: must be 0"},
		{"ZeroRateLimitWait", base + "  max_rate_limit_wait: 0s\ndomains: [a.com]\n", 3, "api.max_rate_limit_wait: 0s is out of range"},
		{"YearsRateLimitWait", base + "  max_rate_limit_wait: 100000h\ndomains: [a.com]\n", 3, "api.max_rate_limit_wait: 100000h0m0s is out of range: use more than 0 and at most 24h0m0s"},
		{"ShortRetry", "retry_every: 30s\n" + base + "domains: [a.com]\n", 1, "retry_every: 30s is out of range: use 1m0s to 744h0m0s"},
		{"YearsRetry", "retry_every: 100000h\n" + base + "domains: [a.com]\n", 1, "retry_every: 100000h0m0s is out of range"},
		{"YearsLease", base + "publish:\n  url: s3://bucket/x\n  lease_ttl: 100000h\ndomains: [a.com]\n", 5, "publish.lease_ttl: 100000h0m0s is out of range: use 2s to 24h0m0s"},
		{"ShortLease", base + "publish:\n  url: s3://bucket/x\n  lease_ttl: 1s\ndomains: [a.com]\n", 5, "publish.lease_ttl: 1s is out of range"},
		{"LongGrace", "health_grace: 700h\n" + base + "domains: [a.com]\n", 1, "health_grace: 700h0m0s is out of range"},
		{"NegativeGrace", "health_grace: -1h\n" + base + "domains: [a.com]\n", 1, "health_grace: -1h0m0s is out of range"},
		{"MemoryLimitSyntax", base + "warehouse:\n  memory_limit: lots\ndomains: [a.com]\n", 4, `warehouse.memory_limit: "lots" is not a DuckDB size`},
		{"MemoryLimitTiny", base + "warehouse:\n  memory_limit: 1MB\ndomains: [a.com]\n", 4, "below the 64MiB"},
		{"WebhookNotHTTP", base + "notify:\n  webhook_url: hooks.slack.com/services/T0/B0/secret\ndomains: [a.com]\n", 4, "notify.webhook_url: is not an http(s) URL"},
		{"PublishNotS3", base + "publish:\n  url: https://bucket/x\ndomains: [a.com]\n", 4, "is not an s3://bucket/prefix URL"},
		{"PublishBadBucket", base + "publish:\n  url: s3://Bad_Bucket/x\ndomains: [a.com]\n", 4, `bucket "Bad_Bucket" is not a valid S3 bucket name`},
		{"PublishEndpoint", base + "publish:\n  url: s3://bucket/x\n  endpoint: minio:9000\ndomains: [a.com]\n", 5, "publish.endpoint"},
		{"PublishWithoutURL", base + "publish:\n  region: eu-west-1\ndomains: [a.com]\n", 3, "publish.url: not set"},
		{"DomainsNotList", base + "domains: example.com\n", 3, "domains: must be a list"},
		{"DomainMapping", base + "domains:\n  - a.com\n  - {b: c}\n", 5, "domains: this item is a mapping"},
		{"EmptyWatchlist", base + "domains: []\n", 3, "watchlist is empty"},
		{"SectionNotMapping", "api: 3\ndomains: [a.com]\n", 1, "api must be a mapping"},
		{"TabIndent", "api:\n  base_url: https://g.example\n\trate_limit: 3\ndomains: [a.com]\n", 3, "indented with a tab; YAML indentation must use spaces"},
		{"NotUTF8", base + "domains:\n  - a.com\n  - b\xffc.com\n", 5, "not valid UTF-8 (byte 0xff)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("domains.yaml", []byte(tc.text), env())
			e := findProblem(t, err, tc.want)
			if e.Line != tc.line {
				t.Errorf("line = %d, want %d (%v)", e.Line, tc.line, err)
			}
			if e.Path != "domains.yaml" {
				t.Errorf("path = %q", e.Path)
			}
		})
	}
}

// TestParseConfigReportsEveryProblem: one pass reports every problem, each with its line, in
// line order, and the message counts them.
func TestParseConfigReportsEveryProblem(t *testing.T) {
	text := "schedule: \"0 6 32 * *\"\n" + // 1
		"api:\n" + // 2
		"  base_url: https://g.example\n" + // 3
		"  rate_limit: fast\n" + // 4
		"  rate_limt: 3\n" + // 5
		"  timeout: -1s\n" + // 6
		"warehouse:\n" + // 7
		"  memory_limit: 12 parsecs\n" + // 8
		"domains: [a.com]\n" // 9
	_, err := Parse("domains.yaml", []byte(text), env())
	var list Errors
	if !errors.As(err, &list) {
		t.Fatalf("err = %v, want Errors", err)
	}
	var lines []int
	for _, e := range list {
		lines = append(lines, e.Line)
	}
	if got, want := fmt.Sprint(lines), "[1 4 5 6 8]"; got != want {
		t.Errorf("lines = %s, want %s:\n%v", got, want, err)
	}
	if !strings.HasPrefix(err.Error(), "5 problems in the config:") {
		t.Errorf("message = %q", err)
	}
}

// TestDomainLinesWithEmptyItem: an empty list item keeps its place, so every later entry keeps
// its own line, and the empty one is rejected on its line.
func TestDomainLinesWithEmptyItem(t *testing.T) {
	text := base + "domains:\n  - a.com\n  -\n  - b.com\n  - www.co.uk\n"
	cfg, err := Parse("domains.yaml", []byte(text), env())
	if err != nil {
		t.Fatal(err)
	}
	wl := NewWatchlist(cfg)
	if len(wl.Rejected) != 1 || wl.Rejected[0].Line != 5 {
		t.Fatalf("rejected = %+v, want the empty item on line 5", wl.Rejected)
	}
	if got, want := fmt.Sprint(wl.Domains), "[a.com b.com www.co.uk]"; got != want {
		t.Errorf("domains = %s, want %s", got, want)
	}
	for i, want := range []int{4, 5, 6, 7} {
		if got := cfg.DomainLine(i); got != want {
			t.Errorf("line of domains[%d] = %d, want %d", i, got, want)
		}
	}
}

func TestNewKeysDefaultsAndValues(t *testing.T) {
	cfg, err := Parse("domains.yaml", []byte(base+"domains: [a.com]\n"), env())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.RetryEvery.Duration != DefaultRetryEvery || cfg.HealthGrace.Duration != DefaultHealthGrace ||
		cfg.API.MaxWastedCredits != DefaultMaxWastedCredits || cfg.API.MaxRateLimitWait.Duration != DefaultMaxRateLimitWait ||
		cfg.Warehouse.MemoryLimit != DefaultMemoryLimit || cfg.API.AllowInsecureHTTP {
		t.Errorf("defaults not applied: %+v", cfg)
	}
	text := "retry_every: 1m\nhealth_grace: 24h\n" + base +
		"  max_wasted_credits: 0\n  max_rate_limit_wait: 2m\n  allow_insecure_http: true\n" +
		"warehouse:\n  memory_limit: 1.5 GiB\n" +
		"notify:\n  webhook_url: https://hooks.example/T0/B0/xyz\n" +
		"publish:\n  url: s3://my-bucket/sitewatch\n  endpoint: http://127.0.0.1:9000\n  path_style: true\n" +
		"domains: [a.com]\n"
	cfg, err = Parse("domains.yaml", []byte(text), env())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.API.MaxWastedCredits != 0 {
		t.Errorf("max_wasted_credits: 0 became %d; an explicit 0 means no waste allowed", cfg.API.MaxWastedCredits)
	}
	if got, want := cfg.Warehouse.MemoryLimitBytes(), int64(1.5*(1<<30)); got != want {
		t.Errorf("memory limit = %d bytes, want %d", got, want)
	}
	if !cfg.API.AllowInsecureHTTP || !cfg.Publish.PathStyle || cfg.RetryEvery.Duration != time.Minute {
		t.Errorf("values not read: %+v", cfg)
	}
}

func TestWebhookURLNeverEchoed(t *testing.T) {
	const secret = "T0CANARY/B0CANARY/xoxb-canary"
	for _, u := range []string{"hooks.example/" + secret, "ftp://hooks.example/" + secret, "https://user:" + secret + "@hooks.example/x"} {
		_, err := Parse("domains.yaml", []byte(base+"notify:\n  webhook_url: "+u+"\ndomains: [a.com]\n"), env())
		if err == nil || strings.Contains(err.Error(), "CANARY") || strings.Contains(err.Error(), "canary") {
			t.Errorf("webhook %q: err = %v; want an error without the URL's secret", u, err)
		}
		_, err = Parse("domains.yaml", []byte(base+"domains: [a.com]\n"), env(EnvWebhookURL, u))
		if err == nil || !strings.Contains(err.Error(), EnvWebhookURL) || strings.Contains(strings.ToLower(err.Error()), "canary") {
			t.Errorf("webhook %q from the environment: err = %v; want it blamed, without the secret", u, err)
		}
	}
}

func TestBadBaseURLFromEnvironmentBlamesIt(t *testing.T) {
	_, err := Parse("domains.yaml", []byte("api:\n  base_url: https://g.example\ndomains: [a.com]\n"), env(EnvBaseURL, "ftp://h"))
	var ce *Error
	if !errors.As(err, &ce) || ce.Line != 0 || !strings.Contains(err.Error(), EnvBaseURL) {
		t.Fatalf("err = %v: want a *Error naming %s, not a line of the file", err, EnvBaseURL)
	}
}

func TestConfigErrorNeverEchoesCredentials(t *testing.T) {
	_, err := Parse("domains.yaml", []byte("api:\n  base_url: https://user:canary-secret@g.example/?key=canary-secret\ndomains: [a.com]\n"), env())
	if err == nil || strings.Contains(err.Error(), "canary-secret") {
		t.Fatalf("err = %v: want an error without the secret", err)
	}
}

func TestNotifyOn(t *testing.T) {
	cfg, err := Parse("domains.yaml", []byte(base+"domains: [a.com]\n"), env())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Notify.On != nil {
		t.Errorf("notify.on left out: %v, want nil (notify.DefaultOn)", cfg.Notify.On)
	}
	cfg, err = Parse("domains.yaml", []byte(base+"notify:\n  on:\n    - complete\n    - up_to_date\ndomains: [a.com]\n"), env())
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cfg.Notify.On, ","); got != "complete,up_to_date" {
		t.Errorf("notify.on = %q, want complete,up_to_date", got)
	}
	cfg, err = Parse("domains.yaml", []byte(base+"notify:\n  on: []\ndomains: [a.com]\n"), env())
	if err != nil || cfg.Notify.On == nil || len(cfg.Notify.On) != 0 {
		t.Errorf("notify.on: [] gave %v, %v; want an empty list (post nothing)", cfg.Notify.On, err)
	}
}

func TestSkippedLine(t *testing.T) {
	cfg, err := Parse("domains.yaml", []byte(base+"domains:\n  - a.com\n  - github,com\n  - google..com\n  - 1.2.3.4\n  - co.uk\n"), env())
	if err != nil {
		t.Fatal(err)
	}
	got := NewWatchlist(cfg).SkippedLine()
	want := "4 watchlist entries skipped (not host names, never sent): line 5 `github,com`, line 6 `google..com`, line 7 `1.2.3.4`, … 1 more; `sitewatch validate` says why"
	if got != want {
		t.Errorf("SkippedLine() =\n%q, want\n%q", got, want)
	}
	cfg, _ = Parse("domains.yaml", []byte(base+"domains: [a.com]\n"), env())
	if got := NewWatchlist(cfg).SkippedLine(); got != "" {
		t.Errorf("nothing rejected: %q, want \"\"", got)
	}
}
