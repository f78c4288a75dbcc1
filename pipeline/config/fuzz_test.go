package config

import (
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzNormalizeDomain: NormalizeDomain never panics; an accepted entry comes out as a lower-case
// ASCII host name (letters, digits, hyphens, dots; two labels or more, none empty), never a bare
// public suffix, without a leading www. unless a public suffix would remain, and normalizing it
// again changes nothing.
// Every rejection wraps ErrNotHostName. Seeds: testdata/fuzz/FuzzNormalizeDomain.
func FuzzNormalizeDomain(f *testing.F) {
	for _, s := range []string{
		"example.com", "https://WWW.Example.com/pricing?x=1#y", "bücher.de", "www.com", "10.0.0.1",
		"[::1]", "<b>x</b>", "exa mple.com", "example..com", "http://user:pw@example.com:8080/", "example.com.",
		"xn--bcher-kva.de", "www.www.example.com", "www.co.uk", "github.io", "www.www.co.uk", "EXAMPLE.COM", "a.b.c.d.e.f", "ftp://example.com", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out, err := NormalizeDomain(in)
		if err != nil {
			if !errors.Is(err, ErrNotHostName) {
				t.Fatalf("NormalizeDomain(%q): error %v does not wrap ErrNotHostName", in, err)
			}
			if out != "" {
				t.Fatalf("NormalizeDomain(%q) = %q with an error", in, out)
			}
			return
		}
		for i := 0; i < len(out); i++ {
			c := out[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
				t.Fatalf("NormalizeDomain(%q) = %q: byte %q is not lower-case ASCII LDH", in, out, c)
			}
		}
		labels := strings.Split(out, ".")
		if len(labels) < 2 {
			t.Fatalf("NormalizeDomain(%q) = %q: fewer than two labels", in, out)
		}
		for _, l := range labels {
			if l == "" || len(l) > 63 || strings.HasPrefix(l, "-") || strings.HasSuffix(l, "-") {
				t.Fatalf("NormalizeDomain(%q) = %q: invalid label %q", in, out, l)
			}
		}
		if len(out) > 253 {
			t.Fatalf("NormalizeDomain(%q) = %q: longer than 253", in, out)
		}
		if labels[0] == "www" && len(labels) > 2 && !isPublicSuffix(strings.Join(labels[1:], ".")) {
			t.Fatalf("NormalizeDomain(%q) = %q: keeps a leading www. with a registrable domain after it", in, out)
		}
		if isPublicSuffix(out) {
			t.Fatalf("NormalizeDomain(%q) = %q: a bare public suffix", in, out)
		}
		again, err := NormalizeDomain(out)
		if err != nil || again != out {
			t.Fatalf("not idempotent: NormalizeDomain(%q) = %q, but NormalizeDomain(%q) = %q, %v", in, out, out, again, err)
		}
	})
}

// FuzzParseConfig: Parse never panics; every error is a *Error; an accepted config
// is usable (a known mode, a positive rate and time-out, a watchlist, absolute warehouse paths
// under the config's directory when relative). Seeds: testdata/fuzz/FuzzParseConfig.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(validConfig))
	f.Add([]byte("domains: [example.com]\n"))
	f.Add([]byte("api:\n  api_key: x\ndomains: [a.com]\n"))
	f.Add([]byte("api:\n  rate_limit: fast\ndomains: [a.com]\n"))
	f.Add([]byte("schedule: \"* * *\"\ndomains: [a.com]\n"))
	f.Add([]byte("api: [1, 2]\n"))
	f.Add([]byte("domains:\n  - {a: b}\n"))
	f.Add([]byte("&a [*a]"))
	f.Add([]byte("api:\n  timeout: -1s\ndomains: [a.com]\n"))
	getenv := func(k string) string {
		if k == EnvBaseURL {
			return "http://127.0.0.1:9"
		}
		return ""
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.FromSlash("/etc/sitewatch/domains.yaml")
		cfg, err := Parse(path, data, getenv)
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("error %T %v is not a *Error", err, err)
			}
			if ce.Path != path {
				t.Fatalf("error names %q, want the config path", ce.Path)
			}
			return
		}
		switch {
		case cfg.API.Mode != "direct" && cfg.API.Mode != "marketplace":
			t.Fatalf("accepted mode %q", cfg.API.Mode)
		case !(cfg.API.RateLimit > 0) || math.IsInf(cfg.API.RateLimit, 0):
			t.Fatalf("accepted rate_limit %v", cfg.API.RateLimit)
		case cfg.API.Timeout.Duration <= 0:
			t.Fatalf("accepted timeout %v", cfg.API.Timeout.Duration)
		case len(cfg.Domains) == 0:
			t.Fatalf("accepted an empty watchlist")
		case !filepath.IsAbs(cfg.Warehouse.DuckDB) || !filepath.IsAbs(cfg.Warehouse.Parquet):
			t.Fatalf("warehouse paths not absolute: %q, %q", cfg.Warehouse.DuckDB, cfg.Warehouse.Parquet)
		case cfg.API.MinCredits < 0 || cfg.API.MaxCreditsPerRun < 0:
			t.Fatalf("accepted negative credit limits")
		}
		// The watchlist of any accepted config normalizes without panicking.
		_ = NewWatchlist(cfg)
	})
}
