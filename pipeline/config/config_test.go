package config

import (
	"errors"
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

func TestParseConfigErrors(t *testing.T) {
	tests := []struct {
		name, text string
		line       int
		want       string
	}{
		{"NotYAML", "api: [\n", 0, "not valid YAML"},
		{"NotMapping", "- a\n", 0, "expected a mapping"},
		{"UnknownTopKey", "domain: [a.com]\n", 1, `unknown key "domain" at the top level`},
		{"TypoUnderAPI", "api:\n  base_url: https://g.example\n  rate_limt: 3\ndomains: [a.com]\n", 3, `unknown key "rate_limt" under api`},
		{"SecretKey", "api:\n  base_url: https://g.example\n  api_key: sk-123\ndomains: [a.com]\n", 3, "ATLAS_API_KEY"},
		{"MarketplaceSecret", "api:\n  marketplace_key: mk\ndomains: [a.com]\n", 2, "ATLAS_MARKETPLACE_KEY"},
		{"BadSchedule", "schedule: \"every month\"\napi: {base_url: https://g.example}\ndomains: [a.com]\n", 1, "5-field cron"},
		{"SixFieldSchedule", "schedule: \"0 0 6 2 * *\"\napi: {base_url: https://g.example}\ndomains: [a.com]\n", 1, "5-field cron"},
		{"NoBaseURL", "domains: [a.com]\n", 0, "ATLAS_BASE_URL"},
		{"BaseURLWithCredentials", "api:\n  base_url: https://u:p@g.example\ndomains: [a.com]\n", 2, "must not carry credentials"},
		{"BaseURLNotHTTP", "api:\n  base_url: ftp://g.example\ndomains: [a.com]\n", 2, "not an http(s) URL"},
		{"BadMode", "api:\n  base_url: https://g.example\n  mode: proxy\ndomains: [a.com]\n", 3, `"proxy" is not a mode`},
		{"MarketplaceNoHost", "api:\n  base_url: https://g.example\n  mode: marketplace\ndomains: [a.com]\n", 1, "marketplace_host"},
		{"NegativeRate", "api:\n  base_url: https://g.example\n  rate_limit: -1\ndomains: [a.com]\n", 3, "rate_limit"},
		{"WrongType", "api:\n  base_url: https://g.example\n  rate_limit: fast\ndomains: [a.com]\n", 3, "api.rate_limit: `fast` is not a number"},
		{"BadDuration", "api:\n  base_url: https://g.example\n  timeout: soon\ndomains: [a.com]\n", 3, `api.timeout: "soon" is not a duration`},
		{"DomainsNotList", "api:\n  base_url: https://g.example\ndomains: example.com\n", 3, "domains: "},
		{"EmptyWatchlist", "api:\n  base_url: https://g.example\ndomains: []\n", 3, "watchlist is empty"},
		{"SectionNotMapping", "api: 3\ndomains: [a.com]\n", 1, "api must be a mapping"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("domains.yaml", []byte(tc.text), env())
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want *Error", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %q, want it to mention %q", err, tc.want)
			}
			if tc.line != 0 && ce.Line != tc.line {
				t.Errorf("line = %d, want %d (%v)", ce.Line, tc.line, err)
			}
		})
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
